"""A long job of this session on a page: where it is in the queue, how far it has got, a Cancel button.

The page submits the job through a service (``finetune_start``, ``measure_start``,
``request_generation``) and passes its status to :func:`follow`. While the job is queued or
running, a fragment polls ``long_status`` (the rest of the page stays as it is and usable: the script
thread never waits for the job): every :data:`POLL_S` seconds while it runs, every :data:`QUEUED_POLL_S` while it
waits in the queue (its position moves only when a job ahead ends, and five waiting pages polling fast cost the
other students' reruns: docs/BENCHMARKS.md "Long work next to a class"). When the job starts, and when it ends,
the whole page reruns once (the first draws the progress bar polled fast, the second the result). A failed or
stopped job leaves one calm message.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app.runtime.long_work import cancel_long, long_status
from app.ui.clicks import once
from app.ui.guard import show_error
from app.ui.safe_text import md
from engine.jobs import JobStatus, about

POLL_S = 0.75  # seconds between a running job's looks: its progress bar moves
QUEUED_POLL_S = 2.5  # seconds between a queued job's looks: its position changes when a job ahead ends


def follow(kind: str, status: JobStatus, what: str, extra: Callable[[JobStatus], None] | None = None) -> None:
    """Show this session's job of ``kind`` (its ``status`` from the page's run).

    Args:
        kind: ``FINETUNE`` | ``MEASURE`` | ``WRITE``.
        status: the job's status now.
        what: the work in a few words ("Fine-tuning"), the start of each message.
        extra: draws more of a running job (the fine-tuning curve so far), under its progress bar.
    """
    if status.status == "failed":
        show_error(status.error)
    elif status.status == "stopped":
        st.info(
            f"{what} stopped: {md(status.reason)}. Press the button again to start over.", icon=":material/stop_circle:"
        )
    elif status.active:
        _poll(kind, status.job_id, status.status == "queued", what, extra)


def _poll(kind: str, job_id: int, queued: bool, what: str, extra: Callable[[JobStatus], None] | None) -> None:
    @st.fragment(run_every=QUEUED_POLL_S if queued else POLL_S)
    def poll() -> None:
        now = long_status(kind)
        if now is None or now.job_id != job_id or not now.active or (now.status == "queued") != queued:
            st.rerun()  # the whole page: the result (or why there is none), or a started job polled faster
        _show(kind, now, what, extra)

    poll()


def _show(kind: str, status: JobStatus, what: str, extra: Callable[[JobStatus], None] | None) -> None:
    if status.status == "queued":
        st.info(
            f"{what}: queued, position **{status.position}**, starts in about **{about(status.wait_s or 0)}**. "
            "The server runs long work a few jobs at a time, so that every page stays quick.",
            icon=":material/hourglass_top:",
        )
    else:
        st.progress(status.fraction, text=md(status.text) if status.text else f"{what}…")
        if extra is not None:
            extra(status)
    st.button("Cancel", key=f"{kind}_cancel", icon=":material/cancel:", on_click=once(cancel_long), args=(kind,))
