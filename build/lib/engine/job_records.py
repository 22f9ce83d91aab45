"""What a long job is, for whoever reads one: its status record, its progress step, its control, why it stopped.

Plain data and threading events, no torch: :mod:`engine.jobs` (the queue) makes and updates them.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

ACTIVE = ("queued", "running", "paused")
FINISHED = ("done", "stopped", "failed")
CANCELLED = "cancelled"
REPLACED = "replaced by a newer request"
GONE = "the page was closed"
SILENT = "the page stopped asking for updates (closed?)"


class JobStopped(Exception):
    """Raised at a yield point of a job that must stop (cancelled, replaced, over its budget, session gone)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Control:
    """Pause, resume and stop a job from any thread: ``_go`` is set while it may run, ``_stop`` once stopped
    (stopping also sets ``_go``, so a paused job wakes up to end)."""

    def __init__(self) -> None:
        self._go = threading.Event()
        self._go.set()
        self._stop = threading.Event()

    def pause(self) -> None:
        """Ask the job to wait before its next step (no effect once stopped)."""
        if not self._stop.is_set():
            self._go.clear()

    def resume(self) -> None:
        self._go.set()

    def stop(self) -> None:
        """Ask the job to end after its current step."""
        self._stop.set()
        self._go.set()

    @property
    def is_paused(self) -> bool:
        return not self._go.is_set() and not self._stop.is_set()

    @property
    def is_stopped(self) -> bool:
        return self._stop.is_set()

    def wait_if_paused(self, timeout: float | None = None) -> bool:
        """Block while paused, at most ``timeout`` seconds (None: until resumed or stopped); True when the job
        may take a step now (neither paused nor stopped)."""
        self._go.wait(timeout)
        return self._go.is_set() and not self._stop.is_set()


@dataclass(frozen=True)
class Step:
    """A plain progress update: ``done`` of ``total`` units, and a line for people."""

    done: float
    total: float
    text: str = ""

    @property
    def fraction(self) -> float:
        return min(1.0, max(0.0, self.done / self.total)) if self.total > 0 else 0.0


@dataclass(frozen=True)
class JobStatus:
    """A consistent copy of one job's state (plain data; the updates and result are shared, not copied).

    ``status``: queued | running | paused | done | stopped | failed; ``position``: 1 = next to start (0 when not
    queued); ``wait_s``: while queued, the expected seconds until it starts; ``estimate_s``: how long it is
    expected to run; ``elapsed_s``: seconds it has held its slot; ``updates``: what it reported (the latest
    ``max_updates``); ``reason``: why it was stopped.
    """

    job_id: int
    kind: str
    key: Hashable
    status: str
    position: int
    wait_s: float | None
    estimate_s: float
    elapsed_s: float
    updates: tuple[Any, ...]
    result: Any = None
    error: BaseException | None = None
    reason: str = ""

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def latest(self) -> Any:
        """The last update, or None."""
        return self.updates[-1] if self.updates else None

    @property
    def fraction(self) -> float:
        """How far it has got: the latest update's ``fraction`` where it has one, else its time against its
        estimate (never shown as finished before it is)."""
        own = getattr(self.latest, "fraction", None)
        if isinstance(own, (int, float)) and math.isfinite(own):
            return min(1.0, max(0.0, float(own)))
        if self.status == "done":
            return 1.0
        return min(0.95, self.elapsed_s / self.estimate_s) if self.estimate_s > 0 else 0.0

    @property
    def text(self) -> str:
        """The latest update's ``text`` ("" when it has none)."""
        return str(getattr(self.latest, "text", "") or "")
