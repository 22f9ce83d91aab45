"""Browser history: one press of Back returns to the page before, after a lesson's link or a link whose
values are the defaults (issue 20).

Streamlit's frontend pushes a history entry whenever the app writes a query string that differs from the
address bar. The app used to rewrite a link it had just been opened with into its own spelling (defaults
left out, ``true`` as ``1``, its own order), which pushed a second entry for the same view: Back then
landed on the link's own spelling of that view and a second press was needed. Waits poll conditions.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from app.views.lessons.plan import STEPS
from e2e_helpers import expect_idle, expect_no_exception, expect_view

pytestmark = pytest.mark.e2e

LOAD_MS = 90_000


def _explore_drawn(page: Page) -> None:
    expect(page.get_by_role("heading", name="Explore attention", level=1)).to_be_visible(timeout=LOAD_MS)
    expect_view(page, timeout_ms=LOAD_MS)
    expect_idle(page, LOAD_MS)
    expect_no_exception(page)


def _lessons_shown(page: Page, k: int) -> None:
    expect(page.get_by_role("heading", name="Lessons", level=1)).to_be_visible(timeout=LOAD_MS)
    expect(page.get_by_role("heading", name=f"{k}. {STEPS[k - 1].title}", level=2)).to_be_visible(timeout=LOAD_MS)


def test_one_back_press_leaves_a_lessons_link(page: Page, app_url: str):
    k, step = next((i, s) for i, s in enumerate(STEPS, start=1) if s.id == "causal")
    # its params are not spelled as the app writes them (causal=true, a tab's label): the app's own
    # spelling of the same view must not become a second entry
    link = next(each for each in step.links if each.params.get("causal") == "true")
    page.goto(f"{app_url}/lessons?lesson_step={k}")
    _lessons_shown(page, k)
    expect_idle(page, LOAD_MS)
    entries = page.evaluate("history.length")
    page.get_by_role("link", name=link.label).click()
    _explore_drawn(page)
    assert page.evaluate("history.length") == entries + 1, "following the link added more than one history entry"
    page.go_back()
    _lessons_shown(page, k)
    expect(page).to_have_url(re.compile(rf"/lessons\?lesson_step={k}$"))


def test_one_back_press_leaves_a_link_of_default_values(page: Page, app_url: str):
    page.goto(f"{app_url}/lessons?lesson_step=2")
    _lessons_shown(page, 2)
    expect_idle(page, LOAD_MS)
    page.goto(f"{app_url}/?layer=0&head=0&causal=0&explore_tab=heads")  # every value is Explore's default
    _explore_drawn(page)
    page.go_back()
    _lessons_shown(page, 2)
    expect(page).to_have_url(re.compile(r"/lessons\?lesson_step=2$"))
