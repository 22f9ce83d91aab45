"""Threads a test starts to play several users at once (wait for what they do with ``tests.job_helpers.wait_until``)."""

from __future__ import annotations

import threading
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
