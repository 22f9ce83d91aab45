"""Every button's ``on_click`` in app/ goes through ``once`` (app/ui/clicks.py).

A timed fragment's rerun can carry a press ahead of the press's own message, and Streamlit then runs the button's
callback twice (a lesson's Next moved two steps). ``once(callback)`` drops the early copy. A callback given as a
string (``"ignore"``, ``"rerun"``) runs nothing of ours, so it needs no wrapping.
"""

from __future__ import annotations

import ast
from pathlib import Path

from app.ui.clicks import early_copy, once

ROOT = Path(__file__).resolve().parents[2]


def bare_callbacks(source: str) -> list[int]:
    """Line numbers of ``on_click=`` values that are neither a string nor a call of ``once``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg != "on_click":
                continue
            value = kw.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                continue
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "once":
                continue
            found.append(value.lineno)
    return found


def test_the_rule_finds_a_bare_callback():
    src = (
        "st.button('a', on_click=_move, args=(1,))\n"
        "st.button('b', on_click=services.cancel)\n"
        "st.button('c', on_click=lambda: None)\n"
        "st.button('d', on_click=once(_move))\n"
        "st.download_button('e', b'', on_click='ignore')\n"
        "st.text_input('f', on_change=_typed)\n"
    )
    assert bare_callbacks(src) == [1, 2, 3]


def test_every_on_click_in_app_goes_through_once():
    offenders = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "app").rglob("*.py"))
        for line in bare_callbacks(path.read_text(encoding="utf-8"))
    }
    assert not offenders, sorted(offenders)


def test_outside_a_run_the_callback_runs_with_its_arguments():
    """A unit test (or any code outside a script run) that calls a wrapped callback gets the callback's work."""
    seen = []

    def move(by: int, *, to: str) -> None:
        seen.append((by, to))

    wrapped = once(move)
    assert early_copy() is False
    wrapped(2, to="next")
    wrapped(-1, to="back")
    assert seen == [(2, "next"), (-1, "back")]
    assert wrapped.__name__ == "move" and wrapped.__wrapped__ is move
