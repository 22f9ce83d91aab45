"""The Heads page in a real browser: the model view and a metrics map drawn, another head picked.

Waits are on selectors or conditions (Playwright ``expect`` with timeouts), never sleeps.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception, expect_view, section  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 30_000
LARGE_TITLE = '[data-testid="stPlotlyChart"] .gtitle'


def open_heads(page: Page, url: str) -> None:
    # Explore first (the model is warm when Heads opens); deep links are covered by test_deep_links_e2e.py.
    page.goto(url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)  # Explore drew
    page.goto(f"{url}/heads")
    expect(page.get_by_role("heading", name="Heads")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.locator(LARGE_TITLE).filter(has_text=re.compile(r"^Layer \d+, head \d+"))).to_have_count(
        1, timeout=FIRST_DRAW_MS
    )
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
    section(page, "Per-head metrics").click()
    expect(page.locator(LARGE_TITLE).filter(has_text="entropy (nats)")).to_have_count(1, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stDataFrame"]')).to_have_count(1, timeout=REDRAW_MS)
    heat = page.locator('[data-testid="stPlotlyChart"]').filter(has_text="entropy (nats)")
    expect(heat.locator(".heatmaplayer, .hm image, image")).not_to_have_count(0)
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "heads-metrics.png"))


def test_ablation_tab_switches_a_head_off(page: Page, app_url: str, artifacts: Path):
    """Open the Ablation tab, switch two MiniLM heads off: the cosine similarity drops below 1."""
    open_heads(page, app_url)
    section(page, "Ablation").click()
    cosine = (
        page.locator('[data-testid="stMetric"]')
        .filter(has_text="Cosine similarity")
        .locator('[data-testid="stMetricValue"]')
    )
    expect(cosine).to_have_text("1.0000", timeout=REDRAW_MS)  # nothing switched off yet
    picker = page.get_by_role("combobox", name=re.compile("Heads to switch off"))
    for label in ("L0 H0", "L2 H5"):  # typed to filter the list, then the exact option chosen
        picker.click()
        picker.press_sequentially(label)
        page.get_by_role("option", name=label, exact=True).click(timeout=REDRAW_MS)
        expect_idle(page)
    page.keyboard.press("Escape")
    expect(cosine).not_to_have_text("1.0000", timeout=REDRAW_MS)
    expect(page.get_by_text("2 of 72 heads switched off")).to_be_visible()  # exactly the two chosen
    value = float(cosine.text_content())
    assert 0.0 < value < 1.0, value
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "heads-ablation.png"))
