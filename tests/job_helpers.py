"""What the live-training tests share (tests/unit/test_jobs.py, test_job_budget.py, tests/reliability/...).

``from tests.job_helpers import TINY, LONG, wait_until``; the ``baseline_threads`` fixture is in
tests/conftest.py.
"""

from __future__ import annotations

import time

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
