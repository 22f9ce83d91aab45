"""The Pretraining objectives page in Chromium: fill in a blank, hide another word with a click, switch tabs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from e2e_helpers import PLOT, expect_idle, expect_no_exception, section  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 20_000
BAR_LABELS = "el => Array.from(el._fullData[0].y)"


def test_fill_in_the_blank_and_the_other_tabs(page: Page, app_url: str, artifacts: Path):
    page.goto(app_url)
    nav = page.locator('[data-testid="stSidebarNav"]')
    expect(nav).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(nav.get_by_text(re.compile(r"^View \d+ more$"))).to_have_count(0)  # every page listed, none folded away
    nav.get_by_text("Pretraining objectives").click()
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
    section(page, "Objectives side by side").click()
    expect(page.get_by_role("heading", name="Span corruption (T5)")).to_be_visible(timeout=REDRAW_MS)
    expect(page.locator(PLOT)).to_have_count(6, timeout=REDRAW_MS)
    expect_no_exception(page)
    section(page, "Fine-tuning changes attention").click()
    page.get_by_role("button", name="Fine-tune").click()
    expect(page.get_by_text("Accuracy after")).to_be_visible(timeout=60_000)
    expect(page.locator(PLOT).first.locator(".gtitle")).to_contain_text("attention moved", timeout=REDRAW_MS)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "pretraining_finetune.png"), full_page=True)
    section(page, "The cost of attention").click()
    page.get_by_role("button", name="Measure on this server").click()
    expect(page.locator(PLOT).first.locator(".gtitle")).to_contain_text("Seconds per call", timeout=REDRAW_MS)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "pretraining_cost.png"), full_page=True)


def pick_option(page: Page, box: str, option: str, tries: int = 3) -> None:
    """Open the select box ``box`` and pick ``option``; a rerun that redraws the box as it opens closes it, so
    open it again (up to ``tries`` times)."""
    for attempt in range(tries):
        page.get_by_role("combobox", name=box).click()
        try:
            page.get_by_role("option", name=option).click(timeout=5_000)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise
            page.keyboard.press("Escape")


def test_next_sentence_prediction_fine_tunes_and_inspects_a_pair(page: Page, app_url: str, artifacts: Path):
    page.goto(f"{app_url}/pretraining?pretraining_tab=nsp")
    expect(page.get_by_text("segment embedding")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.locator('[data-testid="stDataFrame"]')).to_be_visible(timeout=REDRAW_MS)  # the pairs' table
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="Steps").get_by_role("slider")
    slider.focus()
    slider.press("Home")  # 50 steps, moved with the keyboard
    expect(page.locator('[data-testid="stSliderThumbValue"]').first).to_have_text("50", timeout=REDRAW_MS)
    expect_idle(page)
    page.get_by_role("button", name="Fine-tune on NSP").click()
    expect(page.get_by_text("NSP accuracy after")).to_be_visible(timeout=120_000)
    expect(page.locator(PLOT).first.locator(".gtitle")).to_contain_text("Loss while fine-tuning", timeout=REDRAW_MS)
    expect(page.locator(PLOT).filter(has_text="How far [CLS]'s attention moved")).to_have_count(1, timeout=REDRAW_MS)
    expect_idle(page)
    expect(page.locator(PLOT).filter(has_text="[CLS]'s attention, before")).to_have_count(1, timeout=REDRAW_MS)
    expect_idle(page)
    pick_option(page, "Held-out pair", "Pair 2")
    expect(page.get_by_role("combobox", name="Held-out pair")).to_have_value(re.compile("Pair 2"), timeout=REDRAW_MS)
    expect(page.locator(PLOT).filter(has_text="[CLS]'s attention, after")).to_have_count(1, timeout=REDRAW_MS)
    expect_idle(page)
    picked = page.get_by_role("combobox", name="Held-out pair").input_value()
    truth = "real next" if "(real next)" in picked else "random B"
    expect(page.locator('[data-testid="stMetricValue"]').filter(has_text=truth)).to_have_count(1)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "pretraining_nsp.png"), full_page=True)


def test_nsp_running_chart_has_a_caption_and_a_quiet_console(page: Page, app_url: str):
    """While the NSP fine-tune ran, its held-out accuracy chart had no caption, and the console filled with Vega's
    'Infinite extent for field "step"' warnings (a chart drawn before it had a point): now a captioned chart on
    fixed axes, drawn once the first accuracy is measured, and no such warning."""
    console: list[str] = []
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.goto(f"{app_url}/pretraining?pretraining_tab=nsp")
    expect(page.get_by_text("segment embedding")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    page.get_by_role("button", name="Fine-tune on NSP").click()  # 300 steps: long enough to watch it run
    live = page.locator(PLOT).filter(has_text="Held-out accuracy so far")
    expect(live).to_have_count(1, timeout=120_000)
    expect(page.get_by_text("The fine-tune running now: accuracy on the held-out pairs")).to_be_visible()
    y_range = live.evaluate("el => Array.from(el._fullLayout.yaxis.range)")
    assert y_range == [0, 1]
    points = live.evaluate("el => Array.from(el._fullData[0].y)")
    assert points and all(0.0 <= p <= 1.0 for p in points)
    expect(page.get_by_text("NSP accuracy after")).to_be_visible(timeout=240_000)
    expect_idle(page)
    expect_no_exception(page)
    page.wait_for_timeout(500)
    assert not [m for m in console if "Infinite extent" in m or "vega" in m.lower()], console
