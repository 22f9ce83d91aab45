"""The server process's shared caches, bounded in bytes; a hit is the cached object itself (read-only arrays).

:data:`TRACES` (``AP_TRACE_CACHE_MB``, default 512), :data:`MAPS` (what pages draw from a trace), :data:`FIGURES`
(figures ready to send, ``app.figures``) and :data:`TABLES` (``pyarrow.Table``). Each key starts with what decides
the value (``traces.request_key``). Their sizes are a metric of the server (``playground_cache_bytes``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from engine.cache import CACHES, TraceCache
from engine.memory import release_memory_soon

T = TypeVar("T")
log = logging.getLogger(__name__)


def _cache_budget_mb() -> int:
    """``AP_TRACE_CACHE_MB`` (the server admin's setting), default 512; unreadable values fall back to it."""
    try:
        return max(0, int(os.environ.get("AP_TRACE_CACHE_MB", "512")))
    except ValueError:
        log.warning("AP_TRACE_CACHE_MB=%r is not a whole number of MB; using 512", os.environ.get("AP_TRACE_CACHE_MB"))
        return 512


def _text_bytes(obj: Any) -> int:
    """About the bytes a figure's traces take in JSON: their strings plus 16 per other value."""
    if isinstance(obj, str):
        return len(obj)
    if isinstance(obj, dict):
        return sum(16 + _text_bytes(value) for value in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_text_bytes(value) for value in obj)
    return 16


def _figure_bytes(fig: Any) -> int:
    """A picture (a ``data:`` URL) counts its length, a Plotly figure its traces' JSON."""
    return len(fig) + 256 if isinstance(fig, str) else _text_bytes(fig.to_dict().get("data")) + 4096


TRACES = TraceCache(max_bytes=_cache_budget_mb() * 2**20, on_large=release_memory_soon, name="traces")
MAPS = TraceCache(max_bytes=64 * 2**20, max_entries=2048, on_large=release_memory_soon, name="maps")
FIGURES = TraceCache(max_bytes=64 * 2**20, max_entries=1024, sizeof=_figure_bytes, name="figures")
TABLES = TraceCache(max_bytes=32 * 2**20, max_entries=2048, sizeof=lambda table: table.nbytes + 1024)


def has_map(key: tuple) -> bool:
    return key in MAPS


def shared_map(key: tuple, build: Callable[[], T]) -> T:
    """What a page draws from a trace, built once per process and shared by every session without a copy."""
    return MAPS.get(key, build)


def shared_figure(key: tuple, build: Callable[[], T]) -> T:
    return FIGURES.get(key, build)


def shared_table(key: tuple, build: Callable[[], T]) -> T:
    return TABLES.get(key, build)


class CacheSizes:
    """The named caches' sizes as a metric of the server (``playground_cache_bytes{cache="traces"}`` …, live)."""

    stats_families = ("playground_cache_bytes",)

    def get_stats(self, family_names=None) -> dict[str, list]:
        from streamlit.runtime.stats import GaugeStat

        help_ = "Bytes held by the app's shared cache (traces, maps, figures), bounded by its budget"
        family = "playground_cache_bytes"
        return {family: [GaugeStat(family, c.bytes, {"cache": name}, "bytes", help_) for name, c in CACHES.items()]}


_published: dict[str, Any] = {}
_published_lock = threading.Lock()


def publish_cache_sizes() -> bool:
    """Register :class:`CacheSizes` with the running Streamlit server (once; False without a server)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return False
    runtime = Runtime.instance()
    with _published_lock:
        if _published.get("runtime") is not runtime:
            runtime.stats_mgr.register_provider(CacheSizes())
            _published["runtime"] = runtime
    return True
