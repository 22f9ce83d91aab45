"""The "Is attention the explanation?" page in Chromium: open it, read the charts, switch to MiniLM and a permutation."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 90_000
REDRAW_MS = 60_000
N_CHARTS = 10  # the heatmap, six bar charts, two agreement matrices, the swap scatter


def test_explain_page_walk(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    page.goto(app_url)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Is attention the explanation?").click()
    expect(page.get_by_role("heading", name="Is attention the explanation?", level=1)).to_be_visible(
        timeout=FIRST_DRAW_MS)
    expect(page.locator(PLOT)).to_have_count(N_CHARTS, timeout=FIRST_DRAW_MS)
    expect_idle(page, REDRAW_MS)
    expect_no_exception(page)
    expect(page.get_by_text("The model predicts")).to_be_visible()
    heat = page.locator(PLOT).first
    expect(heat.locator(".gtitle")).to_contain_text("Importance of each token")
    methods = heat.evaluate("el => Array.from(el._fullData[0].y)")
    assert methods[0] == "raw attention" and methods[-1] == "integrated gradients"
    page.screenshot(path=str(artifacts / "explain_gpt.png"), full_page=True)
    publish_screenshot(artifacts / "explain_gpt.png", "explain.png")

    page.get_by_role("radiogroup", name="What to explain").get_by_text("sentence embedding (MiniLM)").click()
    expect(page.get_by_role("textbox", name="Reference sentence")).to_be_visible(timeout=REDRAW_MS)
    expect(page.get_by_text("cosine similarity of the text")).to_be_visible(timeout=REDRAW_MS)
    expect(page.locator(PLOT)).to_have_count(N_CHARTS, timeout=REDRAW_MS)
    expect_idle(page, REDRAW_MS)
    expect_no_exception(page)
    page.get_by_role("radiogroup", name="Replace with").get_by_text("uniform", exact=True).click()
    expect(page.get_by_text("uniform; the attention change")).to_be_visible(timeout=REDRAW_MS)
    expect_idle(page, REDRAW_MS)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "explain_minilm.png"), full_page=True)
