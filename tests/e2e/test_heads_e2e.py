"""The Heads page in a real browser: the model view and a metrics map drawn, another head picked.

Waits are on selectors or conditions (Playwright ``expect`` with timeouts), never sleeps.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 30_000
PLOT = '[data-testid="stPlotlyChart"] .js-plotly-plot'
LARGE_TITLE = '[data-testid="stPlotlyChart"] .gtitle'


def expect_no_exception(page: Page) -> None:
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def expect_idle(page: Page) -> None:
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stSpinner"]')).to_have_count(0, timeout=REDRAW_MS)


def open_heads(page: Page, url: str) -> None:
    # Explore first (the model is warm when Heads opens); deep links are covered by test_deep_links_e2e.py.
    page.goto(url)
    expect(page.locator(PLOT).first).to_be_visible(timeout=FIRST_DRAW_MS)  # Explore drew
    page.goto(f"{url}/heads")
    expect(page.get_by_role("heading", name="Heads")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.locator(LARGE_TITLE).filter(has_text=re.compile(r"^Layer \d+, head \d+"))).to_have_count(
        1, timeout=FIRST_DRAW_MS)
    expect(page.locator(PLOT)).to_have_count(2, timeout=REDRAW_MS)  # model view + the chosen head large
    expect_idle(page)
    expect_no_exception(page)


def large_title(page: Page) -> str:
    return page.locator(LARGE_TITLE).filter(has_text=re.compile(r"^Layer \d+, head \d+")).first.text_content()


def test_heads_model_view_metrics_and_picking(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    open_heads(page, app_url)
    expect(page.get_by_text("the text is empty")).to_have_count(0)
    model_view = page.locator('[data-testid="stPlotlyChart"]').first
    # MiniLM: 6 layers × 12 heads → head ticks H0..H11, layer ticks L0..L5
    expect(model_view.locator(".xtick text")).to_have_count(12)
    expect(model_view.locator(".ytick text")).to_have_count(6)
    assert large_title(page) == "Layer 0, head 0"

    png = artifacts / "heads-model-view.png"
    page.screenshot(path=str(png))
    publish_screenshot(png, "heads.png")

    # pick another head with the selectboxes: the large view follows
    page.get_by_role("combobox", name="Head").first.click()
    page.get_by_role("option", name="7", exact=True).click()
    expect(page.locator(LARGE_TITLE).filter(has_text="Layer 0, head 7")).to_have_count(1, timeout=REDRAW_MS)
    expect_idle(page)
    expect_no_exception(page)

    # click a tile of the model view (layer 2, head 3): the large view opens that head
    box = model_view.locator(".nsewdrag").first.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] * (3.5 / 12), box["y"] + box["height"] * (2.5 / 6))
    expect(page.locator(LARGE_TITLE).filter(has_text="Layer 2, head 3")).to_have_count(1, timeout=REDRAW_MS)
    expect_idle(page)
    expect_no_exception(page)

    # the metrics tab: a layer × head heatmap and the table
    page.get_by_role("tab", name="Per-head metrics").click()
    expect(page.locator(LARGE_TITLE).filter(has_text="entropy (nats)")).to_have_count(1, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stDataFrame"]')).to_have_count(1, timeout=REDRAW_MS)
    heat = page.locator('[data-testid="stPlotlyChart"]').filter(has_text="entropy (nats)")
    expect(heat.locator(".heatmaplayer, .hm image, image")).not_to_have_count(0)
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "heads-metrics.png"))
