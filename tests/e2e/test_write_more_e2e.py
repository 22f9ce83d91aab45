"""Explore's "Write more" tab in a real browser: type a prompt for the stories model, let it write, and see
the generated words highlighted after the prompt and the chart with the generated part marked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception, expect_view, expect_view_row, pick_model, section  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 20_000
PROMPT = "Lily found a red ball. She"


def test_write_more_on_the_stories_model(page: Page, app_url: str, artifacts: Path):
    page.goto(app_url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    pick_model(page, "GPT trained on stories")
    box = page.locator('[data-testid="stTextArea"] textarea')
    box.fill(PROMPT)
    box.press("Control+Enter")
    expect_view_row(page, r"^\d+ lily$", REDRAW_MS)  # the view of the typed prompt
    expect_idle(page)  # the model switch and the new sentence fully redrawn: one row of section buttons, not two
    expect(section(page, "Write more")).to_have_count(1, timeout=REDRAW_MS)
    section(page, "Write more").click()
    tokens = page.get_by_role("spinbutton", name="Tokens to write")
    expect(tokens).to_have_value("20", timeout=REDRAW_MS)  # the default: greedy, 20 tokens
    tokens.fill("12")
    tokens.press("Enter")  # the form submits on Enter (keyboard only)
    written = page.locator('[data-testid="stMarkdownContainer"] strong').filter(has_text=re.compile(r"\w"))
    expect(written.first).to_be_visible(timeout=REDRAW_MS)
    paragraph = page.locator('[data-testid="stMarkdownContainer"] p').filter(has=page.locator("strong"))
    expect(paragraph.filter(has_text="lily found a red ball . she")).to_have_count(1)  # prompt plain, then bold
    expect(page.locator(PLOT)).to_have_count(1, timeout=REDRAW_MS)  # under the view: the only Plotly chart
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    expect(chart.locator(".gtitle")).to_contain_text("prompt + generated")
    expect(chart.locator(".shapelayer path")).to_have_count(2)  # the dashed boundary lines
    expect(chart.locator(".ytick text tspan[style*='fill']").first).to_be_attached()  # coloured generated labels
    expect_idle(page)
    expect_no_exception(page)
    paragraph.first.scroll_into_view_if_needed()  # Streamlit scrolls an inner container: bring the result in view
    page.screenshot(path=str(artifacts / "explore-write-more.png"))
