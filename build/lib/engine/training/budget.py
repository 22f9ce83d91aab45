"""Time budget of live-training jobs on a shared server: estimate, refusal, queue wait, hard stop.

The estimate is the server's own, the one the Train page shows: seconds per step measured on a
throwaway model with the job's settings (:func:`~engine.training.job_settings.time_steps`: the thread's CPU
time, which other threads' load does not inflate; kept ``ttl`` seconds per model shape by :class:`StepTimer`),
times the steps; the job's own first steps then check it (:mod:`engine.training.jobs`)::

    estimate  = per_step · steps             a job is refused when estimate > max_seconds (AP_TRAIN_MAX_SECONDS)
    max_steps = ⌊max_seconds / per_step⌋     rounded down to two significant digits: it fits, by the same estimate
    deadline  = max(OVERRUN_FACTOR · estimate, estimate + OVERRUN_MIN_S)

A running job that has held its slot (pauses included: a paused job keeps its slot) past its deadline
is stopped by the server, so a wrong estimate (the machine got busier) cannot keep a slot for hours.

A queued job's wait (:func:`expected_start`, the long-work queue's):
each slot frees up when its running job ends (the steps it has left × per_step, never past its
deadline); the jobs ahead in the queue take the earliest free slot in turn; the job starts at the
next one.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.job_limits import DEFAULT_MAX_SECONDS, about
from engine.training.job_settings import JobSettings, time_steps

#: a running job is stopped once it has held its slot this many times its estimate …
OVERRUN_FACTOR = 2.0
#: … but never sooner than this many seconds past its estimate (a short job on a busy machine keeps going)
OVERRUN_MIN_S = 60.0
ESTIMATE_TTL_S = 600.0  # a measured step time is reused this long (the server's load changes)


def _two_digits_down(n: int) -> int:
    """``n`` rounded down to two significant digits (8,765 → 8,700; 43 → 43)."""
    if n < 100:
        return n
    unit = 10 ** (len(str(n)) - 2)
    return n // unit * unit


@dataclass(frozen=True)
class TimeBudget:
    """The server's limits on a job's time (plain data; the job manager holds one).

    Attributes:
        max_seconds: a job estimated to take longer is refused.
        overrun: a running job is stopped after holding its slot ``overrun`` × its estimate …
        overrun_min_s: … and not before its estimate + this many seconds.
    """

    max_seconds: float = DEFAULT_MAX_SECONDS
    overrun: float = OVERRUN_FACTOR
    overrun_min_s: float = OVERRUN_MIN_S

    def deadline(self, estimate_s: float) -> float:
        """Seconds a job estimated at ``estimate_s`` may hold a slot before the server stops it."""
        return max(self.overrun * estimate_s, estimate_s + self.overrun_min_s)


@dataclass(frozen=True)
class Estimate:
    """How long a job is expected to take, against the server's budget.

    Attributes:
        per_step: seconds per training step, measured on this server (finite, > 0).
        steps: the job's training steps.
        budget: the server's limits.
    """

    per_step: float
    steps: int
    budget: TimeBudget = field(default_factory=TimeBudget)

    def __post_init__(self) -> None:
        if not (isinstance(self.per_step, (int, float)) and math.isfinite(self.per_step) and self.per_step > 0):
            raise ValueError(f"seconds per step must be a finite number > 0, got {self.per_step!r}")

    @property
    def seconds(self) -> float:
        """Estimated seconds for the whole job."""
        return self.per_step * self.steps

    @property
    def fits(self) -> bool:
        return self.seconds <= self.budget.max_seconds

    @property
    def deadline(self) -> float:
        """Seconds the job may hold a slot before the server stops it."""
        return self.budget.deadline(self.seconds)

    @property
    def max_steps(self) -> int:
        """The most steps (two significant digits) that fit the budget at this step time; 0 if none does."""
        n = math.floor(self.budget.max_seconds / self.per_step)
        while n > 0 and self.per_step * n > self.budget.max_seconds:  # float rounding
            n -= 1
        return _two_digits_down(n)

    def refusal(self) -> str:
        """Why a job over budget is refused, and what would fit."""
        head = (
            f"Cannot train with these settings: they would take about {about(self.seconds)} on this server "
            f"({self.per_step * 1000:,.0f} ms per step × {self.steps:,} steps); the limit per job is "
            f"{about(self.budget.max_seconds)}"
        )
        if self.max_steps >= 1:
            return (
                head + f": try at most {self.max_steps:,} steps, or a smaller model (fewer layers, a smaller "
                "d_model) or batch."
            )
        return head + ": even one step takes longer; use a smaller model (fewer layers, a smaller d_model) or batch."

    def overrun_notice(self, held_s: float) -> str:
        """Why the server stopped a job that held its slot ``held_s`` seconds, past its deadline."""
        return (
            f"stopped by the server: it held a training slot for {about(held_s)}, far past its estimate of "
            f"{about(self.seconds)} (the server is busier than when it was timed; the limit is "
            f"{self.budget.overrun:g}× the estimate, at least {about(self.budget.overrun_min_s)} more); "
            "what it learned so far is kept"
        )


def _shape(settings: JobSettings) -> tuple:
    """What the time of one step depends on (not steps, seed, lr or the snapshot cadence)."""
    s = settings
    return (s.task, s.n_layers, s.n_heads, s.d_model, s.pos_encoding, s.causal, s.batch_size, s.device)


class StepTimer:
    """Seconds per training step for some settings: measured with ``threads`` torch threads, reused ``ttl`` s.

    Thread-safe; two callers timing the same new shape at once may both measure (the later one is kept).

    Args:
        threads: torch intra-op threads while timing (the jobs' own setting), restored afterwards.
        ttl: seconds a measurement is reused.
        measure: settings → seconds per step (default :func:`time_steps`).
        clock: monotonic seconds (tests pass a fake one).
    """

    def __init__(
        self,
        threads: int = 1,
        ttl: float = ESTIMATE_TTL_S,
        measure: Callable[[JobSettings], float] = time_steps,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = 64,
    ) -> None:
        self.threads, self.ttl, self.measure, self.clock = threads, ttl, measure, clock
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._cache: dict[tuple, tuple[float, float]] = {}  # shape → (measured at, seconds per step)

    def __call__(self, settings: JobSettings) -> float:
        key, now = _shape(settings), self.clock()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and now - hit[0] <= self.ttl:
                return hit[1]
        per_step = self._timed(settings)
        with self._lock:
            if len(self._cache) >= self.max_entries:
                self._cache.pop(min(self._cache, key=lambda k: self._cache[k][0]))  # the oldest
            self._cache[key] = (self.clock(), per_step)
        return per_step

    def _timed(self, settings: JobSettings) -> float:
        import torch

        before = torch.get_num_threads()
        if before != self.threads:
            torch.set_num_threads(self.threads)
        try:
            return self.measure(settings)
        finally:
            if before != self.threads:
                torch.set_num_threads(before)


__all__ = ["ESTIMATE_TTL_S", "Estimate", "OVERRUN_FACTOR", "OVERRUN_MIN_S", "StepTimer", "TimeBudget"]
