"""This session's work on the server's one long-work queue (:mod:`engine.jobs`): anything that takes seconds.

A data module builds the work (a closure over plain values, no ``st.*``: it runs in a low-priority worker thread)
and hands it to :func:`submit_long`; ``app/controls/long_job.py`` follows it (:func:`long_status`, also the
session's heartbeat) and offers Stop, Pause and Resume. One job per session and kind.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from app.runtime.models import session_id
from engine.job_records import JobStatus
from engine.jobs import LongWorkQueue, get_queue

#: the kinds of long work (a session has at most one job of each)
FINETUNE, MEASURE, WRITE = "finetune", "measure", "write"
NSP = "nsp"  # fine-tuning a classifier on [CLS] for next-sentence prediction (Pretraining)
SCALE = "scale"  # the Scaling page's "train one more size"
INDUCTION = "induction"  # Train live's induction-heads run (app/views/train/data.py)
TRAIN = "train"  # Train live's own model (engine.training.jobs.KIND)
HEAD_FINDER = "head_finder"  # the Head finder measuring a model without a shipped table
#: after submitting, the page waits this long for the job before it starts polling (most jobs are done by then)
QUICK_WAIT_S = 1.0


def long_queue() -> LongWorkQueue:
    return get_queue()


def submit_long(kind: str, work: Callable[[], Any], *, key: Hashable, estimate_s: float) -> JobStatus:
    """Queue ``work`` as this session's job of ``kind`` (the same ``key`` while queued or running is the same job)
    and wait up to :data:`QUICK_WAIT_S` for it."""
    queue = long_queue()
    queue.submit(session_id(), kind, work, key=key, estimate_s=estimate_s, alive=connected())
    status = queue.wait(session_id(), kind, QUICK_WAIT_S)
    assert status is not None  # just submitted
    return status


def long_status(kind: str) -> JobStatus | None:
    """This session's latest job of ``kind`` (queued, running or finished), or None; also its heartbeat."""
    queue = long_queue()
    queue.heartbeat(session_id())
    return queue.status(session_id(), kind)


def control_long(kind: str, action: str) -> None:
    """``cancel``, ``pause`` or ``resume`` this session's job of ``kind`` (a queued one at once, a running one at its
    next yield point; a paused one keeps its place on the server)."""
    getattr(long_queue(), action)(session_id(), kind)


def connected() -> Callable[[], bool] | None:
    """A thread-safe "is this browser session still connected?" check (None outside a served app)."""
    try:
        from streamlit.runtime import Runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        if ctx is None or not Runtime.exists():
            return None
        runtime, sid = Runtime.instance(), ctx.session_id
        return lambda: runtime.is_active_session(sid)
    except Exception:  # noqa: BLE001 — Streamlit's runtime API, whatever it raises: a job still ends at its budget
        return None
