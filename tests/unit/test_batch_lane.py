"""engine.batching: requests that wait for a busy model share its next call (BatchLane; nobody waits to batch), and a batch split by length (length_groups)."""

from __future__ import annotations

import random
import threading

import pytest

from engine.batching import BatchLane, length_groups
from tests.job_helpers import wait_until
from tests.thread_helpers import call_in_thread

WAIT_S = 10.0


def _spawn(lane: BatchLane, key, item, run, results: dict, name: str) -> threading.Thread:
    return call_in_thread(lambda: lane.submit(key, item, run), results, name)


class FirstCallHeld:
    """A lane's ``run``: records each call's items and answers with ``answer(items)``; the first call sets
    ``started`` and waits for ``gate``."""

    def __init__(self, answer) -> None:
        self.answer, self.calls = answer, []
        self.started, self.gate = threading.Event(), threading.Event()

    def __call__(self, items):
        self.calls.append(list(items))
        if len(self.calls) == 1:
            self.started.set()
            assert self.gate.wait(WAIT_S)
        return self.answer(items)


def _until(predicate, what: str) -> None:
    wait_until(predicate, timeout=WAIT_S, what=what)


def test_a_lone_request_runs_at_once_by_itself() -> None:
    lane = BatchLane(slots=1)
    calls: list[list] = []
    assert lane.submit("m", 3, lambda items: calls.append(items) or [x * 2 for x in items]) == 6
    assert calls == [[3]] and lane.batches == [1] and lane.calls == 1


def test_requests_waiting_for_a_busy_key_share_its_next_call_in_arrival_order() -> None:
    lane = BatchLane(slots=2, max_batch=8)
    run = FirstCallHeld(lambda items: [f"r{x}" for x in items])
    results: dict = {}
    first = _spawn(lane, "m", 0, run, results, "first")
    assert run.started.wait(WAIT_S)
    waiting = []
    for i in range(1, 6):
        waiting.append(_spawn(lane, "m", i, run, results, f"w{i}"))
        _until(lambda i=i: len(lane._queue) == i, "the request did not queue")  # arrival order is fixed
    run.gate.set()
    for t in [first, *waiting]:
        t.join(WAIT_S)
    assert run.calls == [[0], [1, 2, 3, 4, 5]]  # the second slot did not start a call of the busy key
    assert results == {"first": "r0", **{f"w{i}": f"r{i}" for i in range(1, 6)}}
    assert lane.batches == [1, 5]


def test_other_keys_run_next_to_a_busy_one_and_never_merge() -> None:
    lane = BatchLane(slots=2)
    gate, started = threading.Event(), threading.Event()
    calls: list[tuple] = []

    def run_a(items):
        calls.append(("a", list(items)))
        started.set()
        assert gate.wait(WAIT_S)
        return items

    def run_b(items):
        calls.append(("b", list(items)))
        return items

    results: dict = {}
    a = _spawn(lane, "a", 1, run_a, results, "a")
    assert started.wait(WAIT_S)
    b = _spawn(lane, "b", 2, run_b, results, "b")
    b.join(WAIT_S)
    assert results.get("b") == 2 and a.is_alive()  # b finished while a still runs
    gate.set()
    a.join(WAIT_S)
    assert results == {"a": 1, "b": 2} and sorted(c[0] for c in calls) == ["a", "b"]


def test_max_batch_splits_a_long_queue() -> None:
    lane = BatchLane(slots=1, max_batch=2)
    run = FirstCallHeld(lambda items: items)
    results: dict = {}
    threads = [_spawn(lane, "m", 0, run, results, "t0")]
    assert run.started.wait(WAIT_S)
    for i in range(1, 6):
        threads.append(_spawn(lane, "m", i, run, results, f"t{i}"))
    _until(lambda: len(lane._queue) == 5, "requests did not queue")
    run.gate.set()
    for t in threads:
        t.join(WAIT_S)
    assert [len(items) for items in run.calls] == [1, 2, 2, 1] and results == {f"t{i}": i for i in range(6)}


def test_an_item_error_reaches_its_caller_only_and_a_failed_call_reaches_all_of_its_callers() -> None:
    lane = BatchLane(slots=1)
    bad = ValueError("item 2 is bad")
    assert lane.submit("m", 1, lambda items: [bad if x == 2 else x for x in items]) == 1
    with pytest.raises(ValueError, match="item 2"):
        lane.submit("m", 2, lambda items: [bad if x == 2 else x for x in items])

    def broken(items):
        raise RuntimeError("the model failed")

    with pytest.raises(RuntimeError, match="the model failed"):
        lane.submit("m", 3, broken)
    with pytest.raises(RuntimeError, match="returned 0 results"):
        lane.submit("m", 4, lambda items: [])
    assert lane.submit("m", 5, lambda items: items) == 5  # the lane still works: its slot came back


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError):
        BatchLane(slots=0)
    with pytest.raises(ValueError):
        BatchLane(max_batch=0)


def test_the_record_of_batches_is_bounded_and_the_call_count_is_not() -> None:
    lane = BatchLane(slots=1)
    for i in range(300):
        lane.submit("m", i, lambda items: items)
    assert len(lane.batches) == 256 and lane.calls == 300


def test_many_callers_on_two_keys_each_get_their_own_result() -> None:
    """40 threads, two keys, two slots: every caller gets its own answer, every request is served exactly once
    and a key never runs two calls at once."""
    lane = BatchLane(slots=2, max_batch=4)
    running: dict[str, int] = {"a": 0, "b": 0}
    overlap: list[str] = []

    def run_for(key):
        def run(items):
            running[key] += 1
            if running[key] > 1:
                overlap.append(key)
            threading.Event().wait(0.002)
            running[key] -= 1
            return [(key, x) for x in items]

        return run

    results: dict = {}
    threads = [
        call_in_thread(lambda i=i: lane.submit("ab"[i % 2], i, run_for("ab"[i % 2])), results, f"t{i}")
        for i in range(40)
    ]
    for t in threads:
        t.join(WAIT_S)
    assert results == {f"t{i}": ("ab"[i % 2], i) for i in range(40)}
    assert not overlap and sum(lane.batches) == 40 and lane.calls == len(lane.batches)
    assert max(lane.batches) <= 4


def _cost(groups, lengths, pass_cost):
    return sum(pass_cost + len(g) * max(lengths[i] for i in g) for g in groups)


def _partitions(items):
    """Every way to split ``items`` into non-empty groups (set partitions)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        for k in range(len(part)):
            yield [*part[:k], [first, *part[k]], *part[k + 1 :]]
        yield [[first], *part]


def test_length_groups_cost_the_least_of_every_split():
    """Against brute force: every set partition of up to 7 texts, random lengths and pass costs."""
    rng = random.Random(3)
    for _ in range(60):
        n = rng.randint(1, 7)
        lengths = [rng.randint(1, 120) for _ in range(n)]
        pass_cost = rng.choice([0, 8, 32, 200])
        groups = length_groups(lengths, pass_cost)
        assert sorted(i for g in groups for i in g) == list(range(n))  # every text once
        best = min(_cost(p, lengths, pass_cost) for p in _partitions(list(range(n))))
        assert _cost(groups, lengths, pass_cost) == best


def test_length_groups_keep_one_pass_for_similar_lengths_and_split_far_ones():
    assert length_groups([20, 22, 25, 21], 32) == [[0, 3, 1, 2]]
    assert length_groups([60, 20, 22, 58], 32) == [[1, 2], [3, 0]]
    assert length_groups([5, 500], 0) == [[0], [1]] and length_groups([5, 500], 10_000) == [[0, 1]]
    assert length_groups([], 32) == []
