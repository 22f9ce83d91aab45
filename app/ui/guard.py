"""How a page shows what went wrong: :func:`show_error`, the one way, and :func:`calm_errors`, the last line of
defence of a page run (an exception, mostly a forged widget value, becomes one calm message, logged)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Literal, TypeVar

import streamlit as st

from app.ui.safe_text import md
from engine.records import EngineError
from engine.text import MESSAGE_LIMIT, error_message, shorten

log = logging.getLogger(__name__)
T = TypeVar("T")

MESSAGE = (
    "This page could not use one of its settings (a value it does not accept). Change that setting, "
    "or reload the page to start again."
)


Level = Literal["info", "warning", "error"]


def plain_error(problem: BaseException | str) -> str:
    """``problem`` as plain text (an offline pack's note), bounded in length."""
    return error_message(problem) if isinstance(problem, BaseException) else shorten(str(problem), MESSAGE_LIMIT)


def show_error(problem: BaseException | str, *, before: str = "", level: Level | None = None) -> None:
    """Show an exception or a message (literally), after the markdown ``before``; default level: a warning for an
    engine error or a message (the user can change something), an error for any other exception."""
    if level is None:
        level = "error" if isinstance(problem, BaseException) and not isinstance(problem, EngineError) else "warning"
    getattr(st, level)(before + md(plain_error(problem)), icon=f":material/{level}:")


def attempt(work: Callable[[], T], spinner: str = "") -> T | None:
    """``work()`` (under ``spinner``), or None once its error is shown."""
    try:
        with busy(spinner, done=not spinner):
            return work()
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err)
        return None


@contextlib.contextmanager
def calm_errors(where: str):
    """Run a page (or a fragment); an ``Exception`` becomes :data:`MESSAGE` (``st.rerun``/``st.stop`` pass)."""
    try:
        yield
    except Exception:  # noqa: BLE001 — everything a page can raise: logged, shown calmly
        log.exception("page %s failed", where)
        show_error(MESSAGE, level="error")


def busy(message: str, done: bool):
    """``st.spinner(message)`` for work still to do; nothing when ``done`` (a spinner costs a thread and messages)."""
    return contextlib.nullcontext() if done else st.spinner(message)
