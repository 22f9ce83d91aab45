"""Live-training jobs: start / pause / resume / stop, the running cap and its queue, the heartbeat reaper,
no leaked threads, server-side validation, and that a job's snapshots are exactly the training loop's."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch

from engine.training.job_settings import (
    EVAL_BATCH,
    JobSettings,
    JobSettingsError,
    build_model,
    build_task,
    count_params,
    validate_settings,
)
from engine.training.jobs import JobManager
from engine.training.loop import TrainConfig, train
from engine.training.tasks import pattern_score
from tests.job_helpers import LONG, TINY, FakeClock, parked, reaper_rounds, wait_until


def fast(settings) -> float:
    """A fixed 1 ms per step: LONG fits the time budget however busy the machine (test_job_budget tests it)."""
    return 1e-3


@pytest.fixture()
def manager(baseline_threads):
    m = JobManager(max_running=1, heartbeat_timeout=30.0, reap_every=0.1, estimator=fast)
    yield m
    m.shutdown()


# ---- start / pause / resume / stop -------------------------------------------------------------------


def test_a_job_runs_to_the_end(manager):
    job = manager.submit("s1", dict(TINY, steps=30, snapshot_every=10))
    assert job.wait(60)
    p = job.progress()
    assert p.status == "done" and p.error == "" and p.queue_position == 0
    assert [s.step for s in p.snapshots] == [0, 10, 20, 30]
    assert p.snapshots[-1].final and not p.snapshots[-1].stopped
    assert p.device == "cuda" if torch.cuda.is_available() else p.device == "cpu"
    assert p.threads == 1  # the job bounds torch's threads in its own thread, whatever the caller's


def test_the_snapshots_are_the_loops(manager):
    """Same settings through the job manager and through ``train`` directly: identical numbers."""
    settings = validate_settings(dict(TINY, steps=25, snapshot_every=5, seed=3, device="cpu"))
    job = manager.submit("s1", settings)
    assert job.wait(60)
    got = job.progress()
    task = build_task("reverse")
    config = TrainConfig(
        steps=25,
        batch_size=8,
        lr=settings.lr,
        seed=3,
        device="cpu",
        snapshot_every=5,
        warmup=min(100, max(1, 25 // 10)),
        eval_batch_size=EVAL_BATCH,
    )
    before = torch.get_num_threads()
    torch.set_num_threads(got.threads)  # the same thread count: the same order of float sums
    try:
        expected = list(train(build_model(settings, task), task, config))
    finally:
        torch.set_num_threads(before)
    assert [s.step for s in got.snapshots] == [s.step for s in expected]
    assert [s.loss for s in got.snapshots] == [s.loss for s in expected]
    assert [s.metric for s in got.snapshots] == [s.metric for s in expected]
    np.testing.assert_array_equal(got.snapshots[-1].probe_trace.pattern(0), expected[-1].probe_trace.pattern(0))
    # head scores: an independent re-computation of "weight on the ideal key, averaged over answer rows"
    ideal_keys = task.ideal_keys()
    for snap, scores in zip(got.snapshots, got.head_scores):
        assert scores.shape == (1, 2)
        for head in range(2):
            pattern = snap.probe_trace.pattern(0, head)
            by_hand = np.mean([pattern[q, k] for q, k in ideal_keys.items()])
            assert scores[0, head] == pytest.approx(by_hand, abs=1e-6)
            assert scores[0, head] == pytest.approx(pattern_score(pattern, task.ideal_pattern(), task.ideal_rows()))


def test_pause_resume_stop(manager):
    job = manager.submit("s1", LONG)
    wait_until(lambda: job.progress().step >= 3, what="three steps")
    manager.pause("s1")
    assert job.status == "paused"
    wait_until(lambda: parked(job), what="the job to wait in its pause")  # the step under way finished
    paused_at = len(job.progress().snapshots)
    assert parked(job) and len(job.progress().snapshots) == paused_at, "it trained while paused"
    manager.resume("s1")
    assert job.status == "running"
    wait_until(lambda: len(job.progress().snapshots) > paused_at + 3, what="steps after resuming")
    manager.stop("s1")
    assert job.wait(10)
    p = job.progress()
    assert p.status == "stopped" and p.snapshots[-1].final and p.snapshots[-1].stopped
    assert p.step < 20_000
    assert manager.get("s1") is job  # the stopped job keeps its snapshots and model for the page


def test_stop_while_paused(manager):
    job = manager.submit("s1", LONG)
    wait_until(lambda: job.progress().step >= 1, what="a step")
    manager.pause("s1")
    manager.stop("s1")
    assert job.wait(10) and job.status == "stopped"


def test_a_new_job_replaces_the_sessions_old_one(manager):
    first = manager.submit("s1", LONG)
    wait_until(lambda: first.progress().step >= 1, what="a step")
    second = manager.submit("s1", dict(TINY, steps=5, snapshot_every=5))
    assert first.wait(0) and first.status == "stopped"  # ended before submit returned
    assert manager.get("s1") is second and second.wait(30) and second.status == "done"
    manager.discard("s1")
    assert manager.get("s1") is None


# ---- cap and queue -----------------------------------------------------------------------------------


def test_cap_and_fifo_queue(manager):
    a = manager.submit("a", LONG)
    b = manager.submit("b", dict(TINY, steps=10, snapshot_every=5))
    c = manager.submit("c", dict(TINY, steps=10, snapshot_every=5))
    wait_until(lambda: a.status == "running" and a.progress().step >= 1, what="a to train")
    assert (b.status, b.progress().queue_position) == ("queued", 1)
    assert (c.status, c.progress().queue_position) == ("queued", 2)
    assert b.progress().snapshots == () and manager.active_count() == 3
    manager.stop("a")
    assert a.wait(10)
    assert b.wait(30) and b.status == "done"  # b started when a ended, then c
    assert c.wait(30) and c.status == "done"
    assert c.progress().queue_position == 0


def test_two_slots_run_two_jobs():
    m = JobManager(max_running=2, reap_every=0.1, estimator=fast)
    try:
        a, b = m.submit("a", LONG), m.submit("b", LONG)
        wait_until(lambda: a.status == "running" and b.status == "running", what="both to run")
    finally:
        m.shutdown()


def test_a_queued_job_can_be_stopped(manager):
    manager.submit("a", LONG)
    b = manager.submit("b", LONG)
    manager.stop("b")
    assert b.wait(5) and b.status == "stopped" and b.progress().snapshots == ()


# ---- abandoned sessions ------------------------------------------------------------------------------


def test_a_session_without_heartbeats_is_stopped(baseline_threads):
    """Heartbeats every 0.1 s keep a job; a queued or running job whose heartbeats stop for longer than
    ``heartbeat_timeout`` is stopped. The clock is the test's; how soon the real reaper acts is measured by
    bench/bench_responsiveness.py."""
    clock = FakeClock()
    m = JobManager(max_running=1, heartbeat_timeout=1.0, reap_every=0.01, estimator=fast, clock=clock)

    def polling(seconds: float) -> None:  # the live page keeps polling while the clock moves on
        for _ in range(round(seconds / 0.1)):
            clock.advance(0.1)
            m.heartbeat("alive")
        reaper_rounds(clock)

    try:
        kept = m.submit("alive", LONG)
        polling(2.5)
        assert kept.status == "running"
        lost = m.submit("closed", LONG)  # queued behind "alive", then abandoned
        abandoned = m.submit("closed-too", LONG)
        polling(0.9)
        assert lost.status == abandoned.status == "queued"  # not yet past the timeout
        polling(0.2)
        assert lost.wait(10) and abandoned.wait(10)
        assert lost.status == abandoned.status == "stopped"
        assert kept.status == "running"
        clock.advance(1.1)  # heartbeats stop: the running job ends too
        assert kept.wait(10)
        assert kept.status == "stopped" and "stopped asking for updates" in kept.progress().error
    finally:
        m.shutdown()


# ---- validation --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(lr=float("nan")), "learning rate must be a finite number"),
        (dict(lr=float("inf")), "learning rate must be a finite number"),
        (dict(lr=-0.01), "learning rate must be a finite number"),
        (dict(lr="0.01"), "learning rate must be a finite number"),
        (dict(steps=-5), "steps must be a whole number from 1 to 20,000"),
        (dict(steps=0), "steps must be a whole number"),
        (dict(steps=10**9), "steps must be a whole number"),
        (dict(steps=2.5), "steps must be a whole number"),
        (dict(d_model="64"), "d_model must be a whole number from 16 to 256"),
        (dict(d_model=1024), "d_model must be a whole number from 16 to 256"),
        (dict(n_layers=True), "n_layers must be a whole number from 1 to 4"),
        (dict(n_heads=9), "n_heads must be a whole number from 1 to 8"),
        (dict(batch_size=float("nan")), "batch_size must be a whole number"),
        (dict(seed=-1), "seed must be a whole number"),
        (dict(task="chess"), "task must be one of"),
        (dict(pos_encoding="xpos"), "positional encoding must be one of"),
        (dict(causal="yes"), "causal must be true or false"),
        (dict(device="tpu"), "device must be one of"),
        (dict(d_model=48, n_heads=5), "must be divisible by the number of heads"),
        (dict(d_model=24, n_heads=8, pos_encoding="rope"), "RoPE rotates pairs"),
        (dict(hack=1), "unknown setting 'hack'"),
        (dict(task="stories", n_layers=4, d_model=256, n_heads=8, batch_size=256), "MiB of activations"),
    ],
)
def test_bad_settings_are_refused_with_a_readable_message(manager, settings, message):
    with pytest.raises(JobSettingsError, match=message):
        manager.submit("s1", settings)
    assert manager.get("s1") is None and manager.active_count() == 0


def test_every_problem_is_listed():
    with pytest.raises(JobSettingsError) as err:
        validate_settings(dict(lr=math.nan, steps=-1, n_heads=0))
    text = str(err.value)
    assert "learning rate" in text and "steps" in text and "n_heads" in text


def test_not_a_mapping():
    with pytest.raises(JobSettingsError, match="mapping"):
        validate_settings(["reverse"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "overrides",
    [
        dict(),
        dict(pos_encoding="rope", n_layers=3, d_model=96, n_heads=3),
        dict(task="induction", pos_encoding="alibi"),
        dict(task="translation"),
    ],
)
def test_parameter_count_matches_the_model(overrides):
    settings = validate_settings(overrides)
    task = build_task(settings.task)
    model = build_model(settings, task)
    assert count_params(settings, len(task.vocab), task.seq_len) == sum(p.numel() for p in model.parameters())


def test_default_snapshot_cadence():
    assert JobSettings(steps=500).every == 12
    assert JobSettings(steps=100).every == 10
    assert JobSettings(steps=5000).every == 125
    assert JobSettings(steps=500, snapshot_every=7).every == 7


@pytest.mark.parametrize("task", ["copy", "reverse", "sort", "previous-token", "induction", "stories", "translation"])
def test_every_task_of_the_page_trains(manager, task):
    job = manager.submit("s1", dict(TINY, task=task, steps=4, snapshot_every=2, pos_encoding="rope"))
    assert job.wait(60)
    p = job.progress()
    assert p.status == "done", p.error
    assert [s.step for s in p.snapshots] == [0, 2, 4]
    assert all(math.isfinite(s.loss) for s in p.snapshots)
    has_ideal = task in ("copy", "reverse", "previous-token", "induction")
    assert all((scores.size > 0) == has_ideal for scores in p.head_scores)


def test_a_connected_session_keeps_training_without_heartbeats_and_stops_when_it_disconnects(baseline_threads):
    """With an ``alive`` check (the app's "is the browser still connected?"), a user on another page keeps
    the job; closing the tab stops it within the grace period."""
    clock = FakeClock()
    m = JobManager(max_running=1, heartbeat_timeout=0.5, reap_every=0.01, grace=0.5, estimator=fast, clock=clock)
    connected = threading.Event()
    connected.set()
    try:
        job = m.submit("s1", LONG, alive=connected.is_set)
        clock.advance(1.5)  # no heartbeats at all, but still connected
        reaper_rounds(clock)
        assert job.status == "running"
        connected.clear()
        reaper_rounds(clock)  # the reaper notices the disconnect: the grace period starts now
        clock.advance(0.4)
        reaper_rounds(clock)
        assert job.status == "running"  # a reconnecting browser has the grace period
        clock.advance(0.2)
        assert job.wait(10) and job.status == "stopped"
    finally:
        m.shutdown()
