"""The long-work lane (engine.jobs): FIFO order with positions and waits, one job per session and kind, the
time budget, cancellation, low-priority workers with one torch thread, progress, bounded results, memory
handed back, sessions that go away; and the Train page's training threads at the same priority."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from engine import job_limits, jobs, memory
from engine.job_limits import LOW_PRIORITY_NICE
from engine.job_records import CANCELLED, GONE, JobStatus, Step
from engine.jobs import LongWorkQueue, checkpoint
from tests.job_helpers import wait_until

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def queue(baseline_threads):
    q = LongWorkQueue(workers=1, max_seconds=60, grace=0.0)
    yield q
    q.shutdown()


def held(gate: threading.Event, log: list | None = None, name: str = ""):
    """A job that runs until ``gate`` is set, with a yield point every 10 ms; records ``name`` when it starts."""

    def work():
        if log is not None:
            log.append(name)
        while not gate.wait(0.01):
            yield None
        return name

    return work


def running(q: LongWorkQueue, session: str, kind: str = "k") -> None:
    wait_until(lambda: q.status(session, kind).status == "running", 10, f"{session} running")


def ended(q: LongWorkQueue, session: str, kind: str = "k", timeout: float = 30) -> JobStatus:
    wait_until(lambda: q.status(session, kind).finished, timeout, f"{session} finished")
    return q.status(session, kind)


# ---- order, positions and waits --------------------------------------------------------------------------------


def test_jobs_run_first_in_first_out_with_their_place_and_wait(baseline_threads):
    clock, gate, order = Clock(), threading.Event(), []
    q = LongWorkQueue(workers=1, max_seconds=60, clock=clock)
    try:
        q.submit("a", "k", held(gate, order, "a"), estimate_s=10)
        running(q, "a")
        b = q.submit("b", "k", held(gate, order, "b"), estimate_s=5)
        c = q.submit("c", "k", held(gate, order, "c"), estimate_s=5)
        assert (b.status, b.position, b.wait_s) == ("queued", 1, 10.0)  # a's estimate, nothing run yet
        assert (c.position, c.wait_s) == (2, 15.0)  # … then b's
        clock.now = 4.0
        assert q.status("b", "k").wait_s == 6.0  # a has run 4 of its 10 s
        assert q.queue_length() == 2 and q.running_count() == 1
        gate.set()
        for s in "abc":
            assert ended(q, s).status == "done"
        assert order == ["a", "b", "c"]
        assert q.status("c", "k").result == "c"
    finally:
        q.shutdown()


def test_at_most_workers_jobs_run_at_once(baseline_threads):
    gate, started = threading.Event(), []
    q = LongWorkQueue(workers=2, max_seconds=60)
    try:
        for s in "abc":
            q.submit(s, "k", held(gate, started, s))
        wait_until(lambda: q.running_count() == 2, 10, "two running")
        assert q.queue_length() == 1 and sorted(started) == ["a", "b"]
        gate.set()
        assert ended(q, "c").status == "done"
    finally:
        q.shutdown()


# ---- one job per session and kind --------------------------------------------------------------------------------


def test_a_new_request_takes_the_place_of_the_sessions_queued_one(queue):
    gate = threading.Event()
    queue.submit("a", "k", held(gate))
    running(queue, "a")
    first = queue.submit("s", "k", held(gate), key=1)
    other = queue.submit("o", "k", held(gate))
    assert (first.position, other.position) == (1, 2)
    second = queue.submit("s", "k", held(gate), key=2)
    assert second.position == 1 and second.job_id != first.job_id  # in the first one's place, not at the end
    assert queue.queue_length() == 2
    assert queue.status("o", "k").position == 2
    again = queue.submit("s", "k", held(gate), key=2)  # the same request while it waits: the same job
    assert again.job_id == second.job_id and queue.queue_length() == 2
    assert queue.submit("s", "other kind", held(gate)).position == 3  # another kind is another job
    gate.set()
    assert ended(queue, "s").status == "done"


def test_a_new_request_stops_the_sessions_running_one(queue):
    gate = threading.Event()
    first = queue.submit("s", "k", held(gate), key=1)
    running(queue, "s")
    second = queue.submit("s", "k", lambda: "second", key=2)
    assert second.status == "queued"
    done = ended(queue, "s")
    assert done.job_id == second.job_id and done.result == "second"  # the first stopped at its next yield point
    assert first.job_id != done.job_id


# ---- the time budget, cancellation, failures --------------------------------------------------------------------


def test_a_job_past_its_budget_stops_at_its_next_yield_point(baseline_threads):
    clock = Clock()
    q = LongWorkQueue(workers=1, max_seconds=5, clock=clock)

    def work():
        for i in range(100):
            clock.now += 1.0
            yield Step(i + 1, 100)
        return "never"

    try:
        q.submit("s", "k", work)
        status = ended(q, "s")
        assert status.status == "stopped" and "limit of 5 s per job" in status.reason
        assert status.result is None and 4 <= len(status.updates) <= 6
    finally:
        q.shutdown()


def test_work_without_yield_points_runs_to_its_end(baseline_threads):
    clock = Clock()
    q = LongWorkQueue(workers=1, max_seconds=5, clock=clock)

    def work():
        clock.now += 60.0  # far past the budget, but nowhere to stop
        return 42

    try:
        q.submit("s", "k", work)
        assert ended(q, "s").result == 42
    finally:
        q.shutdown()


def test_cancel_stops_a_queued_job_at_once_and_a_running_one_at_its_next_yield_point(queue):
    gate, closed = threading.Event(), threading.Event()

    def work():
        try:
            while not gate.wait(0.01):
                yield None
        finally:
            closed.set()

    queue.submit("a", "k", work)
    running(queue, "a")
    queue.submit("b", "k", held(gate))
    queue.cancel("b", "k")
    b = queue.status("b", "k")
    assert (b.status, b.reason, b.position) == ("stopped", CANCELLED, 0)
    queue.cancel("a", "k")
    a = ended(queue, "a")
    assert (a.status, a.reason) == ("stopped", CANCELLED)
    assert closed.is_set()  # the generator was closed: its finally ran
    queue.cancel("nobody", "k")  # nothing to cancel: no error


def test_a_failure_is_kept_with_its_exception(queue):
    def work():
        raise ValueError("bad input")

    queue.submit("s", "k", work)
    status = ended(queue, "s")
    assert status.status == "failed" and isinstance(status.error, ValueError) and str(status.error) == "bad input"


def test_a_job_whose_session_went_away_is_dropped_or_stopped(queue):
    gate, here = threading.Event(), {"a": True, "b": False}
    queue.submit("a", "k", held(gate), alive=lambda: here["a"])
    running(queue, "a")
    queue.submit("b", "k", held(gate), alive=lambda: here["b"])
    here["a"] = False
    assert ended(queue, "a").reason == GONE  # running: at its next yield point (grace 0 here)
    b = ended(queue, "b")
    assert (b.status, b.reason, b.elapsed_s) == ("stopped", GONE, 0.0)  # queued: never started


# ---- progress, results, memory ------------------------------------------------------------------------------


def test_progress_updates_are_visible_while_the_job_runs(queue):
    gate = threading.Event()

    def work():
        yield Step(1, 4, "one of four")
        while not gate.wait(0.01):
            yield None
        yield Step(4, 4, "four of four")
        return {"answer": 42}

    queue.submit("s", "k", work, estimate_s=3)
    wait_until(lambda: queue.status("s", "k").updates, 10, "the first update")
    status = queue.status("s", "k")
    assert status.status == "running" and status.fraction == 0.25 and status.text == "one of four"
    assert status.latest == Step(1, 4, "one of four") and status.estimate_s == 3
    gate.set()
    done = ended(queue, "s")
    assert done.result == {"answer": 42} and done.fraction == 1.0 and len(done.updates) == 2


def test_checkpoint_reports_from_deeper_code_and_does_nothing_outside_a_job(queue):
    checkpoint(Step(1, 2))  # not in a job: nothing happens

    def work():  # a plain callable whose inner loop reports (as engine.decoding's loop does)
        for i in range(10_000):
            checkpoint(Step(i, 10_000))
            threading.Event().wait(0.001)
        return "never"

    queue.submit("s", "k", work)
    wait_until(lambda: queue.status("s", "k").updates, 10, "an update")
    queue.cancel("s", "k")
    status = ended(queue, "s")
    assert status.status == "stopped" and status.reason == CANCELLED and 0 < status.fraction < 1


def test_finished_results_are_kept_for_the_latest_pairs_only(baseline_threads):
    q = LongWorkQueue(workers=1, max_seconds=60, keep=2)
    try:
        for s in "abc":
            q.submit(s, "k", lambda s=s: s)
            assert ended(q, s).result == s
        assert q.status("a", "k") is None  # the oldest pair went
        assert q.status("b", "k").result == "b" and q.status("c", "k").result == "c"
    finally:
        q.shutdown()


def test_memory_is_handed_back_after_each_job(queue, monkeypatch):
    calls = []
    monkeypatch.setattr(jobs, "release_memory", lambda: calls.append(1) or True)
    for s in "ab":
        queue.submit(s, "k", lambda: None)
        ended(queue, s)
    wait_until(lambda: len(calls) == 2, 10, "two trims")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc")
def test_release_memory_calls_malloc_trim():
    assert memory.release_memory() in (True, False)  # 1 when memory went back, 0 when there was none to give
    assert memory._libc().malloc_trim is not None


# ---- priority and threads ------------------------------------------------------------------------------------


def nice_of(tid: int) -> int:
    """The nice value of thread ``tid`` from /proc (field 19 of its stat line)."""
    with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as f:
        stat = f.read()
    return int(stat[stat.rindex(")") + 2 :].split()[16])


@linux_only
def test_workers_run_at_a_lower_priority_with_one_torch_thread(queue):
    import torch

    def work():
        tid = threading.get_native_id()
        return tid, os.getpriority(os.PRIO_PROCESS, tid), nice_of(tid), torch.get_num_threads()

    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    queue.submit("s", "k", work)
    tid, nice, proc_nice, threads = ended(queue, "s").result
    assert nice == proc_nice == max(LOW_PRIORITY_NICE, mine) and threads == 1
    assert tid != threading.get_native_id()
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the caller's thread is unchanged


@linux_only
def test_training_threads_run_at_the_same_lower_priority(baseline_threads):
    from engine.training.jobs import JobManager
    from tests.job_helpers import LONG

    manager = JobManager(max_running=1, heartbeat_timeout=30.0, reap_every=0.1, estimator=lambda s: 1e-3)
    try:
        job = manager.submit("s1", LONG)
        wait_until(lambda: job.progress().snapshots, 60, "the first snapshot")
        assert nice_of(job.thread.native_id) >= LOW_PRIORITY_NICE
        assert job.progress().threads == 1
    finally:
        manager.shutdown()


def test_worker_threads_end_when_the_queue_is_empty(queue):
    before = threading.active_count()
    queue.submit("s", "k", lambda: 1)
    ended(queue, "s")
    wait_until(lambda: threading.active_count() <= before, 10, "the worker to end")


# ---- settings ------------------------------------------------------------------------------------------------


def test_ap_long_jobs_sets_the_workers(monkeypatch):
    default = max(1, job_limits.cores() // 2)
    monkeypatch.delenv("AP_LONG_JOBS", raising=False)
    monkeypatch.delenv("AP_TRAIN_MAX_JOBS", raising=False)
    assert job_limits.default_workers() == default
    monkeypatch.setenv("AP_LONG_JOBS", "3")
    assert job_limits.default_workers() == 3 and LongWorkQueue().workers == 3
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv("AP_LONG_JOBS", bad)
        assert job_limits.default_workers() == default, bad
    monkeypatch.delenv("AP_LONG_JOBS")
    monkeypatch.setenv("AP_TRAIN_MAX_JOBS", "2")  # the old name of the same setting, read when the new one is unset
    assert job_limits.default_workers() == 2
    monkeypatch.setenv("AP_LONG_JOBS", "5")
    assert job_limits.default_workers() == 5


def test_ap_train_max_seconds_is_the_budget(monkeypatch):
    monkeypatch.setenv("AP_TRAIN_MAX_SECONDS", "42")
    assert LongWorkQueue().max_seconds == 42
    monkeypatch.delenv("AP_TRAIN_MAX_SECONDS")
    assert LongWorkQueue().max_seconds == 300


# ---- generation on the lane ----------------------------------------------------------------------------------


def test_a_decoder_writes_token_by_token_as_a_job(queue):
    import engine
    from engine.generation import DecodeSettings

    model = engine.load("tiny-gpt-stories")
    settings = DecodeSettings(max_new_tokens=12)
    queue.submit("s", "write", lambda: engine.generate(model, "lily found a", settings))
    status = ended(queue, "s", "write")
    ref = engine.generate(model, "lily found a", settings)
    assert status.status == "done" and status.result.tokens.strings == ref.tokens.strings
    n_new = len(ref.tokens) - ref.generated_from
    stopped_early = ref.tokens.strings[-1] == "<eos>"
    assert [u.done for u in status.updates] == list(range(1, n_new + (0 if stopped_early else 1)))
    assert all(u.total == 12 for u in status.updates)


def test_a_generation_past_its_budget_stops_between_tokens(baseline_threads):
    import engine
    from engine.generation import DecodeSettings

    class Ticking(Clock):
        def __call__(self) -> float:  # a second passes every time anyone looks
            self.now += 1.0
            return self.now

    q = LongWorkQueue(workers=1, max_seconds=5, clock=Ticking())
    model = engine.load("tiny-gpt-stories")  # greedy after this prompt: 21 tokens, the last <eos>
    try:
        q.submit("s", "k", lambda: engine.generate(model, "lily found a", DecodeSettings(max_new_tokens=50)))
        status = ended(q, "s")
        assert status.status == "stopped" and "limit" in status.reason and status.result is None
        assert 1 <= len(status.updates) < 21
        assert not model.lock.locked()  # stopped between tokens: the model's lock is free
    finally:
        q.shutdown()


def test_a_burst_of_trim_requests_trims_once_after_the_delay(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "release_memory", lambda: calls.append(1) or True)
    start = memory.trims[0]
    for _ in range(5):
        memory.release_memory_soon(0.2)
    assert calls == []  # not on the caller's thread, not before the delay
    wait_until(lambda: memory.trims[0] == start + 1, 10, "one trim")
    assert calls == [1]
    memory.release_memory_soon(0.05)  # a request after the trim schedules another
    wait_until(lambda: memory.trims[0] == start + 2, 10, "a second trim")
    assert calls == [1, 1]
