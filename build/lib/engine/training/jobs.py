"""Train live as one kind of long work (``"train"``) on the server's queue (:mod:`engine.jobs`).

::

    manager = get_manager()
    job = manager.submit(session_id, {"task": "reverse", "steps": 500})   # validated, estimated, queued
    manager.heartbeat(session_id)                                         # the page's poll
    job.progress()          # status, queue position and expected wait, snapshots so far, head scores
    manager.pause(session_id); manager.resume(session_id); manager.stop(session_id)

Each job trains its own freshly built model in a queue worker (low priority, ``threads`` torch threads) and never
touches the UI; the page only reads :meth:`Job.progress`. The queue gives it what every long job has: one job per
session and kind (submitting again stops and replaces it), a FIFO line with expected waits, pause and resume (a
paused job keeps its slot), and the reaper that stops a job whose session has gone (``alive()`` false for
``grace`` seconds, else no heartbeat for ``heartbeat_timeout``) or that has held its slot past its deadline.

Its time (:mod:`engine.training.budget`): settings whose estimate (seconds per step measured on this server, in
thread CPU time so that a busy machine does not inflate it, × steps) is over ``AP_TRAIN_MAX_SECONDS`` are refused
with the steps that fit. Once it runs, the job's own first :data:`PROBE_STEPS` steps give its pace on the machine
as it is now; a run that would not fit at that pace is stopped at the steps that do (:attr:`JobProgress.notice`
says so from then on), and one that holds its slot past twice its estimate (at least a minute more) is stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from engine.job_limits import about
from engine.job_records import ACTIVE, CANCELLED, FINISHED, REPLACED, Step
from engine.jobs import LongJob, LongWorkQueue, checkpoint, get_queue, report
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

KIND = "train"
PROBE_STEPS = 20  # the job's own pace is read at its first snapshot at or past this many steps


def own_pace(snap: TrainingSnapshot) -> float:
    """Seconds per step a run has taken so far (its training time, pauses and snapshots excluded)."""
    return snap.elapsed_s / snap.step if snap.step > 0 else 0.0


@dataclass(frozen=True)
class JobProgress:
    """A consistent copy of a job's state for the page (plain data; snapshots are shared, immutable).

    ``status``: queued | running | paused | done | stopped | failed; ``queue_position``: 1 = next (0 when not
    queued); ``head_scores``: per snapshot ``[layers, heads]`` overlap with the task's ideal pattern (empty when
    it has none); ``error``: why it failed or why the server stopped it; ``threads``: torch threads it trains
    with; ``estimate``: the server's estimate at Start; ``wait_s``: while queued, seconds until it starts;
    ``pace``: seconds per step measured on its own first steps (0 before); ``notice``: why it will stop early.
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
    pace: float = 0.0
    notice: str = ""

    @property
    def step(self) -> int:
        return self.snapshots[-1].step if self.snapshots else 0

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class Job:
    """One training run, a job on the queue. Create through :meth:`JobManager.submit`."""

    def __init__(self, session_id: str, settings: JobSettings, manager: JobManager, estimate: Estimate) -> None:
        self.session_id, self.settings, self.estimate, self.manager = session_id, settings, estimate, manager
        self.task = build_task(settings.task)
        self.model = build_model(settings, self.task)  # the job's own model, never a shared one
        self.n_params = sum(p.numel() for p in self.model.parameters())
        self.handle: LongJob | None = None
        self._queued = threading.Event()  # set once ``handle`` is
        self._lock = threading.Lock()
        self._snapshots: list[TrainingSnapshot] = []
        self._scores: list[np.ndarray] = []
        self._times: list[tuple[float, float]] = []  # (perf_counter, process_time) as each snapshot arrived
        self._device, self._threads, self._pace, self._notice, self._stop_at = "", 0, 0.0, "", settings.steps

    @property
    def thread(self) -> threading.Thread | None:
        """The worker thread that trains it (None while queued)."""
        return self.handle.thread if self.handle else None

    @property
    def last_heartbeat(self) -> float:
        return self.handle.last_heartbeat if self.handle else 0.0

    @property
    def status(self) -> str:
        return self.progress().status

    def progress(self) -> JobProgress:
        """The job's state now (cheap: copies two lists of references)."""
        queue = self.manager.queue
        with queue.lock:
            now = queue.status_of(self.handle)
        error = ""
        if now.status == "failed":
            error = f"{type(now.error).__name__}: {now.error}"
        elif now.status == "stopped" and now.reason not in (CANCELLED, REPLACED):
            error = now.reason if now.reason.startswith("stopped by") else f"stopped by the server: {now.reason}"
        with self._lock:
            return JobProgress(
                now.status,
                now.position,
                self.settings,
                tuple(self._snapshots),
                tuple(self._scores),
                self._device,
                error,
                self.n_params,
                self._threads,
                self.estimate,
                now.wait_s,
                self._pace,
                self._notice,
            )

    def seconds_left(self, held: float) -> float:
        """Estimated seconds until it ends: its steps left × the estimated step time, never past its deadline."""
        if self.handle is not None and self.handle.control.is_stopped:
            return 0.0
        with self._lock:
            done = self._snapshots[-1].step if self._snapshots else 0
        left = self.estimate.per_step * max(0, self._stop_at - done)
        return max(0.0, min(left, self.estimate.deadline - held))

    def snapshot_times(self) -> list[tuple[float, float]]:
        """``(time.perf_counter(), time.process_time())`` as each snapshot arrived (for benchmarks)."""
        with self._lock:
            return list(self._times)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job has ended; True if it has."""
        self._queued.wait(timeout)
        return self.handle is not None and self.handle.done.wait(timeout)

    # ---- in the queue's worker thread ----

    def work(self) -> None:
        import torch

        from engine.families.transformer.adapter import trace_own
        from engine.training.loop import TrainConfig, resolve_device, train
        from engine.training.tasks import pattern_score

        self._queued.wait()
        assert self.handle is not None
        s, task, causal, control = self.settings, self.task, self.settings.causal, self.handle.control
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
            self._device = resolve_device(s.device).type
            self._threads = torch.get_num_threads()  # per thread: the worker's own setting, not the caller's
        ideal, rows = task.ideal_pattern(), task.ideal_rows()

        def forward(model, inputs):
            return model(inputs, causal=causal, attn_impl="sdpa")  # (B, T, V)

        def trace(model, ids, tokens):
            return trace_own(model, ids, tokens, model_id=f"train:{task.name}", causal=causal)

        for snap in train(self.model, task, config, control, forward_fn=forward, trace_fn=trace):
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
            report(Step(snap.step, s.steps, f"step {snap.step:,} of {s.steps:,}"))
            self._keep_to_budget(snap)
        if self._snapshots[-1].stopped:
            checkpoint()  # raises JobStopped with the queue's reason

    def _keep_to_budget(self, snap: TrainingSnapshot) -> None:
        """At the first snapshot past :data:`PROBE_STEPS`, project the run at its own pace; stop it at the steps
        that fit when it would not."""
        s, budget = self.settings, self.estimate.budget
        if not self._pace and snap.step >= min(PROBE_STEPS, s.steps) and not snap.final:
            pace = self.manager.pace(snap)
            if pace > 0 and pace * s.steps > budget.max_seconds:
                fit = max(snap.step, Estimate(per_step=pace, steps=s.steps, budget=budget).max_steps)
                notice = (
                    f"at its own pace on this server now ({pace * 1000:,.0f} ms a step over its first "
                    f"{snap.step:,} steps) {s.steps:,} steps would take about {about(pace * s.steps)}, over the "
                    f"limit of {about(budget.max_seconds)} per job: it stops at step {fit:,}"
                )
                with self._lock:
                    self._notice, self._stop_at = notice, fit
            with self._lock:
                self._pace = pace or -1.0  # measured (-1: not measurable; no second look)
        if snap.step >= self._stop_at and not snap.final:
            self.manager.queue.stop(self.handle, f"stopped by the server: {self._notice}; what it learned is kept")


class JobManager:
    """Train live's jobs on a :class:`LongWorkQueue`: settings checked against the budget, one job per session.

    Args:
        max_running: with no ``queue``, the workers of the manager's own queue (tests); else the shared one's.
        heartbeat_timeout: seconds without a heartbeat after which a job without an ``alive`` check is stopped.
        threads, reap_every, grace, clock: the own queue's (see :class:`LongWorkQueue`).
        budget: limits on a job's time (default: the queue's ``max_seconds``, the documented margins).
        estimator: validated settings → seconds per step (default: a :class:`StepTimer`; tests pass a fake).
        pace: a snapshot → the run's own seconds per step (default :func:`own_pace`; tests inject a step cost).
        queue: the queue to use (default: a new one; :func:`get_manager` passes the server's).
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
        pace: Callable[[TrainingSnapshot], float] = own_pace,
        queue: LongWorkQueue | None = None,
    ) -> None:
        self.queue = queue or LongWorkQueue(
            workers=max_running, threads=threads, reap_every=reap_every, grace=grace, clock=clock
        )
        self._own_queue = queue is None
        self.heartbeat_timeout, self.pace, self.clock = heartbeat_timeout, pace, self.queue.clock
        self.budget = budget or TimeBudget(max_seconds=self.queue.max_seconds)
        self.estimator = estimator or StepTimer(threads=self.queue.threads)
        self._lock = threading.RLock()
        self._jobs: dict[str, Job] = {}

    @property
    def max_running(self) -> int:
        return self.queue.workers

    @max_running.setter
    def max_running(self, value: int) -> None:
        self.queue.workers = value

    def submit(
        self, session_id: str, settings: Mapping[str, Any] | JobSettings, alive: Callable[[], bool] | None = None
    ) -> Job:
        """Validate ``settings``, check their estimated time, and queue a job for ``session_id``, stopping and
        replacing the session's previous one (also when two submits race). Refused settings change nothing.

        ``alive``: optional "is the session still connected?" check (thread-safe); with it the job keeps training
        while the session is on another page (no heartbeats) and stops ``grace`` seconds after it disconnects.

        Raises:
            JobSettingsError: invalid settings, or over the time budget (the message suggests what fits).
            ValueError: an empty session id.
        """
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("a job needs a session id")
        estimate = self.estimate(settings)
        if not estimate.fits:
            raise JobSettingsError(estimate.refusal())
        job = Job(session_id, validate_settings(settings), self, estimate)
        with self._lock:  # one step: no moment with two jobs of one session, whoever else submits
            old = self._jobs.get(session_id)
            job.handle = self.queue.enqueue(
                session_id,
                KIND,
                job.work,
                key=object(),
                estimate_s=estimate.seconds,
                alive=alive,
                heartbeat_s=self.heartbeat_timeout,
                deadline_s=estimate.deadline,
                overrun=estimate.overrun_notice,
                left=job.seconds_left,
            )
            job._queued.set()
            self._jobs[session_id] = job
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
        self.queue.heartbeat(session_id)

    def pause(self, session_id: str) -> None:
        self.queue.pause(session_id, KIND)

    def resume(self, session_id: str) -> None:
        self.queue.resume(session_id, KIND)

    def stop(self, session_id: str) -> None:
        """Ask the session's job to stop (it keeps its snapshots and model)."""
        self.queue.cancel(session_id, KIND)

    def discard(self, session_id: str, timeout: float = 10.0) -> None:
        """Stop the session's job, wait for it, and forget it (the page's Reset)."""
        with self._lock:
            job = self._jobs.pop(session_id, None)
        if job is not None:
            self.queue.stop(job.handle, CANCELLED)
            job.wait(timeout)

    def queue_position(self, job: Job) -> int:
        """1 for the next job to start, 2 after it, …; 0 when ``job`` is not waiting."""
        return job.progress().queue_position

    def active_count(self) -> int:
        """This manager's jobs queued, training or paused."""
        with self._lock:
            return sum(job.progress().status in ACTIVE for job in self._jobs.values())

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every job and wait for them (tests, server exit); the manager's own queue ends its threads."""
        with self._lock:
            jobs = list(self._jobs.values())
            self._jobs.clear()
        for job in jobs:
            self.queue.stop(job.handle, CANCELLED)
        for job in jobs:
            job.wait(timeout)
        if self._own_queue:
            self.queue.shutdown(timeout)


_manager: JobManager | None = None
_manager_lock = threading.Lock()


def get_manager() -> JobManager:
    """Train live's jobs on the server's one long-work queue (created on first use)."""
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = JobManager(queue=get_queue())
        return _manager
