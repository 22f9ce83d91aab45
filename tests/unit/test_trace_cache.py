"""The per-process trace cache: bounded in bytes, hits are the same object, one computation per key."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from engine.cache import TraceCache, nbytes
from engine.records import Tokens
from engine.traces.attention import AttentionTrace
from tests.thread_helpers import all_at_once, call_in_thread


def make_trace(n: int, seed: int = 0) -> AttentionTrace:
    rng = np.random.default_rng(seed)
    toks = Tokens(strings=tuple(f"t{i}" for i in range(n)), ids=tuple(range(n)), special=(False,) * n)
    qkv = [tuple(rng.standard_normal((2, n, 4)).astype(np.float32) for _ in range(1)) for _ in range(3)]
    return AttentionTrace(
        model_id="m",
        family="encoder",
        tokens=toks,
        key_tokens=toks,
        queries=qkv[0],
        keys=qkv[1],
        values=qkv[2],
        scales=(0.5,),
        causal=False,
    )


def test_nbytes_counts_every_array_once():
    tr = make_trace(8)
    assert nbytes(tr) == 3 * 2 * 8 * 4 * 4  # q, k, v: [2 heads, 8 pos, 4 d] float32
    assert nbytes((tr, tr)) == nbytes(tr)  # the same arrays reached twice count once


def test_hit_returns_the_same_object_and_arrays_are_read_only():
    cache = TraceCache(max_bytes=10**6)
    calls = []
    first = cache.get("k", lambda: calls.append(1) or make_trace(8))
    again = cache.get("k", lambda: calls.append(1) or make_trace(8))
    assert again is first and calls == [1]
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1
    with pytest.raises(ValueError):
        first.queries[0][0, 0, 0] = 1.0  # shared between sessions: writing must fail
    np.testing.assert_allclose(first.pattern(0, 0).sum(-1), 1.0, rtol=1e-6)  # reading still works


def test_evicts_least_recently_used_by_bytes():
    one = nbytes(make_trace(16))
    cache = TraceCache(max_bytes=3 * one)
    for key in "abc":
        cache.get(key, lambda: make_trace(16))
    cache.get("a", lambda: pytest.fail("a is cached"))  # a becomes the most recent
    cache.get("d", lambda: make_trace(16))  # over budget: b (least recent) goes
    assert "b" not in cache and all(k in cache for k in "acd")
    assert cache.bytes == 3 * one <= cache.max_bytes


def test_entry_larger_than_budget_is_served_not_kept():
    cache = TraceCache(max_bytes=100)
    tr = cache.get("big", lambda: make_trace(32))
    assert isinstance(tr, AttentionTrace) and "big" not in cache and cache.bytes == 0


def test_concurrent_requests_for_one_key_compute_once():
    cache = TraceCache(max_bytes=10**6)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return make_trace(8)

    results = all_at_once(lambda: cache.get("same", slow), 6, 5)
    assert len(calls) == 1 and len(results) == 6
    assert all(r is results[0] for r in results)


def test_an_error_reaches_every_waiter_and_is_not_cached():
    cache = TraceCache(max_bytes=10**6)
    gate = threading.Event()
    errors = []

    def failing():
        gate.wait(2)
        raise RuntimeError("boom")

    def worker():
        try:
            cache.get("bad", failing)
        except RuntimeError as err:
            errors.append(str(err))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    gate.set()
    for t in threads:
        t.join(5)
    assert errors == ["boom"] * 3
    assert "bad" not in cache
    assert cache.get("bad", lambda: make_trace(4)).n_queries == 4  # a later call computes again


def test_entry_cap_and_clear():
    cache = TraceCache(max_bytes=10**9, max_entries=2)
    for key in "xyz":
        cache.get(key, lambda: make_trace(4))
    assert len(cache) == 2 and "x" not in cache
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0
    with pytest.raises(ValueError):
        TraceCache(max_bytes=-1)


def test_a_large_entry_stored_or_dropped_asks_for_a_trim():
    calls = []
    cache = TraceCache(max_bytes=3000, on_large=lambda: calls.append(1), large_bytes=1000)
    cache.get("small", lambda: np.zeros(10, dtype=np.float32))  # 40 bytes
    assert calls == []
    cache.get("big", lambda: np.zeros(300, dtype=np.float32))  # 1,200 bytes: stored
    assert calls == [1]
    cache.get("big2", lambda: np.zeros(300, dtype=np.float32))
    assert calls == [1, 1]
    cache.get("small2", lambda: np.zeros(200, dtype=np.float32))  # 800 bytes, but "big" (1,200) is dropped for it
    assert "big" not in cache and calls == [1, 1, 1]
    cache.get("huge", lambda: np.zeros(1000, dtype=np.float32))  # over the budget: served, not kept, still large
    assert "huge" not in cache and calls == [1, 1, 1, 1]


class _Stopped(BaseException):
    """Like Streamlit's StopException: the caller's page run was stopped, not the computation refused."""


class WatchedEvent(threading.Event):
    """An event that says when someone first waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited_on = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited_on.set()
        return super().wait(timeout)


def owner_and_waiter(cache: TraceCache, error: BaseException, waiter_compute) -> dict:
    """Two calls of ``cache.get("k", ...)``: the owner's computation raises ``error`` once the waiter waits on it;
    returns what each call returned or raised (``"owner"``, ``"waiter"``)."""
    started, release, out = threading.Event(), threading.Event(), {}

    def raising():
        started.set()
        release.wait(5)
        raise error

    owner = call_in_thread(lambda: cache.get("k", raising), out, "owner")
    started.wait(5)
    cache._pending["k"].done = done = WatchedEvent()  # the owner's computation in flight: see when it is waited on
    waiter = call_in_thread(lambda: cache.get("k", waiter_compute), out, "waiter")
    assert done.waited_on.wait(5), "the waiter never waited on the owner's computation"
    release.set()
    owner.join(5), waiter.join(5)
    return out


def test_a_waiter_computes_for_itself_when_the_run_it_waited_on_was_stopped():
    cache = TraceCache(max_bytes=10_000)
    out = owner_and_waiter(cache, _Stopped(), lambda: np.arange(3, dtype=np.float32))
    assert isinstance(out["owner"], _Stopped), "the stopped run gets its own exception"
    assert out["waiter"].tolist() == [0.0, 1.0, 2.0], "the waiter computed the value itself"
    assert "k" in cache


def test_an_ordinary_error_still_reaches_every_waiter():
    out = owner_and_waiter(TraceCache(max_bytes=10_000), ValueError("bad text"), lambda: "computed again")
    assert [(type(e), str(e)) for e in out.values()] == [(ValueError, "bad text")] * 2
