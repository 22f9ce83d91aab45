"""The Lessons page's link parameters through AppTest (issue 20: one table of URL parameters).

``lesson`` and ``lesson_step`` are rows of ``app/url_params.py``: ``app/url_state.py`` reads them from a link (a
step in range for the lesson on screen, a well-formed lesson id) and writes them back, as it does every page's.
A saved lesson's length bounds its steps. Each test has its own class store (AP_DATA_DIR in a temporary folder).
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app.views.lessons.draft import TAKE_TAB
from app.views.lessons.keys import Draft, Lessons
from app.views.lessons.plan import STEPS
from apptest_helpers import APP, ROOT, assert_clean, open_page

LESSONS = str(ROOT / "app" / "views" / "lessons" / "page.py")
N = len(STEPS)


@pytest.fixture(autouse=True)
def own_store(monkeypatch, tmp_path):
    monkeypatch.delenv("AP_DATABASE_URL", raising=False)
    monkeypatch.setenv("AP_DATA_DIR", str(tmp_path / "data"))


def open_link(**params: str) -> AppTest:
    """A new session opened on the Lessons page with ``params`` in its address."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page(LESSONS)
    at.query_params.update(params)
    at.run()
    assert_clean(at)
    return at


def shown_step(at: AppTest) -> int:
    header = at.header[0].value
    return next(k for k in range(1, N + 1) if header.startswith(f"{k}. "))


def url(at: AppTest, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_a_lesson_link_opens_its_step_and_next_writes_the_step():
    at = open_link(lesson_step="3")
    assert shown_step(at) == 3 and at.session_state[Lessons.step] == 3
    assert url(at, Lessons.step) == "3"
    at.button(key=f"{Lessons.next}top").click().run()
    assert_clean(at)
    assert shown_step(at) == 4 and url(at, Lessons.step) == "4"
    assert Lessons.lesson not in at.query_params  # the built-in lesson: the default, left out


@pytest.mark.parametrize("bad", ["0", "999", "NaN", str(N + 1), "-1", "2.5", ""])
def test_a_step_the_lesson_does_not_have_opens_step_1_calmly(bad: str):
    at = open_link(lesson_step=bad)
    assert shown_step(at) == 1
    assert not at.error and not at.warning and not at.exception
    assert url(at, Lessons.step) == "1"  # the bad value left the address bar


def test_a_bad_step_in_a_running_session_keeps_the_step_on_screen():
    at = open_link(lesson_step="5")
    at.query_params[Lessons.step] = "999"  # a link to a step this lesson does not have
    at.run()
    assert_clean(at)
    assert shown_step(at) == 5 and url(at, Lessons.step) == "5"


def test_a_malformed_lesson_id_is_ignored_and_an_unknown_one_is_named():
    at = open_link(lesson="../../etc/passwd", lesson_step="2")
    assert Lessons.lesson not in at.session_state  # refused by the reader: the built-in lesson
    assert shown_step(at) == 2 and not at.warning and not at.error
    assert Lessons.lesson not in at.query_params  # the bad id left the address bar
    unknown = open_link(lesson="AAAAAAAAAAAA", lesson_step="2")  # well formed: the store is asked, the page says
    assert "no saved lesson with this link" in " ".join(w.value for w in unknown.warning)


def test_a_saved_lessons_length_bounds_its_steps_and_the_built_in_lesson_is_one_click_away():
    at = open_page("positional", **{Draft.add_open: True})
    for title in ("One", "Two"):
        at.text_input(key=Draft.add_title).input(title)
        at.button(key=Draft.add).click().run()
    at.switch_page(LESSONS)
    at.run()
    at.button(key=Draft.save).click().run()
    assert_clean(at)
    lid, _ = at.session_state[Draft.saved]

    two = open_link(lesson=lid, lesson_step="2")
    assert two.session_state[Draft.tab] == TAKE_TAB and two.header[0].value == "2. Two"
    assert url(two, Lessons.lesson) == lid and url(two, Lessons.step) == "2"
    three = open_link(lesson=lid, lesson_step="3")  # the built-in lesson has a step 3, this one has not
    assert three.header[0].value == "1. One" and not three.warning

    two.button(key=Lessons.builtin).click().run()
    assert_clean(two)
    assert shown_step(two) == 1 and two.header[0].value == f"1. {STEPS[0].title}"
    assert Lessons.lesson not in two.query_params and url(two, Lessons.step) == "1"
