"""Threads a test starts to play several users at once (wait for what they do with ``tests.job_helpers.wait_until``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def call_in_thread(fn: Callable[[], Any], out: dict, name: str) -> threading.Thread:
    """Start a daemon thread that stores ``fn()`` (or the exception it raised, a stopped page run's too) in
    ``out[name]``."""

    def target() -> None:
        try:
            out[name] = fn()
        except BaseException as err:  # noqa: BLE001 — what the caller saw, for the test to assert on
            out[name] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def all_at_once(fn: Callable[[], Any], n: int, timeout_s: float) -> list:
    """Call ``fn`` in ``n`` threads released together (a barrier), wait up to ``timeout_s`` for each, and return
    what the calls returned, in the order they finished (a call that raised returns nothing)."""
    start, out = threading.Barrier(n), []

    def target() -> None:
        start.wait()
        out.append(fn())

    threads = [threading.Thread(target=target) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)
    return out
