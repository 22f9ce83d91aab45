"""Handing freed memory back to the OS, so a server's memory falls back after big work.

glibc keeps what a process frees in its heaps (one per thread that allocated, up to 8 per core); a long
input's trace, its overview and its pages allocate and free hundreds of MB, and without a trim the
process keeps them, and a server's memory only grows through a lecture.

- :func:`release_memory`: trim now (the long-work lane calls it after every job).
- :func:`release_memory_soon`: trim once, :data:`TRIM_DELAY_S` after the first call of a burst (later
  calls in that window add nothing): the shared caches ask for it when they store a large value, and
  the lane after a job, so the page runs that draw the job's result are trimmed too. At most one trim
  per window, off the callers' threads.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time
from typing import Any

TRIM_DELAY_S = 3.0
TRIM_THREAD = "memory-trim"  # the name of the short-lived thread a pending trim runs in
LARGE_BYTES = 16 * 2**20  # a value this large had temporaries of its size or more: worth a trim

_lock = threading.Lock()
_due: list[float | None] = [None]  # when the pending trim runs (None: none pending)
trims = [0]  # trims done by release_memory_soon (tests read it)


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    return ctypes.CDLL("libc.so.6")


def release_memory() -> bool:
    """Hand the heaps' free pages back to the OS (glibc's ``malloc_trim``). False where there is no glibc."""
    try:
        return bool(_libc().malloc_trim(0))
    except (OSError, AttributeError):
        return False


def release_memory_soon(delay_s: float = TRIM_DELAY_S) -> None:
    """Trim ``delay_s`` from now, in a short-lived thread, unless a trim is already pending (then that one
    covers this call too)."""
    with _lock:
        if _due[0] is not None:
            return
        _due[0] = time.monotonic() + delay_s
    threading.Thread(target=_trim_when_due, name=TRIM_THREAD, daemon=True).start()


def _trim_when_due() -> None:
    with _lock:
        due = _due[0]
    time.sleep(max(0.0, (due or 0.0) - time.monotonic()))
    with _lock:
        _due[0] = None  # calls from here on schedule a new trim: what they free comes after this one
    release_memory()
    trims[0] += 1
