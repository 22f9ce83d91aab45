"""The one way a page shows what went wrong (``app.ui.guard.show_error``), through AppTest."""

from __future__ import annotations

import ast

import pytest
from streamlit.testing.v1 import AppTest

from apptest_helpers import ROOT, TIMEOUT, shown


def _page(problem: str, level: str | None, before: str) -> None:
    import streamlit as st

    from app.ui.guard import show_error
    from engine.records import ModelUnavailableError

    made = {
        "engine": ModelUnavailableError(
            "No model `x` at /home/teacher/secret/models/x: see [here](http://evil.example)"
        ),
        "bug": KeyError("/srv/app/internal/table.py line 3"),
        "message": "Type ![img](http://evil.example/a.png) <script>alert(1)</script> $x^2$",
    }[problem]
    show_error(made, before=before, level=level)
    st.write("page goes on")


def run(problem: str, level: str | None = None, before: str = "") -> AppTest:
    at = AppTest.from_function(_page, args=(problem, level, before), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.markdown[-1].value == "page goes on"
    return at


def test_an_engine_error_is_a_warning_in_its_own_words_without_paths_or_links() -> None:
    at = run("engine")
    assert not at.error and len(at.warning) == 1
    text = at.warning[0].value
    assert "No model" in shown(text) and "/home/teacher" not in text and "…/x" in shown(text)
    assert "](http" not in text and "http:" not in text  # no link: the word joiner breaks the autolink


def test_anything_else_is_one_calm_error_and_never_a_traceback() -> None:
    at = run("bug")
    assert not at.warning and len(at.error) == 1
    text = at.error[0].value
    assert "Something went wrong" in text and "KeyError" in text
    assert "/srv/app" not in text and "Traceback" not in text and "line 3" not in text


def test_a_message_is_shown_literally_and_the_level_and_prefix_are_the_pages() -> None:
    at = run("message", level="info", before="**Heads up:** ")
    assert not at.warning and not at.error and len(at.info) == 1
    text = at.info[0].value
    assert text.startswith("**Heads up:** ")
    assert (
        shown(text[len("**Heads up:** ") :]) == "Type ![img](http://evil.example/a.png) <script>alert(1)</script> $x^2$"
    )
    for escaped in (r"\!\[img\]\(", r"\<script\>", r"\$x\^2\$"):  # no image, no HTML, no maths
        assert escaped in text, escaped


@pytest.mark.parametrize("level", ["info", "warning", "error"])
def test_the_page_picks_the_severity(level: str) -> None:
    at = run("engine", level=level)
    assert [len(at.info), len(at.warning), len(at.error)] == [level == "info", level == "warning", level == "error"]


def _shows_errors_another_way(path) -> list[str]:
    """Calls of ``error_message`` outside guard.py, and ``st.error/warning/info`` whose text is an exception."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    caught = {h.name for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) and h.name}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        if name == "error_message":
            found.append(f"{path.name}:{node.lineno} error_message")
        elif name in {"error", "warning", "info"} and node.args:
            names = {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)}
            if names & (caught | {"err", "exc", "error"}):
                found.append(f"{path.name}:{node.lineno} st.{name} of an exception")
    return found


def test_every_page_shows_errors_through_show_error() -> None:
    files = [  # what draws: the pages and ui, not what returns messages as data (the pages' data modules, and the
        # offline pack's reader, whose failures become a note in the pack)
        p
        for d in ("views", "ui", "controls")
        for p in sorted((ROOT / "app" / d).rglob("*.py"))
        if p.name not in ("guard.py", "offline_views.py") and not (p.stem == "data" or p.stem.endswith("_data"))
    ]
    offenders = [hit for p in files for hit in _shows_errors_another_way(p)]
    assert not offenders, offenders
    uses = sum("show_error(" in p.read_text(encoding="utf-8") for p in files)
    assert uses >= 15, uses
