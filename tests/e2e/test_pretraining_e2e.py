"""The Pretraining objectives page in Chromium: fill in a blank, hide another word with a click, switch tabs."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 20_000
BAR_LABELS = "el => Array.from(el._fullData[0].y)"


def test_fill_in_the_blank_and_the_other_tabs(page: Page, app_url: str, artifacts: Path):
    page.goto(app_url)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Pretraining objectives").click()
    expect(page.get_by_role("heading", name="Pretraining objectives", level=1)).to_be_visible(timeout=FIRST_DRAW_MS)
    bars = page.locator(PLOT).first
    expect(bars.locator(".gtitle")).to_contain_text("Guesses for the blank", timeout=FIRST_DRAW_MS)
    expect_idle(page)
    assert bars.evaluate(BAR_LABELS)[0] == "it"  # "she gave [MASK] to tom": the ball, referred back to
    box = page.get_by_role("textbox", name="Sentence with [MASK]")
    box.fill("lily found a red ball .")
    box.press("Enter")
    expect(page.get_by_text("Put [MASK] where a word should be guessed")).to_be_visible(timeout=REDRAW_MS)
    page.get_by_role("radio", name="ball", exact=True).click()  # the word pill: hide it
    expect(box).to_have_value("lily found a red [MASK] .", timeout=REDRAW_MS)
    expect(page.locator(PLOT).first.locator(".gtitle")).to_contain_text("blank at 5", timeout=REDRAW_MS)
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "pretraining_fill.png"), full_page=True)
    page.get_by_role("tab", name="Objectives side by side").click()
    expect(page.get_by_role("heading", name="Span corruption (T5)")).to_be_visible(timeout=REDRAW_MS)
    expect(page.locator(PLOT)).to_have_count(6, timeout=REDRAW_MS)
    expect_no_exception(page)
    page.get_by_role("tab", name="Fine-tuning changes attention").click()
    page.get_by_role("button", name="Fine-tune").click()
    expect(page.get_by_text("Accuracy after")).to_be_visible(timeout=60_000)
    expect(page.locator(PLOT).first.locator(".gtitle")).to_contain_text("attention moved", timeout=REDRAW_MS)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "pretraining_finetune.png"), full_page=True)
    page.get_by_role("tab", name="The cost of attention").click()
    page.get_by_role("button", name="Measure on this server").click()
    expect(page.locator(PLOT).first.locator(".gtitle")).to_contain_text("Seconds per call", timeout=REDRAW_MS)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "pretraining_cost.png"), full_page=True)
