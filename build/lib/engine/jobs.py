"""The server's one lane for long work: a few low-priority worker threads, a FIFO queue, a time budget per job.

Interactive forward passes run in the page's own thread. Everything that takes seconds (Train live, fine-tuning,
timing layers, a decoder writing many tokens, Scaling's one more size) goes through one :class:`LongWorkQueue`
per process, so a class pressing the same button at once queues up instead of taking every core::

    queue = get_queue()
    queue.submit(session_id, "finetune", work, key=(200, 1e-3), estimate_s=6.0)
    status = queue.status(session_id, "finetune")   # queued: position and expected wait; running: progress
    queue.pause(session_id, "train"); queue.resume(...); queue.cancel(...); queue.heartbeat(session_id)

- At most ``workers`` jobs run at once (:func:`engine.job_limits.default_workers`), the rest wait in order, in
  low-priority threads that exist only while there is work (:func:`engine.job_limits.background_thread`).
- One job per session and kind: a new request replaces the queued one and stops the running one; an equal ``key``
  while the first is active is that job.
- A job is a callable; a generator's items are progress updates and yield points, its return value the result.
  Deeper code reports with :func:`report` and yields with :func:`checkpoint`; a job's :class:`Control` pauses,
  resumes and stops it, and long loops (training) read it between steps.
- At its next yield point a job stops when cancelled or replaced, past its deadline (``deadline_s``, default
  ``AP_TRAIN_MAX_SECONDS``; a paused job keeps its slot and its time counts), or when its session is gone
  (``alive()`` false for ``grace`` seconds or, without ``alive``, no heartbeat for ``heartbeat_s``); a reaper
  thread checks queued and paused jobs too. The latest job of each (session, kind) stays readable for the ``keep``
  most recent pairs. ``app/runtime/long_work.py`` is the app's side.
"""

from __future__ import annotations

import atexit
import inspect
import itertools
import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from engine.job_limits import (
    LOW_PRIORITY_NICE,
    about,
    background_thread,
    default_max_seconds,
    default_workers,
    expected_start,
)
from engine.job_records import ACTIVE, CANCELLED, FINISHED, GONE, REPLACED, SILENT, Control, JobStatus, JobStopped
from engine.memory import release_memory, release_memory_soon

log = logging.getLogger(__name__)

EXIT_WAIT_S = 2.0  # at server exit, seconds to wait for running jobs to reach a yield point


class LongJob:
    """One job's mutable record; every field is read and written under its queue's lock. ``done`` is set when it
    ends, ``thread`` is the worker that runs it (None while queued), ``control`` pauses and stops it."""

    def __init__(self, job_id: int, session_id: str, kind: str, key: Hashable, work: Callable[[], Any]) -> None:
        self.job_id, self.session_id, self.kind, self.key = job_id, session_id, kind, key
        self.work: Callable[[], Any] | None = work
        self.hint_s = self.estimate_s = 10.0  # the caller's estimate; … corrected by how long this kind took
        self.deadline_s = math.inf
        self.overrun: Callable[[float], str] | None = None  # held seconds → why it was stopped
        self.left: Callable[[float], float] | None = None  # held seconds → seconds it has left
        self.alive: Callable[[], bool] | None = None
        self.heartbeat_s: float | None = None
        self.control = Control()
        self.status = "queued"
        self.updates: deque[Any] = deque()
        self.result: Any = None
        self.error: BaseException | None = None
        self.reason = ""
        self.stop_reason: str | None = None  # set by a stop: it ends at its next yield point
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.last_heartbeat = 0.0
        self.gone_since: float | None = None
        self.thread: threading.Thread | None = None
        self.done = threading.Event()

    def elapsed(self, now: float) -> float:
        if self.started_at is None:
            return 0.0
        return (self.ended_at if self.ended_at is not None else now) - self.started_at


_current = threading.local()  # .job and .queue while a worker runs a job


def report(update: Any) -> None:
    """Record ``update`` as the running job's progress (nothing outside a job)."""
    job = getattr(_current, "job", None)
    if job is not None:
        with _current.queue.lock:
            job.updates.append(update)


def checkpoint(update: Any = None) -> None:
    """A yield point for code running inside a job: record ``update`` (if any), wait while paused, and raise
    :class:`JobStopped` if the job must stop. Does nothing outside a job (the interactive path)."""
    job = getattr(_current, "job", None)
    if job is None:
        return
    if update is not None:
        report(update)
    job.control.wait_if_paused()
    _current.queue.look(job)


class LongWorkQueue:
    """Long work for the whole process: at most ``workers`` jobs at once, FIFO, one per session and kind.

    ``workers`` and ``max_seconds`` default to the ``AP_*`` settings; ``keep``: (session, kind) pairs whose latest
    job stays readable; ``max_updates``: progress updates kept per job; ``grace``: seconds a job's ``alive()`` may
    say no (a reconnecting browser); ``threads``, ``nice``: the workers' torch threads and nice value;
    ``reap_every``: seconds between the reaper's rounds; ``clock``: monotonic seconds (tests pass a fake one).
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
        reap_every: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.workers = workers or default_workers()
        self.max_seconds = max_seconds or default_max_seconds()
        self.keep, self.max_updates, self.grace = keep, max_updates, grace
        self.threads, self.nice, self.reap_every, self.clock = threads, nice, reap_every, clock
        self.lock = threading.RLock()
        self._queue: list[LongJob] = []
        self._running: set[LongJob] = set()
        self._latest: OrderedDict[tuple[str, str], LongJob] = OrderedDict()
        self._pace: dict[str, float] = {}  # kind → how long its jobs ran against their estimates (learned)
        self._threads: set[threading.Thread] = set()
        self._reaper: threading.Thread | None = None
        self._ids = itertools.count(1)
        self._names = itertools.count(1)

    # ---- what a page asks ----

    def submit(self, session_id: str, kind: str, work: Callable[[], Any], **options: Any) -> JobStatus:
        """Queue ``work`` as the session's job of ``kind``; its status (see :meth:`enqueue` for the options)."""
        job = self.enqueue(session_id, kind, work, **options)
        with self.lock:
            return self.status_of(job)

    def enqueue(
        self,
        session_id: str,
        kind: str,
        work: Callable[[], Any],
        *,
        key: Hashable = None,
        estimate_s: float = 10.0,
        alive: Callable[[], bool] | None = None,
        heartbeat_s: float | None = None,
        deadline_s: float | None = None,
        overrun: Callable[[float], str] | None = None,
        left: Callable[[float], float] | None = None,
    ) -> LongJob:
        """Queue ``work`` for ``session_id``: the session's job of this ``kind`` from now on.

        Args:
            key: the request; while the session's job of this kind with an equal key is active, that job is
                returned and nothing new is queued.
            estimate_s: expected seconds (corrected by how long this kind's jobs really took).
            alive: thread-safe "is the session still there?"; without it, ``heartbeat_s`` (if given) decides.
            deadline_s: seconds it may hold its slot (default ``max_seconds``); ``overrun(held)`` says why it
                was stopped past it.
            left: held seconds → seconds it has left (default: its estimate less its time), for queue waits.
        Raises ValueError for an empty session id or kind.
        """
        if not session_id or not kind:
            raise ValueError("a long job needs a session id and a kind")
        with self.lock:
            old = self._latest.get((session_id, kind))
            if old is not None and old.status in ACTIVE and old.key == key:
                return old
            job = LongJob(next(self._ids), session_id, kind, key, work)
            job.hint_s = float(estimate_s) if math.isfinite(estimate_s) and estimate_s > 0 else 10.0
            job.estimate_s = job.hint_s * self._pace.get(kind, 1.0)
            job.deadline_s = deadline_s or self.max_seconds
            job.overrun, job.left, job.alive, job.heartbeat_s = overrun, left, alive, heartbeat_s
            job.updates = deque(maxlen=self.max_updates)
            job.last_heartbeat = self.clock()
            if old is not None and old.status == "queued":  # the new one takes its place in line
                self._queue[self._queue.index(old)] = job
                self._finish(old, "stopped", reason=REPLACED)
            else:
                if old is not None:
                    self.stop(old, REPLACED)
                self._queue.append(job)
            self._latest[(session_id, kind)] = job
            self._latest.move_to_end((session_id, kind))
            extra = len(self._latest) - self.keep  # keep at most ``keep`` pairs: the oldest finished ones go
            for pair in [p for p, j in self._latest.items() if j.status in FINISHED][: max(0, extra)]:
                del self._latest[pair]
            self._spawn()
            return job

    def job(self, session_id: str, kind: str) -> LongJob | None:
        """The session's latest job record of ``kind``, or None."""
        with self.lock:
            return self._latest.get((session_id, kind))

    def status(self, session_id: str, kind: str) -> JobStatus | None:
        """The session's latest job of ``kind`` (queued, running or finished), or None."""
        with self.lock:
            job = self._latest.get((session_id, kind))
            return None if job is None else self.status_of(job)

    def wait(self, session_id: str, kind: str, timeout: float) -> JobStatus | None:
        """:meth:`status` once the session's job of ``kind`` has ended, or after ``timeout`` seconds."""
        job = self.job(session_id, kind)
        if job is not None:
            job.done.wait(timeout)
        return self.status(session_id, kind)

    def cancel(self, session_id: str, kind: str) -> None:
        """Stop the session's job of ``kind``: a queued one at once, a running one at its next yield point."""
        if (job := self.job(session_id, kind)) is not None:
            self.stop(job, CANCELLED)

    def pause(self, session_id: str, kind: str) -> None:
        """Pause the session's job of ``kind`` at its next yield point (it keeps its slot)."""
        if (job := self.job(session_id, kind)) is not None:
            job.control.pause()

    def resume(self, session_id: str, kind: str) -> None:
        if (job := self.job(session_id, kind)) is not None:
            job.control.resume()

    def heartbeat(self, session_id: str) -> None:
        """The session is still there (its page polls): keeps its jobs that have no ``alive`` check."""
        with self.lock:
            now = self.clock()
            for (session, _), job in self._latest.items():
                if session == session_id:
                    job.last_heartbeat = now

    def stop(self, job: LongJob, reason: str) -> None:
        """Stop ``job``: a queued one at once, a running one at its next yield point (the first reason holds)."""
        with self.lock:
            if job.status == "queued":
                self._queue.remove(job)
                self._finish(job, "stopped", reason=reason)
            elif job.status == "running":
                job.stop_reason = job.stop_reason or reason
                job.control.stop()

    def queue_length(self) -> int:
        return len(self._queue)  # jobs waiting to start

    def running_count(self) -> int:
        return len(self._running)  # jobs running now

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every job, wait for the threads and forget every job (tests, server exit)."""
        with self.lock:
            for job in list(self._queue) + list(self._running):
                self.stop(job, CANCELLED)
            threads = list(self._threads) + ([self._reaper] if self._reaper else [])
        for thread in threads:
            thread.join(timeout)
        with self.lock:
            self._latest.clear()

    def status_of(self, job: LongJob) -> JobStatus:
        """A copy of ``job``'s state now (call under :attr:`lock`)."""
        now = self.clock()
        position = self._queue.index(job) + 1 if job.status == "queued" else 0
        wait = None
        if position:
            running = [j.left(j.elapsed(now)) if j.left else j.estimate_s - j.elapsed(now) for j in self._running]
            wait = expected_start(running, [j.estimate_s for j in self._queue[: position - 1]], self.workers)
        status = "paused" if job.status == "running" and job.control.is_paused else job.status
        timing = (position, wait, job.estimate_s, job.elapsed(now))
        return JobStatus(
            job.job_id, job.kind, job.key, status, *timing, tuple(job.updates), job.result, job.error, job.reason
        )

    # ---- the checks at yield points and in the reaper ----

    def look(self, job: LongJob) -> None:
        """Raise :class:`JobStopped` if ``job`` must stop now (its worker's yield point)."""
        reason = self._why_stop(job, self.clock())
        if reason is not None:
            raise JobStopped(reason)

    def _why_stop(self, job: LongJob, now: float) -> str | None:
        with self.lock:
            if job.stop_reason is not None:
                return job.stop_reason
            held = job.elapsed(now)
            if job.started_at is not None and held > job.deadline_s:
                if job.overrun is not None:
                    return job.overrun(held)
                return f"it ran past the server's limit of {about(job.deadline_s)} per job"
            return self._gone(job, now)

    def _gone(self, job: LongJob, now: float, grace: float | None = None) -> str | None:
        """Why ``job``'s session counts as gone (None while it is there)."""
        silent = job.heartbeat_s is not None and now - job.last_heartbeat > job.heartbeat_s
        if job.alive is None:
            return SILENT if silent else None
        try:
            here = bool(job.alive())
        except Exception:  # noqa: BLE001 — the page's liveness callback may raise anything: heartbeats decide
            return SILENT if silent else None
        if here:
            job.gone_since = None
            return None
        job.gone_since = now if job.gone_since is None else job.gone_since
        return GONE if now - job.gone_since >= (self.grace if grace is None else grace) else None

    def _reap(self) -> None:
        """Stop the queued, running and paused jobs that must stop; end when no job is left."""
        while True:
            time.sleep(self.reap_every)
            now = self.clock()
            with self.lock:
                for job in list(self._queue) + list(self._running):
                    if job.stop_reason is None and (reason := self._why_stop(job, now)) is not None:
                        why = "it ran far past its estimate" if job.overrun else "it ran past the limit per job"
                        why = "its session went away" if reason in (GONE, SILENT) else why
                        log.warning("%s job %s stopped: %s", job.kind, job.job_id, why)
                        if job.status == "queued":
                            self._queue.remove(job)
                            self._finish(job, "stopped", reason=reason, now=now)
                        else:
                            self.stop(job, reason)
                if not self._queue and not self._running:
                    self._reaper = None
                    return

    def _spawn(self) -> None:
        """Start workers while jobs wait and fewer than ``workers`` run, and the reaper while jobs are active."""
        while len(self._threads) < self.workers and len(self._threads) - len(self._running) < len(self._queue):
            thread = threading.Thread(target=self._work, name=f"long-work-{next(self._names)}", daemon=True)
            self._threads.add(thread)
            thread.start()
        if self._reaper is None and (self._queue or self._running):
            self._reaper = threading.Thread(target=self._reap, name="long-work-reaper", daemon=True)
            self._reaper.start()

    def _finish(
        self,
        job: LongJob,
        status: str,
        result: Any = None,
        error: BaseException | None = None,
        reason: str = "",
        now: float | None = None,
    ) -> None:
        job.status, job.result, job.error, job.reason = status, result, error, reason
        job.ended_at = self.clock() if now is None else now
        job.work = None  # whatever the work closed over (a model, a prompt) is not kept with the result
        self._running.discard(job)
        if status == "done" and job.started_at is not None:
            ratio = max(0.1, min(10.0, job.elapsed(job.ended_at) / job.hint_s))
            self._pace[job.kind] = 0.5 * self._pace.get(job.kind, 1.0) + 0.5 * ratio
        job.done.set()

    def _next(self) -> LongJob | None:
        """The next job to run, marked running; None (and this worker leaves) when the queue is empty."""
        with self.lock:
            now = self.clock()
            while self._queue:
                job = self._queue.pop(0)
                if job.alive is not None and self._gone(job, now, grace=0.0):
                    self._finish(job, "stopped", reason=GONE)
                    continue
                job.status, job.started_at, job.thread = "running", now, threading.current_thread()
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
            with self.lock:
                self._threads.discard(threading.current_thread())

    def _run(self, job: LongJob) -> None:
        _current.job, _current.queue = job, self
        try:
            assert job.work is not None
            out = job.work()
            result = _drain(out) if inspect.isgenerator(out) else out
        except JobStopped as stop:
            with self.lock:
                self._finish(job, "stopped", reason=stop.reason)
        except Exception as err:  # noqa: BLE001 — a job may raise anything: shown on its page, the thread lives
            log.debug("long job %s/%s failed", job.kind, job.job_id, exc_info=True)
            with self.lock:
                self._finish(job, "failed", error=err)
        else:
            with self.lock:
                self._finish(job, "done", result=result)
        finally:
            _current.job = _current.queue = None


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
