"""Run a coroutine from a test, whatever ran before it in the session.

Once any Playwright (sync API) test has run, the test thread has a running event loop and ``asyncio.run``
refuses to start another there; :func:`run_async` runs the coroutine's own loop in a thread of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_async(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """``asyncio.run(coro)`` in a thread of its own; its result, or its exception re-raised here."""
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="run-async") as pool:
        return pool.submit(asyncio.run, coro).result(timeout=timeout)
