"""The last line of defence of a page run: an exception becomes one calm message, logged, never a traceback.

Streamlit turns an exception in a page into its generic "This app has encountered an error" box. Most
of what can raise here is a forged request: a student who sends a widget value of the wrong type (a
string for a slider, NaN for a selectbox index) over the websocket makes Streamlit's own widget code
raise before the page sees the value. That must not look like a crash, and it only ever affects the
sender's own session. Real bugs are logged with their traceback (and tests fail on the message:
``tests/app/apptest_helpers.assert_clean``).
"""

from __future__ import annotations

import contextlib
import logging

import streamlit as st

log = logging.getLogger(__name__)

MESSAGE = ("This page could not use one of its settings (a value it does not accept). Change that setting, "
           "or reload the page to start again.")


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
        st.error(MESSAGE, icon=":material/error:")


def busy(message: str, done: bool):
    """``st.spinner(message)`` for work still to do; nothing when ``done`` (the result is cached).

    A spinner starts a thread of its own and sends two messages; a rerun that reads a cached model and
    trace (every rerun after the first of a sentence, and a class on one link) needs neither.
    """
    return contextlib.nullcontext() if done else st.spinner(message)
