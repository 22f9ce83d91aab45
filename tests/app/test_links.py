"""The one link builder (``app/links.py``): what the Share box, the JSON exports, presenter links and lessons use."""

from __future__ import annotations

import ast
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from app import links
from app.ui import share_box
from app.ui.share_box import Share
from apptest_helpers import ROOT, TIMEOUT

HOST = "http://school.example:8501"


@pytest.mark.parametrize(
    "base, params, page, expected",
    [
        (
            f"{HOST}/explore",
            {"text": "a b", "layer": 0, "present": True},
            "",
            f"{HOST}/explore?text=a+b&layer=0&present=1",
        ),
        (f"{HOST}/heads?old=1#top", {"causal": False, "head": None}, "", f"{HOST}/heads?causal=0"),
        (HOST, {"layer": 3}, "", f"{HOST}/?layer=3"),  # no path: the query string still follows a "/"
        (f"{HOST}/", {}, "", f"{HOST}/"),
        (None, {"text": "<b>&x=1"}, "explore", "/explore?text=%3Cb%3E%26x%3D1"),  # outside a browser: relative
        (None, {"hide": ["model", "causal"]}, "heads", "/heads?hide=model&hide=causal"),
        ("/explore?x=1", {"layer": 1}, "", "/explore?layer=1"),  # a relative link made earlier
    ],
)
def test_page_link_writes_a_view_as_the_url_table_does(base, params, page, expected) -> None:
    assert links.page_link(base, params, page) == expected


def test_every_value_survives_the_round_trip() -> None:
    params = {"text": "Lily & Tom? 100% #1 = ünïcode", "layer": 11, "causal": True}
    link = links.page_link(f"{HOST}/explore", params)
    assert {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()} == {**links.query(params), "causal": "1"}


def test_the_share_box_lock_goes_through_the_builder(monkeypatch) -> None:
    monkeypatch.setattr(share_box.st, "session_state", {Share.lock: ["model"]})
    assert (
        share_box.shared_link(f"{HOST}/heads?text=a&hide=layer", ("layer",))
        == f"{HOST}/heads?text=a&hide=model%2Clayer"
    )
    assert share_box.shared_link("/heads?text=a", ()) == "/heads?text=a&hide=model"
    assert share_box.shared_link(f"{HOST}/?hide=model", ("model",)) == f"{HOST}/?hide=model"  # nothing new to lock


def test_a_shared_link_opens_presenter_mode_only_when_asked(monkeypatch) -> None:
    """A teacher presenting shares a link that opens the normal view on the class's phones, unless they tick
    "Open in presenter mode"; other parameters, repeated ones too, are kept as they were."""
    monkeypatch.setattr(share_box.st, "session_state", {})
    link = f"{HOST}/heads?text=a&present=1&tok=1&tok=2"
    assert share_box.shared_link(link, ()) == f"{HOST}/heads?text=a&tok=1&tok=2"
    monkeypatch.setattr(share_box.st, "session_state", {Share.present_link: True})
    assert share_box.shared_link(link, ()) == f"{HOST}/heads?text=a&tok=1&tok=2&present=1"
    assert share_box.shared_link(f"{HOST}/?text=a", ()) == f"{HOST}/?text=a&present=1"


def _link_script() -> None:
    import streamlit as st

    from app.links import current_link

    st.code(current_link("step_by_step", {"layer": 2, "present": True}))


@pytest.mark.parametrize(
    "url, expected",
    [
        (f"{HOST}/step_by_step?layer=1", f"{HOST}/step_by_step?layer=2&present=1"),
        (None, "/step_by_step?layer=2&present=1"),
    ],
)
def test_current_link_reads_the_browsers_address(url, expected) -> None:
    at = AppTest.from_function(_link_script, default_timeout=TIMEOUT)
    if url:
        at.context = {"url": url}
    at.run()
    assert not at.exception and at.code[0].value == expected


def _builders(path: Path) -> list[str]:
    """Calls that encode a query string or draw an in-app link, and functions named like a link builder."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in {"urlencode", "page_link"}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {name}")
        elif isinstance(node, ast.FunctionDef) and node.name in {"page_link", "current_link"}:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} defines {node.name}")
    return found


def test_no_other_module_builds_a_link() -> None:
    """Query strings are encoded and in-app page links drawn only in app/links.py (the share box's lock calls
    its page_link)."""
    found = [
        hit
        for path in sorted((ROOT / "app").rglob("*.py"))
        if path != ROOT / "app" / "links.py"
        for hit in _builders(path)
    ]
    assert len(found) == 1 and found[0].startswith("app/ui/share_box.py:") and found[0].endswith("calls page_link"), (
        found
    )
    assert len(_builders(ROOT / "app" / "links.py")) >= 3  # the check sees what it looks for


def _pages_script() -> None:
    import streamlit as st

    from app import routes

    for file, _title, _icon in routes.PAGES:
        made = routes.page(file)
        st.text(f"{file} {made.url_path} {made.title} {made is routes.page(file)}")
    st.text(f"missing {routes.page('nowhere.py')}")


def test_open_page_links_to_the_page_made_once_not_to_a_path_resolved_each_rerun() -> None:
    """``routes.page`` gives ``st.page_link`` the page object itself (a path would be resolved on disk every
    rerun): each page file of the sidebar has one, the same object each time; a name that is not a page gives
    None (the path then)."""
    from streamlit.testing.v1 import AppTest

    from app import routes

    at = AppTest.from_function(_pages_script).run()
    lines = [t.value for t in at.text]
    expected = [
        f"{file} {'' if i == 0 else file.removesuffix('.py')} {title} True"
        for i, (file, title, _icon) in enumerate(routes.PAGES)
    ]
    assert lines == [*expected, "missing None"]
