"""How a page shows what went wrong: :func:`show_error`, the one way, and :func:`calm_errors`, the last line of
defence of a page run (an exception becomes one calm message, logged, never a traceback).

:func:`show_error` draws an exception or a message: an engine error (the user can change the input, the model, a
setting) in its own words as a warning, anything else as one calm sentence in an error box (the traceback goes to
the log), a message as it is; always safe for Streamlit's markdown and bounded in length.

Most of what reaches :func:`calm_errors` is a forged request: a widget value of the wrong type sent over the
websocket makes Streamlit's own widget code raise before the page sees it. That must not look like a crash, and it
only affects the sender's session. Real bugs are logged with their traceback (``apptest_helpers.assert_clean``
fails a test on the message).
"""

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
ICONS = {"info": ":material/info:", "warning": ":material/warning:", "error": ":material/error:"}


def plain_error(problem: BaseException | str) -> str:
    """``problem`` as plain text (for a file, not the page: an offline pack's note is escaped as HTML there):
    an exception through ``error_message``, a message as it is; both bounded in length."""
    if isinstance(problem, BaseException):
        return error_message(problem)
    return shorten(str(problem), MESSAGE_LIMIT)


def error_text(problem: BaseException | str) -> str:
    """:func:`plain_error` as safe markdown (:func:`md`: no link, image, HTML or maths from what a user typed)."""
    return md(plain_error(problem))


def show_error(problem: BaseException | str, *, before: str = "", level: Level | None = None) -> None:
    """Show what went wrong, the one way every page does.

    Args:
        problem: the exception caught, or a message (shown literally: it may hold what a user typed).
        before: markdown the page writes before it (e.g. ``f"{quoted(name)} cannot be used: "``); user input
            in it goes through ``safe_text.quoted``.
        level: ``"info"`` (not for this model: nothing went wrong), ``"warning"`` or ``"error"``; default:
            ``"warning"`` for an engine error or a message (the user can change something), ``"error"`` for any
            other exception.
    """
    if level is None:
        level = "error" if isinstance(problem, BaseException) and not isinstance(problem, EngineError) else "warning"
    getattr(st, level)(before + error_text(problem), icon=ICONS[level])


def attempt(work: Callable[[], T], spinner: str = "") -> T | None:
    """``work()`` (under ``spinner``), or None once its error is shown: a section's model run may raise anything,
    and the rest of the page still draws."""
    try:
        with st.spinner(spinner) if spinner else contextlib.nullcontext():
            return work()
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err)
        return None


@contextlib.contextmanager
def calm_errors(where: str):
    """Run a page (or a fragment of one); an ``Exception`` becomes :data:`MESSAGE` in the page.

    Streamlit's own control flow (``st.rerun``, ``st.stop``, a newer rerun) is not an ``Exception``
    and passes through.
    """
    try:
        yield
    except Exception:  # noqa: BLE001 — everything a page can raise: logged, shown calmly
        log.exception("page %s failed", where)
        show_error(MESSAGE, level="error")


def busy(message: str, done: bool):
    """``st.spinner(message)`` for work still to do; nothing when ``done`` (the result is cached).

    A spinner starts a thread of its own and sends two messages; a rerun that reads a cached model and
    trace (every rerun after the first of a sentence, and a class on one link) needs neither.
    """
    return contextlib.nullcontext() if done else st.spinner(message)
