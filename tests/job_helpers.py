"""What the live-training tests share (tests/unit/test_jobs.py, test_job_budget.py, tests/reliability/...).

``from tests.job_helpers import TINY, LONG, FakeClock, parked, reaper_rounds, wait_until``; the ``baseline_threads`` fixture is in
tests/conftest.py.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter

#: the smallest job settings: a 1-layer, 2-head model on the reverse task
TINY = dict(task="reverse", n_layers=1, n_heads=2, d_model=16, batch_size=8)
#: the same, long enough to be paused, stopped or reaped while it runs
LONG = dict(TINY, steps=20_000, snapshot_every=1)


def wait_until(condition, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``condition`` every 20 ms; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class FakeClock:
    """Monotonic seconds that only move when the test says so; counts who read it (per thread name)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.reads: Counter[str] = Counter()

    def __call__(self) -> float:
        self.reads[threading.current_thread().name] += 1
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def reaper_rounds(clock: FakeClock, rounds: int = 2, timeout: float = 30.0) -> None:
    """Wait until the long-work queue's reaper has looked at its jobs ``rounds`` more times (it reads ``clock``
    once per round), so what the clock says now has been seen."""
    start = clock.reads["long-work-reaper"]
    wait_until(lambda: clock.reads["long-work-reaper"] >= start + rounds, timeout, what=f"{rounds} reaper rounds")


def parked(job) -> bool:
    """True while the job's training thread waits in its pause (``TrainingControl.wait_if_paused``)."""
    frame = sys._current_frames().get(job.thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "wait_if_paused":
            return True
        frame = frame.f_back
    return False
