"""The server's lane for long work: a few low-priority worker threads, a FIFO queue, a time budget per job.

Interactive forward passes (a page rerun's trace) run in the page's own thread, at normal priority.
Everything that takes seconds instead (fine-tuning, timing layers, a decoder writing many tokens)
goes through one :class:`LongWorkQueue` per process, so a class pressing the same button at once
queues up instead of taking every core from the students who are only reading::

    queue = get_queue()
    queue.submit(session_id, "finetune", work, key=(200, 1e-3), estimate_s=6.0)
    status = queue.status(session_id, "finetune")   # queued: position and expected wait; running: progress
    queue.cancel(session_id, "finetune")

The rules:

- At most ``workers`` jobs run at once (:func:`default_workers`: ``AP_LONG_JOBS``, else half the cores,
  at least 1); the rest wait in submission order. Worker threads exist only while there is work.
- Every worker thread runs at a lower CPU priority (:func:`background_thread`: nice +10 on Linux, torch
  at one intra-op thread), so the OS scheduler prefers the page threads; the Train page's
  :class:`engine.training.jobs.JobManager` runs its training threads the same way.
- One job per session and kind: a new request takes the place of the session's queued one (which is
  reported as stopped) and stops its running one at its next yield point; the same request (equal
  ``key``) while the first is queued or running is that job, not a second one.
- A job is a callable. If it returns a generator, every item it yields is a progress update and a
  yield point, and the generator's return value is the result; otherwise the return value is the
  result. Code deeper down (a decoding loop) reports and yields through :func:`checkpoint`.
- At each yield point a job is stopped (status ``stopped``, with the reason) when it was cancelled or
  replaced, when its session has been gone for ``grace`` seconds, or when it has run longer than
  ``max_seconds`` (:func:`default_max_seconds`: ``AP_TRAIN_MAX_SECONDS``, default 300). Work without
  yield points runs to its end.
- The latest job of each (session, kind) stays readable, result included, for the ``keep`` most
  recent pairs. After every job the worker hands freed memory back to the OS (:func:`release_memory`).

No Streamlit here; ``app/runtime/long_work.py`` is the app's side.
"""

from __future__ import annotations

import atexit
import heapq
import inspect
import itertools
import logging
import math
import os
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from engine.memory import release_memory, release_memory_soon

log = logging.getLogger(__name__)

LOW_PRIORITY_NICE = 10  # what background threads add to their nice value (Linux: per thread)
DEFAULT_MAX_SECONDS = 300  # seconds one job may run (AP_TRAIN_MAX_SECONDS overrides)
EXIT_WAIT_S = 2.0  # at server exit, seconds to wait for running jobs to reach a yield point
ACTIVE = ("queued", "running")
FINISHED = ("done", "stopped", "failed")
CANCELLED = "cancelled"
REPLACED = "replaced by a newer request"
GONE = "the page was closed"


# ---- the server's settings ---------------------------------------------------------------------------------


def cores() -> int:
    """CPU cores this process may run on (its affinity where the OS says, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_workers() -> int:
    """Long jobs that may run at once: ``AP_LONG_JOBS`` if set (a whole number > 0), else half the cores, at
    least 1 (a 2-core server runs one, the other core stays free for page reruns)."""
    env = os.environ.get("AP_LONG_JOBS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    if env:
        log.warning("AP_LONG_JOBS=%r is not a whole number > 0; using half the cores", env)
    return max(1, cores() // 2)


def default_max_seconds() -> float:
    """Seconds one job may take: ``AP_TRAIN_MAX_SECONDS`` if set (a number > 0), else 300."""
    env = os.environ.get("AP_TRAIN_MAX_SECONDS", "")
    try:
        value = float(env) if env else DEFAULT_MAX_SECONDS
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        log.warning("AP_TRAIN_MAX_SECONDS=%r is not a number of seconds > 0; using %d", env, DEFAULT_MAX_SECONDS)
        return DEFAULT_MAX_SECONDS
    return value


def expected_start(running_left: Sequence[float], ahead: Sequence[float], slots: int) -> float:
    """Seconds until a queued job starts.

    Args:
        running_left: estimated seconds each running job has left.
        ahead: estimated seconds of each job ahead in the queue, in queue order.
        slots: jobs that may run at once.

    Returns:
        When the job gets a slot, if every estimate holds: each busy slot frees up when its job ends,
        the jobs ahead take the earliest free slot in turn, the job starts at the next one.

    Example:
        >>> expected_start([120.0], [60.0], slots=1)  # one running (2 min left), one queued ahead
        180.0
    """
    free = sorted(max(0.0, t) for t in running_left)  # when each busy slot frees up
    free += [0.0] * max(0, slots - len(free))  # idle slots
    heapq.heapify(free)
    for seconds in ahead:
        heapq.heappush(free, heapq.heappop(free) + max(0.0, seconds))
    return free[0]


def about(seconds: float) -> str:
    """A duration for people: ``"40 s"``, ``"5 min"``, ``"10.4 h"``."""
    if not math.isfinite(seconds):
        return "forever"
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


# ---- what a background thread does to itself ---------------------------------------------------------------


def lower_priority(nice: int = LOW_PRIORITY_NICE) -> bool:
    """Raise the calling thread's nice value to ``nice`` (Linux keeps it per thread; other threads keep
    theirs). A thread already nicer is left alone (an unprivileged process cannot lower it again).

    Returns:
        True when the thread now runs at ``nice`` or lower priority; False where the OS does not allow it.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        tid = threading.get_native_id()
        if os.getpriority(os.PRIO_PROCESS, tid) < nice:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        return True
    except (AttributeError, OSError):
        log.debug("could not lower the priority of thread %s", threading.current_thread().name, exc_info=True)
        return False


def background_thread(threads: int = 1, nice: int = LOW_PRIORITY_NICE) -> None:
    """Make the calling thread a background worker: lower CPU priority, torch at ``threads`` intra-op threads
    (torch keeps that per thread, so the page threads are not changed)."""
    lower_priority(nice)
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


# ---- progress and status -----------------------------------------------------------------------------------


class JobStopped(Exception):
    """Raised at a yield point of a job that must stop (cancelled, replaced, over its budget, session gone)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Step:
    """A plain progress update: ``done`` of ``total`` units, and a line for people."""

    done: float
    total: float
    text: str = ""

    @property
    def fraction(self) -> float:
        return min(1.0, max(0.0, self.done / self.total)) if self.total > 0 else 0.0


@dataclass(frozen=True)
class JobStatus:
    """A consistent copy of one job's state (plain data; the updates and result are shared, not copied).

    Attributes:
        job_id: unique per process (a replaced job has another).
        kind: what the job does (``"finetune"``, ``"write"``, …).
        key: the request it answers (equal keys are the same request).
        status: queued | running | done | stopped | failed.
        position: 1 = next to start; 0 when not queued.
        wait_s: while queued, the expected seconds until it starts (None otherwise).
        estimate_s: how long it is expected to run.
        elapsed_s: seconds it has run (0 while queued).
        updates: what it yielded so far (the latest ``max_updates``).
        result: its result once done.
        error: the exception it failed with.
        reason: why it was stopped ("" otherwise).
    """

    job_id: int
    kind: str
    key: Hashable
    status: str
    position: int
    wait_s: float | None
    estimate_s: float
    elapsed_s: float
    updates: tuple[Any, ...]
    result: Any = None
    error: BaseException | None = None
    reason: str = ""

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def latest(self) -> Any:
        """The last update, or None."""
        return self.updates[-1] if self.updates else None

    @property
    def fraction(self) -> float:
        """How far it has got: the latest update's own ``fraction`` where it has one, else the time it has run
        against its estimate (never shown as finished before it is)."""
        own = getattr(self.latest, "fraction", None)
        if isinstance(own, (int, float)) and math.isfinite(own):
            return min(1.0, max(0.0, float(own)))
        if self.status == "done":
            return 1.0
        return min(0.95, self.elapsed_s / self.estimate_s) if self.estimate_s > 0 else 0.0

    @property
    def text(self) -> str:
        """The latest update's ``text`` ("" when it has none)."""
        return str(getattr(self.latest, "text", "") or "")


class _Job:
    """One job's mutable state; every field is read and written under its queue's lock."""

    def __init__(
        self,
        job_id: int,
        session_id: str,
        kind: str,
        key: Hashable,
        work: Callable[[], Any],
        hint_s: float,
        estimate_s: float,
        alive: Callable[[], bool] | None,
        max_updates: int,
    ) -> None:
        self.job_id, self.session_id, self.kind, self.key = job_id, session_id, kind, key
        self.work: Callable[[], Any] | None = work
        self.hint_s = hint_s  # the caller's estimate
        self.estimate_s = estimate_s  # … corrected by how long this kind's jobs really took
        self.alive = alive
        self.status = "queued"
        self.updates: deque[Any] = deque(maxlen=max_updates)
        self.result: Any = None
        self.error: BaseException | None = None
        self.reason = ""
        self.stop_reason: str | None = None  # set by cancel/replace: the job stops at its next yield point
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.gone_since: float | None = None
        self.alive_checked_at = -math.inf
        self.done = threading.Event()

    def elapsed(self, now: float) -> float:
        if self.started_at is None:
            return 0.0
        return (self.ended_at if self.ended_at is not None else now) - self.started_at


_current = threading.local()  # .job and .queue while a worker runs a job


def checkpoint(update: Any = None) -> None:
    """A yield point for code running inside a job: record ``update`` (if any) as its progress, and raise
    :class:`JobStopped` if the job must stop. Does nothing outside a job (the interactive path)."""
    job = getattr(_current, "job", None)
    if job is not None:
        _current.queue._checkpoint(job, update)


# ---- the queue ---------------------------------------------------------------------------------------------


class LongWorkQueue:
    """Long work for the whole process: at most ``workers`` jobs at once, FIFO, one per session and kind.

    Args:
        workers: jobs running at once (default :func:`default_workers`).
        max_seconds: the time budget per job (default :func:`default_max_seconds`).
        keep: (session, kind) pairs whose latest job stays readable (the oldest finished ones go first).
        max_updates: progress updates kept per job (the latest).
        grace: seconds a job's ``alive()`` may say no (a reconnecting browser) before the job is stopped.
        threads: torch intra-op threads in the workers.
        nice: the workers' nice value.
        clock: monotonic seconds (tests pass a fake one).
    """

    def __init__(
        self,
        workers: int | None = None,
        max_seconds: float | None = None,
        keep: int = 256,
        max_updates: int = 1000,
        grace: float = 3.0,
        threads: int = 1,
        nice: int = LOW_PRIORITY_NICE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.workers = workers or default_workers()
        self.max_seconds = max_seconds or default_max_seconds()
        self.keep, self.max_updates, self.grace = keep, max_updates, grace
        self.threads, self.nice, self.clock = threads, nice, clock
        self._lock = threading.RLock()
        self._queue: list[_Job] = []
        self._running: set[_Job] = set()
        self._latest: OrderedDict[tuple[str, str], _Job] = OrderedDict()
        self._pace: dict[str, float] = {}  # kind → how long its jobs ran against their estimates (learned)
        self._threads: set[threading.Thread] = set()
        self._ids = itertools.count(1)
        self._names = itertools.count(1)

    # ---- what a page asks ----

    def submit(
        self,
        session_id: str,
        kind: str,
        work: Callable[[], Any],
        *,
        key: Hashable = None,
        estimate_s: float = 10.0,
        alive: Callable[[], bool] | None = None,
    ) -> JobStatus:
        """Queue ``work`` for ``session_id``: the session's job of this ``kind`` from now on.

        Args:
            session_id: the owner.
            kind: what it does; a session has one job per kind.
            work: a callable; its return value is the result, or a generator whose items are progress
                updates and whose return value is the result.
            key: the request; while the session's job of this kind with an equal key is queued or running,
                that job is returned and nothing new is queued.
            estimate_s: expected seconds (corrected by how long this kind's jobs really took).
            alive: optional thread-safe "is the session still there?"; a job whose session is gone is
                dropped from the queue, or stopped at its next yield point, after ``grace`` seconds.

        Raises:
            ValueError: an empty session id or kind.
        """
        if not session_id or not kind:
            raise ValueError("a long job needs a session id and a kind")
        with self._lock:
            old = self._latest.get((session_id, kind))
            if old is not None and old.status in ACTIVE and old.key == key:
                return self._status(old)
            hint = float(estimate_s) if math.isfinite(estimate_s) and estimate_s > 0 else 10.0
            job = _Job(
                next(self._ids),
                session_id,
                kind,
                key,
                work,
                hint,
                hint * self._pace.get(kind, 1.0),
                alive,
                self.max_updates,
            )
            self._enqueue(job, old)
            self._latest[(session_id, kind)] = job
            self._latest.move_to_end((session_id, kind))
            self._forget_old()
            self._spawn()
            return self._status(job)

    def status(self, session_id: str, kind: str) -> JobStatus | None:
        """The session's latest job of ``kind`` (queued, running or finished), or None."""
        with self._lock:
            job = self._latest.get((session_id, kind))
            return None if job is None else self._status(job)

    def wait(self, session_id: str, kind: str, timeout: float) -> JobStatus | None:
        """:meth:`status` once the session's job of ``kind`` has ended, or after ``timeout`` seconds."""
        with self._lock:
            job = self._latest.get((session_id, kind))
        if job is not None:
            job.done.wait(timeout)
        return self.status(session_id, kind)

    def cancel(self, session_id: str, kind: str) -> None:
        """Stop the session's job of ``kind``: a queued one at once, a running one at its next yield point."""
        with self._lock:
            job = self._latest.get((session_id, kind))
            if job is not None:
                self._stop(job, CANCELLED)

    def queue_length(self) -> int:
        """Jobs waiting to start."""
        with self._lock:
            return len(self._queue)

    def running_count(self) -> int:
        """Jobs running now."""
        with self._lock:
            return len(self._running)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every job, wait for the workers and forget every job (tests, server exit). The queue takes
        new work afterwards."""
        with self._lock:
            for job in list(self._queue) + list(self._running):
                self._stop(job, CANCELLED)
            workers = list(self._threads)
        for thread in workers:
            thread.join(timeout)
        with self._lock:
            self._latest.clear()

    # ---- internals: queue ----

    def _enqueue(self, job: _Job, old: _Job | None) -> None:
        """Put ``job`` in line: in ``old``'s place if that one was still queued, else at the end."""
        if old is not None and old.status == "queued":
            self._queue[self._queue.index(old)] = job
            self._finish(old, "stopped", reason=REPLACED)
            return
        if old is not None and old.status == "running":
            old.stop_reason = old.stop_reason or REPLACED
        self._queue.append(job)

    def _stop(self, job: _Job, reason: str) -> None:
        if job.status == "queued":
            self._queue.remove(job)
            self._finish(job, "stopped", reason=reason)
        elif job.status == "running":
            job.stop_reason = job.stop_reason or reason

    def _forget_old(self) -> None:
        """Keep at most ``keep`` (session, kind) pairs: the oldest finished ones go."""
        extra = len(self._latest) - self.keep
        for pair in [p for p, j in self._latest.items() if j.status in FINISHED][: max(0, extra)]:
            del self._latest[pair]

    def _spawn(self) -> None:
        """Start workers while jobs wait and fewer than ``workers`` run (a worker ends when the queue is empty)."""
        while len(self._threads) < self.workers and len(self._threads) - len(self._running) < len(self._queue):
            thread = threading.Thread(target=self._work, name=f"long-work-{next(self._names)}", daemon=True)
            self._threads.add(thread)
            thread.start()

    def _status(self, job: _Job) -> JobStatus:
        now = self.clock()
        position = self._queue.index(job) + 1 if job.status == "queued" else 0
        wait = None
        if position:
            running = [max(0.0, j.estimate_s - j.elapsed(now)) for j in self._running]
            wait = expected_start(running, [j.estimate_s for j in self._queue[: position - 1]], self.workers)
        return JobStatus(
            job_id=job.job_id,
            kind=job.kind,
            key=job.key,
            status=job.status,
            position=position,
            wait_s=wait,
            estimate_s=job.estimate_s,
            elapsed_s=job.elapsed(now),
            updates=tuple(job.updates),
            result=job.result,
            error=job.error,
            reason=job.reason,
        )

    def _finish(
        self, job: _Job, status: str, result: Any = None, error: BaseException | None = None, reason: str = ""
    ) -> None:
        job.status, job.result, job.error, job.reason = status, result, error, reason
        job.ended_at = self.clock()
        job.work = None  # whatever the work closed over (a model, a prompt) is not kept with the result
        self._running.discard(job)
        if status == "done" and job.started_at is not None:
            ratio = max(0.1, min(10.0, job.elapsed(job.ended_at) / job.hint_s))
            self._pace[job.kind] = 0.5 * self._pace.get(job.kind, 1.0) + 0.5 * ratio
        job.done.set()

    # ---- internals: the worker threads ----

    def _next(self) -> _Job | None:
        """The next job to run, marked running; None (and this worker leaves) when the queue is empty."""
        with self._lock:
            now = self.clock()
            while self._queue:
                job = self._queue.pop(0)
                if self._gone(job, now, grace=0.0):
                    self._finish(job, "stopped", reason=GONE)
                    continue
                job.status, job.started_at = "running", now
                self._running.add(job)
                return job
            self._threads.discard(threading.current_thread())
            return None

    def _work(self) -> None:
        try:
            background_thread(self.threads, self.nice)
        except Exception:  # noqa: BLE001 — the thread must reach its job loop (at normal priority)
            log.warning("a long-work thread could not lower its priority", exc_info=True)
        try:
            while (job := self._next()) is not None:
                self._run(job)
                release_memory()
                release_memory_soon()  # and again once the pages have drawn the job's result
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _run(self, job: _Job) -> None:
        _current.job, _current.queue = job, self
        try:
            work = job.work
            assert work is not None
            out = work()
            result = _drain(out) if inspect.isgenerator(out) else out
        except JobStopped as stop:
            with self._lock:
                self._finish(job, "stopped", reason=stop.reason)
        except Exception as err:  # noqa: BLE001 — a job may raise anything: shown on its page, the thread lives
            log.debug("long job %s/%s failed", job.kind, job.job_id, exc_info=True)
            with self._lock:
                self._finish(job, "failed", error=err)
        else:
            with self._lock:
                self._finish(job, "done", result=result)
        finally:
            _current.job = _current.queue = None

    def _checkpoint(self, job: _Job, update: Any) -> None:
        now = self.clock()
        with self._lock:
            if update is not None:
                job.updates.append(update)
            reason = job.stop_reason
        if reason is None and job.started_at is not None and now - job.started_at > self.max_seconds:
            reason = f"it ran past the server's limit of {about(self.max_seconds)} per job"
        if reason is None and now - job.alive_checked_at >= 1.0 and self._gone(job, now, self.grace):
            reason = GONE
        if reason is not None:
            raise JobStopped(reason)

    def _gone(self, job: _Job, now: float, grace: float) -> bool:
        """True when ``job``'s session has been away ``grace`` seconds (0: away now)."""
        if job.alive is None:
            return False
        job.alive_checked_at = now
        try:
            here = bool(job.alive())
        except Exception:  # noqa: BLE001 — the page's liveness callback may raise anything: keep the job
            return False
        if here:
            job.gone_since = None
            return False
        job.gone_since = now if job.gone_since is None else job.gone_since
        return now - job.gone_since >= grace


def _drain(gen: Iterator[Any]) -> Any:
    """Run a job's generator to its end, each item a progress update and a yield point; its return value."""
    try:
        while True:
            checkpoint(next(gen))
    except StopIteration as end:
        return end.value
    finally:
        gen.close()  # type: ignore[attr-defined]


_queue: LongWorkQueue | None = None
_queue_lock = threading.Lock()


def get_queue() -> LongWorkQueue:
    """The process's long-work queue (created on first use, from the ``AP_*`` settings)."""
    global _queue
    with _queue_lock:
        if _queue is None:
            _queue = LongWorkQueue()
            atexit.register(_queue.shutdown, EXIT_WAIT_S)  # stop at a yield point, not inside torch at exit
        return _queue
