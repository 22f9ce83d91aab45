"""Linked tokens in Chromium: click a token on Explore, its row and column are outlined; Step by step opens on it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 20_000
FRAMES = "el => (el.layout.shapes || []).filter(s => s.line && s.line.color === '#e8590c').length"


def test_click_a_token_and_every_map_outlines_it(page: Page, app_url: str, artifacts: Path):
    page.goto(app_url)
    chart = page.locator(PLOT).first
    expect(chart).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    assert chart.evaluate(FRAMES) == 0
    page.get_by_role("radiogroup", name="Highlight a token").get_by_role("radio", name="it", exact=True).click()
    page.wait_for_function(f"sel => ({FRAMES})(document.querySelector(sel)) === 2", arg=PLOT, timeout=REDRAW_MS)
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "linked_tokens.png"), full_page=True)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Step by step").click()
    expect(page.get_by_role("heading", name="Step by step", level=1)).to_be_visible(timeout=REDRAW_MS)
    expect(page.get_by_role("combobox", name="Query token")).to_have_value(re.compile(r"^\d+ · it$"), timeout=REDRAW_MS)
