"""The server's limits on long work: how many jobs run at once, seconds per job, a worker's priority, waits.

``AP_LONG_JOBS`` (its old name ``AP_TRAIN_MAX_JOBS`` still read) sets the jobs running at once for every kind
(Train live included); ``AP_TRAIN_MAX_SECONDS`` the seconds one job may take. No Streamlit, no torch at import.
"""

from __future__ import annotations

import heapq
import logging
import math
import os
import sys
import threading
from collections.abc import Sequence

log = logging.getLogger(__name__)

LOW_PRIORITY_NICE = 10  # what background threads add to their nice value (Linux: per thread)
DEFAULT_MAX_SECONDS = 300  # seconds one job may run (AP_TRAIN_MAX_SECONDS overrides)


def cores() -> int:
    """CPU cores this process may run on (its affinity where the OS says, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_workers() -> int:
    """Long jobs that may run at once: ``AP_LONG_JOBS`` (else its old name ``AP_TRAIN_MAX_JOBS``) if it is a whole
    number > 0, else half the cores, at least 1 (a 2-core server runs one, the other core stays free for pages)."""
    for name in ("AP_LONG_JOBS", "AP_TRAIN_MAX_JOBS"):
        env = os.environ.get(name, "").strip()
        if env.isdigit() and int(env) > 0:
            return int(env)
        if env:
            log.warning("%s=%r is not a whole number > 0; ignored", name, env)
    return max(1, cores() // 2)


def default_max_seconds() -> float:
    """Seconds one job may take: ``AP_TRAIN_MAX_SECONDS`` if set (a number > 0), else 300."""
    env = os.environ.get("AP_TRAIN_MAX_SECONDS", "")
    try:
        value = float(env) if env else DEFAULT_MAX_SECONDS
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        log.warning("AP_TRAIN_MAX_SECONDS=%r is not a number of seconds > 0; using %d", env, DEFAULT_MAX_SECONDS)
        return DEFAULT_MAX_SECONDS
    return value


def expected_start(running_left: Sequence[float], ahead: Sequence[float], slots: int) -> float:
    """Seconds until a queued job starts, if every estimate holds.

    ``running_left``: seconds each running job has left; ``ahead``: seconds of each job ahead in the queue, in
    order; ``slots``: jobs that may run at once. Each busy slot frees up when its job ends, the jobs ahead take the
    earliest free slot in turn, the job starts at the next one.

    Example:
        >>> expected_start([120.0], [60.0], slots=1)  # one running (2 min left), one queued ahead
        180.0
    """
    free = sorted(max(0.0, t) for t in running_left)  # when each busy slot frees up
    free += [0.0] * max(0, slots - len(free))  # idle slots
    heapq.heapify(free)
    for seconds in ahead:
        heapq.heappush(free, heapq.heappop(free) + max(0.0, seconds))
    return free[0]


def about(seconds: float) -> str:
    """A duration for people: ``"40 s"``, ``"5 min"``, ``"10.4 h"``."""
    if not math.isfinite(seconds):
        return "forever"
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def lower_priority(nice: int = LOW_PRIORITY_NICE) -> bool:
    """Raise the calling thread's nice value to ``nice`` (Linux keeps it per thread). A thread already nicer is
    left alone. True when the thread now runs at ``nice`` or lower priority; False where the OS does not allow it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        tid = threading.get_native_id()
        if os.getpriority(os.PRIO_PROCESS, tid) < nice:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        return True
    except (AttributeError, OSError):
        log.debug("could not lower the priority of thread %s", threading.current_thread().name, exc_info=True)
        return False


def background_thread(threads: int = 1, nice: int = LOW_PRIORITY_NICE) -> None:
    """Make the calling thread a background worker: lower CPU priority, torch at ``threads`` intra-op threads
    (torch keeps that per thread, so the page threads are not changed)."""
    lower_priority(nice)
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
