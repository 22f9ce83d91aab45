"""A button's callback runs once a press, on a page with a timed fragment too.

Streamlit's browser sends a press on the next turn of its event loop. When a timed fragment
(``st.fragment(run_every=...)``: the class panel, the teacher's live answers, a job's progress) asks for its own
rerun in between, that request carries the press as well, and the server runs the callback in the fragment's run and
again in the press's own run (a lesson's "Next step" moved two steps).

:func:`once` drops the early copy: a run of fragments alone never comes from a press of a button outside them. A
button inside a timed fragment cannot be told apart this way, so its callback must do the same when run twice
(reveal the answer, cancel a job). ``tests/unit/test_button_callbacks.py`` holds every ``on_click`` to this rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec

from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState, get_script_run_ctx

P = ParamSpec("P")


def fragment_rerun() -> bool:
    """True in a run of fragments alone (a widget inside one changed), False in a full run of the page."""
    ctx = get_script_run_ctx()
    return bool(getattr(ctx, "fragment_ids_this_run", None)) if ctx is not None else False


def in_fragment() -> bool:
    """True inside a fragment's function, in a full run too."""
    return getattr(ThreadState.get(), "fragment_id", None) is not None


def early_copy() -> bool:
    """True in a widget callback that a run of other fragments carried ahead of the press's own run."""
    if not fragment_rerun():  # a full run of the page, or no run at all (a test calls the callback itself)
        return False
    return getattr(ThreadState.get(), "fragment_id", None) not in get_script_run_ctx().fragment_ids_this_run


def once(callback: Callable[P, object]) -> Callable[P, None]:
    """``callback`` as a button's ``on_click``, run once a press (see the module's docstring)."""

    @functools.wraps(callback)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        if not early_copy():
            callback(*args, **kwargs)

    return run
