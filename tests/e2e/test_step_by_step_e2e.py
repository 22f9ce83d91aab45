"""The Step-by-step page in a real browser: pick another query token, the weights chart redraws.

Waits are on selectors or conditions, never sleeps. The chart's numbers are read from the Plotly
graph div (``el.data[0].y``), i.e. what the browser actually drew from.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception, expect_view, expect_view_row  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000  # fresh server: torch import + MiniLM load + plotly.js
REDRAW_MS = 20_000
# the y values plotly.js drew from (numpy arrays arrive base64-encoded; _fullData holds them decoded)
BAR_Y = "el => Array.from(el._fullData[0].y, Number)"
TITLE = "el => el.layout.title.text"


def pick(page: Page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.get_by_role("combobox", name=label)).to_have_value(option)


SENTENCE = "The cat sat on the mat because it was warm."


def open_step_page(page: Page, app_url: str) -> None:
    """Type a sentence on Explore, then go to Step by step through the sidebar, as a student does."""
    page.goto(app_url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    box = page.locator('[data-testid="stTextArea"] textarea')
    box.click()
    box.press("Control+a")
    box.press_sequentially(SENTENCE)
    box.press("Control+Enter")
    # the server has the sentence once Explore's map shows it (idle alone can be seen before the run starts)
    expect_view_row(page, r"^\d+ warm$", REDRAW_MS)
    expect_idle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Step by step").click()
    expect(page.get_by_role("heading", name="Step by step", level=1)).to_be_visible(timeout=REDRAW_MS)
    expect(page.locator(PLOT).first.locator(".gtitle")).to_contain_text("looks", timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stTextArea"] textarea')).to_have_value(SENTENCE)


def test_step_by_step_query_changes_the_weights(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    page.set_viewport_size({"width": 1280, "height": 3000})  # tall: the shot reaches the weights chart
    open_step_page(page, app_url)
    chart = page.locator(PLOT).first
    expect_idle(page)
    expect_no_exception(page)
    expect(page.get_by_role("combobox", name="Query token")).to_have_value("8 · it")
    expect(chart.locator(".gtitle")).to_have_text("Where 8 · it looks")
    page.wait_for_function("sel => document.querySelector(sel)._fullData", arg=PLOT, timeout=REDRAW_MS)
    before = chart.evaluate(BAR_Y)
    assert len(before) == 13 and abs(sum(before) - 1) < 1e-4, before
    assert chart.locator(".bars path").count() == 13  # one drawn bar per key token

    page.screenshot(path=str(artifacts / "step_by_step.png"))
    publish_screenshot(artifacts / "step_by_step.png", "step_by_step.png")

    pick(page, "Query token", "2 · cat")
    expect(chart.locator(".gtitle")).to_have_text("Where 2 · cat looks", timeout=REDRAW_MS)
    expect_idle(page)
    after = chart.evaluate(BAR_Y)
    assert len(after) == 13 and abs(sum(after) - 1) < 1e-4
    assert max(abs(a - b) for a, b in zip(before, after)) > 1e-3, "the weights changed with the query"
    expect_no_exception(page)

    # the causal mask: keys after the query get weight 0 (grey bars)
    page.locator('[data-testid="stCheckbox"]').get_by_text("Causal mask", exact=True).first.click()
    expect(page.get_by_role("switch", name="Causal mask").first).to_be_checked()
    page.wait_for_function(
        "sel => { const el = document.querySelector(sel); const y = el && el._fullData && el._fullData[0].y;"
        " return y && Array.from(y).slice(3).every(v => v === 0); }",
        arg=PLOT,
        timeout=REDRAW_MS,
    )
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "step_by_step-causal.png"))


def test_calculator_scale_slider_by_keyboard(page: Page, app_url: str, artifacts: Path):
    """The calculator's scale slider moves with the arrow keys and step ② follows it."""
    open_step_page(page, app_url)
    slider = page.get_by_role("slider", name=re.compile("Scale"))
    slider.scroll_into_view_if_needed()
    expect(page.locator(".katex").filter(has_text="0.7071")).not_to_have_count(0)  # ② Q Kᵀ × 1/√2
    slider.focus()
    thumb = page.locator('[data-testid="stSliderThumbValue"]').filter(has_text=re.compile(r"^0\.\d+$"))
    for value in ("0.72", "0.73", "0.74"):  # 1/√2 snaps onto the 0.01 grid, then one step per press
        slider.press("ArrowRight")
        expect(thumb).to_have_text(value, timeout=REDRAW_MS)
        scaled = page.locator(".katex").filter(has_text=re.compile(r"×\s*" + re.escape(value) + "$"))
        expect(scaled).not_to_have_count(0, timeout=REDRAW_MS)  # ② Q Kᵀ × value
    expect_idle(page)
    expect_no_exception(page)
    page.get_by_role("heading", name=re.compile("Calculator")).scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "step_by_step-calculator.png"))


def test_sidebar_from_a_fresh_session_keeps_the_default_sentence(page: Page, app_url: str):
    page.goto(app_url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Step by step").click()
    expect(page.get_by_role("heading", name="Step by step", level=1)).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    expect(page.locator('[data-testid="stTextArea"] textarea')).to_have_value(re.compile("animal"), timeout=5_000)


PARTS = '[data-testid="stExpander"]:has(summary:has-text("What made this score?"))'
# the waterfall's bar names and values once its title names the chosen query and key, else null
WATERFALL = """title => {
  const el = [...document.querySelectorAll('[data-testid="stExpander"] .js-plotly-plot')].find(
    p => p._fullData && p._fullData[0].type === "waterfall");
  if (!el || !el.layout.title.text.includes(title)) return null;
  return [Array.from(el._fullData[0].y), Array.from(el._fullData[0].x, Number)];
}"""


def test_what_made_this_score(page: Page, app_url: str, artifacts: Path):
    """A student opens "What made this score?", picks a key and sees the score's parts as a waterfall ending in its
    "= raw score" bar, the parts adding up to it; the key goes into the address bar."""
    page.set_viewport_size({"width": 1280, "height": 2400})
    open_step_page(page, app_url)
    panel = page.locator(PARTS)
    panel.locator("summary").click()
    expect(panel.get_by_role("combobox", name="Key token")).to_be_visible(timeout=REDRAW_MS)
    expect_idle(page)
    pick(page, "Key token", "2 · cat")
    # the bars plotly.js drew for the new key (it draws after the run ends, the old chart a moment longer)
    drawn = page.wait_for_function(WATERFALL, arg="8 · it → 2 · cat", timeout=REDRAW_MS)
    names, values = drawn.json_value()
    expect_idle(page)
    expect_no_exception(page)
    chart = page.locator(f"{PARTS} {PLOT}")
    expect(chart.locator("g.ytick text").filter(has_text="= raw score")).to_be_visible()
    assert names[-1] == "= raw score" and names[-2].startswith("other (")  # MiniLM's layer 0: 16 parts, 12 drawn
    assert abs(sum(values[:-1]) - values[-1]) <= 1e-4 * max(1.0, sum(map(abs, values[:-1]))), values
    expect(page).to_have_url(re.compile(r"step_key=2"))
    chart.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "step_by_step-score-parts.png"))
