"""A button's callback runs once a press, on a page with a timed fragment too.

A timed fragment's rerun can carry a press made just before it, so Streamlit runs the callback there and again in
the press's own run. :func:`once` drops that early copy; a button inside a timed fragment cannot be told apart, so
its callback must be safe to run twice (``tests/unit/test_button_callbacks.py``).
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
    """``callback`` as a button's ``on_click``, run once a press."""

    @functools.wraps(callback)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        if not early_copy():
            callback(*args, **kwargs)

    return run
