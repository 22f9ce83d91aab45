"""A lesson's link in a real browser (issue 20: one table of URL parameters): ``lesson`` and ``lesson_step`` are
read and written by ``app/url_state.py`` like every page's parameters.

A link ``?lesson_step=3`` (with ``lesson=`` the built-in lesson, empty) opens step 3; a step the lesson does not
have (0, 999, NaN) opens step 1 with no error; Next writes the new step into the address with one history entry,
and one press of Back shows the step before. Waits poll conditions, never clocks.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from app.views.lessons.plan import STEPS
from e2e_helpers import expect_idle, expect_no_exception

pytestmark = pytest.mark.e2e

LOAD_MS = 90_000
N = len(STEPS)


def expect_step(page: Page, k: int) -> None:
    expect(page.get_by_role("heading", name="Lessons", level=1)).to_be_visible(timeout=LOAD_MS)
    expect(page.get_by_text(f"Step {k} of {N}")).to_be_visible(timeout=LOAD_MS)
    expect(page.get_by_role("heading", name=f"{k}. {STEPS[k - 1].title}", level=2)).to_be_visible(timeout=LOAD_MS)
    expect_idle(page, LOAD_MS)
    expect_no_exception(page)


def test_a_lesson_link_opens_its_step_and_next_adds_one_history_entry(page: Page, app_url: str):
    page.goto(f"{app_url}/lessons?lesson=&lesson_step=3")
    expect_step(page, 3)
    entries = page.evaluate("history.length")
    page.get_by_role("button", name=re.compile("Next")).first.click()
    expect_step(page, 4)
    expect(page).to_have_url(re.compile(r"/lessons\?lesson_step=4$"))
    assert page.evaluate("history.length") == entries + 1, "Next added more than one history entry"
    page.go_back()
    expect_step(page, 3)
    expect(page).to_have_url(re.compile(r"/lessons\?lesson=&lesson_step=3$"))
    page.go_forward()
    expect_step(page, 4)


@pytest.mark.parametrize("bad", ["0", "999", "NaN"])
def test_a_step_the_lesson_does_not_have_opens_step_1(page: Page, app_url: str, bad: str):
    page.goto(f"{app_url}/lessons?lesson_step={bad}")
    expect_step(page, 1)
    expect(page.locator('[data-testid="stAlert"]')).to_have_count(0)
    expect(page).to_have_url(re.compile(r"/lessons\?lesson_step=1$"))
