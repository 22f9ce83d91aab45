"""Live-training jobs for a shared server: one per session, a cap on how many train at once, a FIFO queue,
a time budget per job.

::

    manager = get_manager()
    job = manager.submit(session_id, {"task": "reverse", "steps": 500})   # validated, queued or started
    manager.heartbeat(session_id)                                         # the page's poll, every ~1 s
    job.progress()          # status, queue position and expected wait, snapshots so far, head scores
    manager.pause(session_id); manager.resume(session_id); manager.stop(session_id)

Each job trains its own freshly built model in a background thread that never touches the UI; the
page only reads :meth:`Job.progress`. A reaper thread stops a job whose session has gone: when the
caller passed an ``alive()`` check (the app passes "is this Streamlit session still connected?"),
``grace`` seconds after it turns false; otherwise when the page's heartbeats stop for
``heartbeat_timeout`` seconds. The reaper exits when no job is left, so the thread count returns to
its baseline. At most ``max_running`` jobs train at once;
the others wait in order (position 1 = next), each told when it should start. Each job's thread sets
torch's intra-op threads to ``threads`` (1 on a 2-core server, where 2 threads ran 8–10× slower under
load); torch keeps that setting per thread (and as the default for threads started later), so the
caller's is not changed. Like the long-work lane's workers (:mod:`engine.jobs`), a training thread
runs at a lower CPU priority (:func:`engine.jobs.background_thread`: nice +10), so page reruns come
first, and hands freed memory back to the OS when it ends. Training keeps its own manager and cap
(``AP_TRAIN_MAX_JOBS``) because its jobs pause, resume and answer heartbeats.

Fairness (:mod:`engine.training.budget`): a session has one job (submitting again stops and replaces
it); a job whose estimated time, the server's own, is over ``AP_TRAIN_MAX_SECONDS`` (default 300) is
refused with a suggestion that fits; a job that holds its slot past its deadline (twice its
estimate, at least a minute more, pauses included) is stopped by the reaper.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from engine.jobs import background_thread, cores, default_max_seconds, expected_start
from engine.memory import release_memory
from engine.traces import TrainingSnapshot
from engine.training.budget import Estimate, StepTimer, TimeBudget
from engine.training.job_settings import (
    EVAL_BATCH,
    JobSettings,
    JobSettingsError,
    build_model,
    build_task,
    validate_settings,
)

log = logging.getLogger(__name__)
ACTIVE = ("queued", "running", "paused")
FINISHED = ("done", "stopped", "failed")


def default_max_running() -> int:
    """Jobs allowed to train at once: ``AP_TRAIN_MAX_JOBS`` if set, else 1 per 2 CPU cores (at least 1)."""
    env = os.environ.get("AP_TRAIN_MAX_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, cores() // 2)


@dataclass(frozen=True)
class JobProgress:
    """A consistent copy of a job's state for the page (plain data; snapshots are shared, immutable).

    Attributes:
        status: queued | running | paused | done | stopped | failed.
        queue_position: 1 = next to start (0 when not queued).
        settings: the validated settings.
        snapshots: every snapshot so far, in step order.
        head_scores: per snapshot ``[layers, heads]`` overlap with the task's ideal pattern (empty when
            the task has none).
        device: where it trains ("cpu", "cuda"); "" before it starts.
        error: why it failed or was stopped by the server ("" otherwise).
        n_params: parameters of the model.
        threads: torch intra-op threads the training thread runs with (0 before it starts).
        estimate: the server's time estimate and limits for this job.
        wait_s: while queued, estimated seconds until it starts (None otherwise).
    """

    status: str
    queue_position: int
    settings: JobSettings
    snapshots: tuple[TrainingSnapshot, ...]
    head_scores: tuple[np.ndarray, ...]
    device: str
    error: str
    n_params: int
    threads: int = 0
    estimate: Estimate | None = None
    wait_s: float | None = None

    @property
    def step(self) -> int:
        return self.snapshots[-1].step if self.snapshots else 0

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class Job:
    """One training run in its own thread. Create through :meth:`JobManager.submit`."""

    def __init__(
        self,
        session_id: str,
        settings: JobSettings,
        manager: "JobManager",
        estimate: Estimate,
        alive: Callable[[], bool] | None = None,
    ) -> None:
        from engine.training.loop import TrainingControl

        self.session_id = session_id
        self.settings = settings
        self.estimate = estimate
        self.control = TrainingControl()
        self.task = build_task(settings.task)
        self.model = build_model(settings, self.task)  # the job's own model, never a shared one
        self.n_params = sum(p.numel() for p in self.model.parameters())
        self._manager = manager
        self._lock = threading.Lock()
        self._admitted = threading.Event()
        self._snapshots: list[TrainingSnapshot] = []
        self._scores: list[np.ndarray] = []
        self._times: list[tuple[float, float]] = []  # (perf_counter, process_time) as each snapshot arrived
        self._status = "queued"
        self._device = ""
        self._threads = 0
        self._error = ""
        self.last_heartbeat = manager.clock()
        self.admitted_at: float | None = None  # manager.clock() when it got a slot
        self.alive = alive  # "is the session still connected?" (None: heartbeats only)
        self.gone_since: float | None = None  # when alive() first said no
        self.thread = threading.Thread(target=self._run, name=f"train-{session_id[:8]}", daemon=True)

    # ---- read from any thread ----

    @property
    def status(self) -> str:
        with self._lock:
            if self._status == "running" and self.control.is_paused:
                return "paused"
            return self._status

    def progress(self) -> JobProgress:
        """The job's state now (cheap: copies two lists of references)."""
        status = self.status
        position = self._manager.queue_position(self)  # before taking our lock (the reaper locks in that order)
        wait = self._manager.expected_wait(self) if position else None
        with self._lock:
            return JobProgress(
                status=status,
                queue_position=position,
                settings=self.settings,
                snapshots=tuple(self._snapshots),
                head_scores=tuple(self._scores),
                device=self._device,
                error=self._error,
                n_params=self.n_params,
                threads=self._threads,
                estimate=self.estimate,
                wait_s=wait,
            )

    def seconds_left(self, now: float) -> float:
        """Estimated seconds until it ends: its steps left × the estimated step time, never past its deadline."""
        if self.control.is_stopped:
            return 0.0
        with self._lock:
            done = self._snapshots[-1].step if self._snapshots else 0
        left = self.estimate.per_step * max(0, self.settings.steps - done)
        if self.admitted_at is None:
            return left
        return max(0.0, min(left, self.estimate.deadline - (now - self.admitted_at)))

    def snapshot_times(self) -> list[tuple[float, float]]:
        """``(time.perf_counter(), time.process_time())`` as each snapshot arrived (for benchmarks)."""
        with self._lock:
            return list(self._times)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread ends; True if it has."""
        self.thread.join(timeout)
        return not self.thread.is_alive()

    # ---- the worker thread ----

    def _run(self) -> None:
        try:
            while not self._admitted.wait(timeout=0.2):  # queued: wait for a free slot, or a stop
                if self.control.is_stopped:
                    self._finish("stopped")
                    return
            if self.control.is_stopped:
                self._finish("stopped")
                return
            self._train()
        except Exception as err:  # noqa: BLE001 — any failure is shown on the page, never raised in a thread
            with self._lock:
                self._error = f"{type(err).__name__}: {err}"
            self._finish("failed")
        finally:
            self._manager._release(self)
            release_memory()

    def _train(self) -> None:
        import torch

        from engine.families.transformer.adapter import trace_own
        from engine.training.loop import TrainConfig, resolve_device, train
        from engine.training.tasks import pattern_score

        background_thread(self._manager.threads)  # lower CPU priority, torch threads: as the long-work lane's
        s, task, causal = self.settings, self.task, self.settings.causal
        config = TrainConfig(
            steps=s.steps,
            batch_size=s.batch_size,
            lr=s.lr,
            seed=s.seed,
            device=s.device,
            snapshot_every=s.every,
            warmup=min(100, max(1, s.steps // 10)),
            eval_batch_size=EVAL_BATCH,
        )
        with self._lock:
            self._status = "running"
            self._device = resolve_device(s.device).type
            self._threads = torch.get_num_threads()  # per thread: the job's own setting, not the caller's
        ideal, rows = task.ideal_pattern(), task.ideal_rows()

        def forward(model, inputs):
            return model(inputs, causal=causal, attn_impl="sdpa")  # (B, T, V)

        def trace(model, ids, tokens):
            return trace_own(model, ids, tokens, model_id=f"train:{task.name}", causal=causal)

        for snap in train(self.model, task, config, self.control, forward_fn=forward, trace_fn=trace):
            scores = np.zeros((0, 0))
            tr = snap.probe_trace
            if ideal is not None and tr is not None and tr.n_queries == ideal.shape[0]:
                scores = np.array(
                    [
                        [pattern_score(tr.pattern(layer, head), ideal, rows) for head in range(tr.n_heads)]
                        for layer in range(tr.n_layers)
                    ]
                )
            with self._lock:
                self._snapshots.append(snap)
                self._scores.append(scores)
                self._times.append((time.perf_counter(), time.process_time()))
        self._finish("stopped" if self.control.is_stopped and self._snapshots[-1].stopped else "done")

    def _finish(self, status: str) -> None:
        with self._lock:
            self._status = status


class JobManager:
    """Owns every session's job, the running cap, the FIFO queue, the time budget and the reaper.

    Args:
        max_running: jobs that may train at once (default :func:`default_max_running`).
        heartbeat_timeout: seconds without a heartbeat after which a job is stopped.
        threads: torch intra-op threads while training (set in the job's own thread).
        reap_every: seconds between the reaper's checks.
        grace: seconds a job's ``alive()`` may say no (a reconnecting browser) before the job is stopped.
        budget: limits on a job's time (default: :func:`default_max_seconds`, the documented margins).
        estimator: validated settings → seconds per step (default: a :class:`StepTimer` measuring with
            ``threads`` threads; tests pass a fake).
        clock: monotonic seconds for heartbeats, deadlines and waits (tests pass a fake).
    """

    def __init__(
        self,
        max_running: int | None = None,
        heartbeat_timeout: float = 20.0,
        threads: int = 1,
        reap_every: float = 0.5,
        grace: float = 3.0,
        budget: TimeBudget | None = None,
        estimator: Callable[[JobSettings], float] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_running = max_running or default_max_running()
        self.heartbeat_timeout = heartbeat_timeout
        self.threads = threads
        self.reap_every = reap_every
        self.grace = grace
        self.budget = budget or TimeBudget(max_seconds=default_max_seconds())
        self.estimator = estimator or StepTimer(threads=threads)
        self.clock = clock
        self._lock = threading.RLock()
        self._jobs: dict[str, Job] = {}
        self._queue: list[Job] = []
        self._running: set[Job] = set()
        self._reaper: threading.Thread | None = None

    def submit(
        self, session_id: str, settings: Mapping[str, Any] | JobSettings, alive: Callable[[], bool] | None = None
    ) -> Job:
        """Validate ``settings``, check their estimated time, and start (or queue) a job for ``session_id``.

        The session's previous job, if any, is stopped and replaced (also when two submits race): a
        session never has two jobs. Refused settings leave the previous job as it was.

        Args:
            session_id: the owner; one job per session.
            settings: untrusted settings (see :func:`validate_settings`); their estimated time must be
                within ``budget.max_seconds``.
            alive: optional "is the session still connected?" check (thread-safe). With it, the job
                stops ``grace`` seconds after the session disconnects, and keeps training while the
                session is connected but on another page (no heartbeats); without it, heartbeats decide.

        Raises:
            JobSettingsError: invalid settings, or over the time budget (the message suggests what fits);
                nothing is started or stopped.
            ValueError: an empty session id.
        """
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("a job needs a session id")
        checked = validate_settings(settings)
        estimate = self.estimate(checked)
        if not estimate.fits:
            raise JobSettingsError(estimate.refusal())
        job = Job(session_id, checked, self, estimate, alive)
        with self._lock:  # one step: no moment with two jobs of one session, whoever else submits
            old = self._jobs.get(session_id)
            self._jobs[session_id] = job
            if old is not None:
                old.control.stop()
            self._queue.append(job)
            job.thread.start()
            self._admit()
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name="train-reaper", daemon=True)
                self._reaper.start()
        if old is not None:
            old.wait(10.0)
        return job

    def estimate(self, settings: Mapping[str, Any] | JobSettings) -> Estimate:
        """The server's time estimate of ``settings`` against its budget (what :meth:`submit` checks).

        Raises:
            JobSettingsError: invalid settings (nothing is timed).
        """
        checked = validate_settings(settings)
        return Estimate(per_step=self.estimator(checked), steps=checked.steps, budget=self.budget)

    def get(self, session_id: str) -> Job | None:
        """This session's job (running or finished), or None."""
        with self._lock:
            return self._jobs.get(session_id)

    def heartbeat(self, session_id: str) -> None:
        """The session is still there (the page calls this on every poll)."""
        job = self.get(session_id)
        if job is not None:
            job.last_heartbeat = self.clock()

    def pause(self, session_id: str) -> None:
        if (job := self.get(session_id)) is not None:
            job.control.pause()

    def resume(self, session_id: str) -> None:
        if (job := self.get(session_id)) is not None:
            job.control.resume()

    def stop(self, session_id: str) -> None:
        """Ask the session's job to stop (it keeps its snapshots and model)."""
        if (job := self.get(session_id)) is not None:
            job.control.stop()

    def discard(self, session_id: str, timeout: float = 10.0) -> None:
        """Stop the session's job, wait for its thread, and forget it (the page's Reset)."""
        with self._lock:
            job = self._jobs.pop(session_id, None)
        if job is not None:
            job.control.stop()
            job.wait(timeout)

    def queue_position(self, job: Job) -> int:
        """1 for the next job to start, 2 after it, …; 0 when ``job`` is not waiting."""
        with self._lock:
            return self._queue.index(job) + 1 if job in self._queue else 0

    def expected_wait(self, job: Job) -> float | None:
        """Estimated seconds until a queued ``job`` starts (:func:`expected_start`); None when not queued."""
        with self._lock:
            if job not in self._queue:
                return None
            now = self.clock()
            ahead = [j.estimate.seconds for j in self._queue[: self._queue.index(job)] if not j.control.is_stopped]
            return expected_start([j.seconds_left(now) for j in self._running], ahead, self.max_running)

    def active_count(self) -> int:
        """Jobs queued or training."""
        with self._lock:
            return len(self._queue) + len(self._running)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every job and wait for all threads (tests, server exit)."""
        with self._lock:
            jobs = list(self._jobs.values()) + list(self._queue) + list(self._running)
            self._jobs.clear()
        for job in jobs:
            job.control.stop()
        for job in jobs:
            job.wait(timeout)
        reaper = self._reaper
        if reaper is not None:
            reaper.join(timeout)

    # ---- internals ----

    def _admit(self) -> None:
        with self._lock:
            while self._queue and len(self._running) < self.max_running:
                job = self._queue.pop(0)
                job.admitted_at = self.clock()
                self._running.add(job)
                job._admitted.set()

    def _release(self, job: Job) -> None:
        with self._lock:
            self._running.discard(job)
            if job in self._queue:
                self._queue.remove(job)
            self._admit()

    def _abandoned(self, job: Job, now: float) -> bool:
        stale = now - job.last_heartbeat > self.heartbeat_timeout
        if job.alive is None:
            return stale
        try:
            connected = bool(job.alive())
        except Exception:  # noqa: BLE001 — a broken check falls back to heartbeats
            return stale
        if connected:
            job.gone_since = None
            return False
        job.gone_since = job.gone_since or now
        return now - job.gone_since > self.grace

    def _overran(self, job: Job, now: float) -> bool:
        return job in self._running and job.admitted_at is not None and now - job.admitted_at > job.estimate.deadline

    def _reap(self) -> None:
        while True:
            time.sleep(self.reap_every)
            now = self.clock()
            with self._lock:
                for job in list(self._queue) + list(self._running):
                    if job.control.is_stopped:
                        continue
                    if self._overran(job, now):
                        reason, why = job.estimate.overrun_notice(now - job.admitted_at), "it ran far past its estimate"
                    elif self._abandoned(job, now):
                        reason = "stopped by the server: the page stopped asking for updates (closed?)"
                        why = "its session went away"
                    else:
                        continue
                    with job._lock:
                        job._error = reason
                    job.control.stop()
                    log.warning("training job %s stopped: %s", job.thread.name, why)
                if not self._queue and not self._running:
                    self._reaper = None
                    return


_manager: JobManager | None = None
_manager_lock = threading.Lock()


def training_now() -> bool:
    """True when a Train live job is queued or training in this process (no manager is made to ask)."""
    manager = _manager
    return manager is not None and manager.active_count() > 0


def get_manager() -> JobManager:
    """The server-wide job manager (created on first use)."""
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = JobManager()
        return _manager
