"""Callers that wait for a forward pass share one: a class pressing Enter at once.

A model runs one forward pass at a time per process (``Model.run`` holds its lock), so when thirty students
press Enter in the same second, twenty-nine script threads wait for it. :class:`BatchLane` lets them wait in
a queue instead: whoever finds a free slot takes the oldest waiting request and every other waiting request
with the same key (same model and mask) and runs them as one call (``engine.trace_many``: one padded pass,
the weights read once for all). Nobody waits for a batch to fill: a request
that finds a free slot runs at once, alone if it is alone, so a quiet server answers as before. Each caller
gets its own result, or its own exception.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(eq=False)
class _Ticket:
    key: Hashable
    item: Any
    run: Callable[[list[Any]], Sequence[Any]]
    done: bool = False
    result: Any = None
    error: BaseException | None = None


class BatchLane:
    """A queue in front of ``slots`` concurrent calls that merges waiting requests of the same key.

    Args:
        slots: calls that may run at the same time (one per model is what ``Model.run`` allows anyway).
        max_batch: most requests merged into one call.

    Example:
        >>> lane = BatchLane(slots=1)
        >>> lane.submit(("minilm", None), ("The cat sat.", 128), lambda items: engine.trace_many(...))
    """

    def __init__(self, slots: int = 1, max_batch: int = 8) -> None:
        if slots < 1 or max_batch < 1:
            raise ValueError("slots and max_batch must be at least 1")
        self.max_batch = max_batch
        self._cond = threading.Condition()
        self._free = slots
        self._queue: list[_Ticket] = []
        self._running: dict[Hashable, int] = {}  # key -> calls running now (one per key: they would share a lock)
        #: how many requests each call served, most recent last (the last 256; for tests and benchmarks)
        self.batches: list[int] = []
        #: calls made since the lane was created (``batches`` keeps only the last 256)
        self.calls = 0

    def submit(self, key: Hashable, item: Any, run: Callable[[list[Any]], Sequence[Any]]) -> Any:
        """Run ``item`` (with any waiting items of the same ``key``) and return its result.

        ``run(items)`` gets the merged items in arrival order and returns one result per item: a value, or an
        exception instance, which is raised in that item's caller only. If ``run`` itself raises, every
        caller of that call gets the exception. Requests of different keys never share a call.
        """
        ticket = _Ticket(key, item, run)
        with self._cond:
            self._queue.append(ticket)
            while not ticket.done:
                batch = self._take() if self._free > 0 else None
                if batch is None:
                    self._cond.wait()
                    continue
                key = batch[0].key
                self._free -= 1
                self._running[key] = self._running.get(key, 0) + 1
                self._cond.release()
                try:
                    self._execute(batch)
                finally:
                    self._cond.acquire()
                    self._free += 1
                    self._running[key] -= 1
                    if not self._running[key]:
                        del self._running[key]
                    self.batches = [*self.batches[-255:], len(batch)]  # under the lock: two slots may finish at once
                    self.calls += 1
                    self._cond.notify_all()
        if ticket.error is not None:
            raise ticket.error
        return ticket.result

    def _take(self) -> list[_Ticket] | None:
        """The oldest waiting request whose key has no call running, and the next waiting ones of its key
        (under the lock); None when there is none (a second call of a key would only wait for the model's
        lock, and the requests arriving meanwhile could not join it)."""
        head = next((t for t in self._queue if t.key not in self._running), None)
        if head is None:
            return None
        batch = [t for t in self._queue if t.key == head.key][: self.max_batch]
        taken = set(map(id, batch))
        self._queue = [t for t in self._queue if id(t) not in taken]
        return batch

    def _execute(self, batch: list[_Ticket]) -> None:
        stop: BaseException | None = None
        try:
            results = list(batch[0].run([t.item for t in batch]))
            if len(results) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} returned {len(results)} results")
        except Exception as err:  # noqa: BLE001 — every caller of this call gets it, raised in its own thread
            results = [err] * len(batch)
        except BaseException as err:  # noqa: BLE001 — an interrupt: its callers fail, this thread stops as asked
            results, stop = [RuntimeError("the shared forward pass was interrupted")] * len(batch), err
        for ticket, result in zip(batch, results):
            if isinstance(result, BaseException):
                ticket.error = result
            else:
                ticket.result = result
            ticket.done = True
        if stop is not None:
            raise stop


def length_groups(lengths: Sequence[int], pass_cost: int) -> list[list[int]]:
    """Indices of ``lengths`` (token counts) split into padded passes that cost the least in all.

    A pass over ``rows`` texts right-padded to the longest costs about ``pass_cost + rows × longest`` (in padded
    tokens: ``pass_cost`` is what a pass costs whatever its size, e.g. reading every weight once). One pass pads a
    short text to the longest; more passes pad less but pay ``pass_cost`` again. Texts are sorted by length and
    cut into consecutive runs by dynamic programming (exact for this cost, n ≤ a batch). Returns the groups,
    shortest texts first, each a list of indices into ``lengths``.

    Example:
        >>> length_groups([60, 20, 22, 58], pass_cost=32)
        [[1, 2], [3, 0]]
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    n = len(order)
    best = [0] + [None] * n  # best[j]: least cost of the j shortest texts
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        longest = lengths[order[j - 1]]
        for i in range(j):
            cost = best[i] + pass_cost + (j - i) * longest
            if best[j] is None or cost < best[j]:
                best[j], cut[j] = cost, i
    groups = []
    j = n
    while j:
        groups.append(order[cut[j] : j])
        j = cut[j]
    return groups[::-1]
