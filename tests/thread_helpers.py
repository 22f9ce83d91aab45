"""Threads a test starts to play several users at once, and a bounded wait for what they do."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


def call_in_thread(fn: Callable[[], Any], out: dict, name: str) -> threading.Thread:
    """Start a daemon thread that stores ``fn()`` (or the exception it raised) in ``out[name]``."""

    def target() -> None:
        try:
            out[name] = fn()
        except Exception as err:  # noqa: BLE001 — what the caller saw, for the test to assert on
            out[name] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def wait_until(predicate: Callable[[], Any], what: str, timeout_s: float = 10.0) -> None:
    """Poll ``predicate`` every 5 ms; fail with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)
