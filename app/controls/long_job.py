"""Long work on a page, written once for every kind of job: start → follow (a fragment polls it, slower while
queued; the page reruns when it starts and ends) → collect."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st

from app.runtime.long_work import control_long, long_status
from app.ui.clicks import once
from app.ui.guard import show_error
from app.ui.safe_text import md
from engine.job_limits import about
from engine.job_records import JobStatus

POLL_S = 0.75  # seconds between a running job's looks: its progress bar moves
QUEUED_POLL_S = 2.5  # seconds between a queued job's looks: its position changes when a job ahead ends
Extra = Callable[[JobStatus], None]


def run_job(
    kind: str,
    what: str,
    start: Callable[[], Any] | None = None,
    *,
    keep: str | None = None,
    match: Hashable = None,
    extra: Extra | None = None,
) -> Any:
    """Start (when ``start`` is given), follow and collect this session's job of ``kind``: its result once done (kept
    under ``keep``), else None. ``match``: only the job of this key belongs here; ``extra`` draws more of a running
    job under its progress bar."""
    if start is not None:
        if keep:
            st.session_state.pop(keep, None)
        try:
            start()
        except Exception as err:  # noqa: BLE001 — a job that cannot start (bad settings, model error) says why
            show_error(err)
            return None
    status = long_status(kind)
    if status is not None and (match is None or status.key == match):
        if status.status != "done":
            follow(kind, status, what, extra)
        elif not keep:
            return status.result
        else:
            st.session_state[keep] = status.result
    return st.session_state.get(keep) if keep else None


def follow(kind: str, status: JobStatus, what: str, extra: Extra | None = None, pause: bool = False) -> None:
    """Why this session's job failed or stopped, or a polling view of it with Stop (and Pause/Resume)."""
    if status.status == "failed":
        show_error(status.error)
    elif status.status == "stopped":
        st.info(f"{what} stopped: {md(status.reason)}. Start it again to start over.", icon=":material/stop_circle:")
    elif status.active:
        queued = status.status == "queued"

        @st.fragment(run_every=QUEUED_POLL_S if queued else POLL_S)
        def poll() -> None:
            now = long_status(kind)
            if now is None or now.job_id != status.job_id or not now.active or (now.status == "queued") != queued:
                st.rerun()  # the whole page: the result (or why there is none), or a started job polled faster
            show(kind, now, what, extra, pause)

        poll()


def show(kind: str, status: JobStatus, what: str, extra: Extra | None, pause: bool) -> None:
    """One look at an active job: its place in the queue, or its progress; its buttons."""
    if status.status == "queued":
        st.info(
            f"{what}: queued, position **{status.position}**, starts in about **{about(status.wait_s or 0)}**. "
            "The server runs long work a few jobs at a time, so that every page stays quick.",
            icon=":material/hourglass_top:",
        )
    else:
        st.progress(status.fraction, text=md(status.text) if status.text else f"{what}…")
    actions = [("resume" if status.status == "paused" else "pause")] if pause and status.status != "queued" else []
    for column, action in zip(st.columns(4), [*actions, "cancel"]):
        name = "stop" if action == "cancel" else action  # the button's label, icon and key
        click = dict(on_click=once(control_long), args=(kind, action))
        column.button(name.capitalize(), icon=f":material/{name}:", key=f"{kind}_{name}", **click)
    if extra is not None and status.status != "queued":
        extra(status)
