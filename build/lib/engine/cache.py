"""A per-process cache of traces, bounded in bytes, whose hits return the cached object itself.

Streamlit's ``st.cache_data`` pickles a result on every hit (a copy per rerun: 15–113 MB per trace
at long inputs), and counts entries, not bytes. This cache instead:

- returns the **same object** on a hit (no copy); its numpy arrays are made read-only on the way in,
  so a page that tried to modify a shared trace fails loudly instead of corrupting other sessions;
- evicts least-recently-used entries once the arrays it holds pass ``max_bytes``;
- computes a key **once** when several threads ask for it at the same time (a class typing the same
  sentence): the others wait for the first one's result (or its exception).

It has no Streamlit import. A cache made with a ``name`` is listed in :data:`CACHES` (the app's traces, maps and
figures: a server reports their sizes as a metric).

Example:
    >>> cache = TraceCache(max_bytes=512 * 2**20)
    >>> tr = cache.get(("minilm", "The cat sat.", None, 128), lambda: engine.trace(model, "The cat sat."))
    >>> cache.get(("minilm", "The cat sat.", None, 128), lambda: ...) is tr
    True
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


_LEAVES = (str, bytes, int, float, bool, type(None))


def _arrays(obj: Any, seen: set[int]) -> list[np.ndarray]:
    """Every numpy array reachable through dataclass fields, tuples, lists and dicts (each once)."""
    if isinstance(obj, _LEAVES):  # token strings, ids, scales: nothing to walk (most of a trace's items)
        return []
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        items = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    elif isinstance(obj, (tuple, list)):
        items = list(obj)
    elif isinstance(obj, dict):
        items = list(obj.values())
    else:
        return []
    out: list[np.ndarray] = []
    for item in items:
        out.extend(_arrays(item, seen))
    return out


def nbytes(obj: Any) -> int:
    """Bytes held by the numpy arrays of a trace (or any dataclass / container of arrays)."""
    return sum(a.nbytes for a in _arrays(obj, set()))


def freeze_arrays(obj: Any) -> None:
    """Make every reachable numpy array read-only (shared between sessions: nobody may write)."""
    for arr in _arrays(obj, set()):
        arr.flags.writeable = False


CACHES: dict[str, TraceCache] = {}  # the named caches of this process (see TraceCache's ``name``)


class _Pending:
    """A computation in flight: waiters block on ``done`` and then read ``value`` or ``error``."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class TraceCache:
    """LRU cache of traces bounded by the bytes of their arrays; thread-safe; hits are not copied.

    Args:
        max_bytes: eviction starts when the cached arrays pass this many bytes. An entry larger than
            the whole budget is returned but not kept.
        max_entries: a bound on the number of entries as well (small traces are cheap but not free).
        sizeof: the bytes an entry counts for (default :func:`nbytes`, its numpy arrays); the app also
            keeps ready-to-send figures in one of these, measured by their JSON's length.
        on_large: called (outside the lock) after an entry of ``large_bytes`` or more was stored or dropped:
            its computation allocated and freed at least that much, which a server hands back to the OS
            (``engine.memory.release_memory_soon``).
        name: lists the cache in :data:`CACHES` under this name (the newest cache of a name wins).
    """

    def __init__(
        self,
        max_bytes: int,
        max_entries: int = 256,
        sizeof: Callable[[Any], int] | None = None,
        on_large: Callable[[], None] | None = None,
        large_bytes: int = 16 * 2**20,
        name: str | None = None,
    ) -> None:
        if max_bytes < 0 or max_entries < 1:
            raise ValueError("max_bytes must be >= 0 and max_entries >= 1")
        self.max_bytes = int(max_bytes)
        self.max_entries = int(max_entries)
        self._sizeof = sizeof or nbytes
        self._on_large, self._large_bytes = on_large, int(large_bytes)
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._pending: dict[Hashable, _Pending] = {}
        self._bytes = 0
        self.hits = 0
        self.misses = 0
        if name is not None:
            CACHES[name] = self

    # ---- reading -----------------------------------------------------------------------------
    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The cached value of ``key``, computing it with ``compute()`` once if it is missing.

        Concurrent callers with the same key share one computation; an exception reaches every one
        of them and nothing is cached. A computation stopped by a control-flow exception that is not an
        ``Exception`` (its caller's page run was stopped or rerun: Streamlit raises its own ``StopException`` /
        ``RerunException`` inside a progress callback; ``KeyboardInterrupt``) says nothing about the key: the
        other callers are not handed the stopped run's exception but compute the value themselves.
        """
        while True:
            found, value = self._get_once(key, compute)
            if found:
                return value

    def _get_once(self, key: Hashable, compute: Callable[[], T]) -> tuple[bool, T | None]:
        """``(True, value)``; ``(False, None)`` when the computation waited on was stopped (try again)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return True, entry[0]
            pending = self._pending.get(key)
            owner = pending is None
            if owner:
                pending = self._pending[key] = _Pending()
                self.misses += 1
        if not owner:
            pending.done.wait()
            if pending.error is not None:
                if not isinstance(pending.error, Exception):
                    return False, None  # the owner's run was stopped, not the computation refused
                raise pending.error
            return True, pending.value
        try:
            value = compute()
            pending.value = value
            self._put(key, value)
            return True, value
        except BaseException as err:
            pending.error = err
            raise
        finally:
            with self._lock:
                self._pending.pop(key, None)
            pending.done.set()

    def _put(self, key: Hashable, value: Any) -> None:
        arrays = _arrays(value, set())
        for arr in arrays:  # shared between sessions: nobody may write
            arr.flags.writeable = False
        size = self._sizeof(value) if self._sizeof is not nbytes else sum(a.nbytes for a in arrays)
        largest = size
        with self._lock:
            if size <= self.max_bytes:  # else larger than the whole budget: served once, not kept
                old = self._entries.pop(key, None)
                if old is not None:
                    self._bytes -= old[1]
                self._entries[key] = (value, size)
                self._bytes += size
                while self._entries and (self._bytes > self.max_bytes or len(self._entries) > self.max_entries):
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self._bytes -= dropped
                    largest = max(largest, dropped)
        if self._on_large is not None and largest >= self._large_bytes:
            self._on_large()

    # ---- housekeeping ------------------------------------------------------------------------
    @property
    def bytes(self) -> int:
        """Bytes held by the cached arrays now."""
        with self._lock:
            return self._bytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def clear(self) -> None:
        """Drop every entry (computations in flight finish and are then cached)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def stats(self) -> dict[str, int]:
        """Entries, bytes, budget, hits and misses so far."""
        with self._lock:
            return {
                "entries": len(self._entries),
                "bytes": self._bytes,
                "max_bytes": self.max_bytes,
                "hits": self.hits,
                "misses": self.misses,
            }
