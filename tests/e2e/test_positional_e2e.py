"""The Positional encodings page in a real browser: every tab draws its charts, controls redraw them.

Waits are on selectors (Playwright ``expect`` with timeouts), never sleeps.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception, expect_view, section, section_body  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 90_000  # fresh server: torch import + MiniLM load + plotly.js
REDRAW_MS = 20_000
TABS = {"Sinusoidal": 3, "Learned": 3, "RoPE": 1, "ALiBi": 1, "Order blindness": 3}


def panel(page: Page) -> Locator:
    """The open section (only its charts are on the page)."""
    return section_body(page)


def open_tab(page: Page, name: str) -> Locator:
    section(page, name).click()
    expect(section(page, name)).to_have_attribute("aria-checked", "true", timeout=REDRAW_MS)
    visible = panel(page)
    expect(visible.locator(PLOT)).to_have_count(TABS[name], timeout=REDRAW_MS)
    return visible


def slider_thumb(page: Page, label: str) -> Locator:
    """The keyboard-focusable range input of a Streamlit slider (react-aria renders one per thumb)."""
    return page.locator('[data-testid="stSlider"]').filter(has_text=label).locator('input[type="range"]')


def test_positional_tabs_draw_and_redraw(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    # Enter through the front page (Explore, MiniLM) and follow its link: it opens the Learned tab.
    page.goto(app_url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    page.get_by_role("link", name=re.compile("See the positional encodings")).click()
    expect(page.get_by_role("heading", name="Positional encodings")).to_be_visible(timeout=REDRAW_MS)
    expect(section(page, "Learned")).to_have_attribute("aria-checked", "true")
    learned = panel(page)
    expect(learned.locator(PLOT)).to_have_count(TABS["Learned"], timeout=REDRAW_MS)
    expect(learned.locator(".gtitle").filter(has_text="minilm: embeddings.position_embeddings")).to_have_count(1)
    expect(learned.locator(".gtitle").filter(has_text="Sinusoidal (d=384)")).to_have_count(1)
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "positional-learned.png"))

    # Sinusoidal: three charts; the length slider redraws the table
    sin = open_tab(page, "Sinusoidal")
    title = sin.locator(PLOT).first.locator(".gtitle")
    expect(title).to_have_text("PE table: 64 positions × 64 dimensions")
    expect(sin.locator(".katex").first).to_be_visible()
    shot = artifacts / "positional-sinusoidal.png"
    page.screenshot(path=str(shot))
    publish_screenshot(shot, "positional.png")
    thumb = slider_thumb(page, "Length (number of positions)")
    thumb.focus()
    for _ in range(3):
        thumb.press("ArrowLeft")
    expect(title).to_have_text("PE table: 61 positions × 64 dimensions", timeout=REDRAW_MS)
    start = time.perf_counter()
    thumb.press("ArrowLeft")
    expect(title).to_have_text("PE table: 60 positions × 64 dimensions", timeout=REDRAW_MS)
    print(f"\nbrowser redraw, sinusoidal length: {time.perf_counter() - start:.2f} s (key press to new title)")
    expect_idle(page)
    expect_no_exception(page)

    # RoPE: the pair picture; the key-position slider moves the key arrow (legend text changes)
    rope = open_tab(page, "RoPE")
    key_thumb = slider_thumb(page, "Key position n")
    key_thumb.focus()
    start = time.perf_counter()
    key_thumb.press("ArrowRight")
    expect(rope.locator(".legendtext").filter(has_text="k at position 2")).to_have_count(1, timeout=REDRAW_MS)
    print(f"browser redraw, RoPE key position: {time.perf_counter() - start:.2f} s")
    expect(rope.get_by_text(re.compile("Spread of the scores"))).to_be_visible()
    page.screenshot(path=str(artifacts / "positional-rope.png"))

    # ALiBi: the head grid; fewer heads → fewer subplot titles
    alibi = open_tab(page, "ALiBi")
    expect(alibi.locator(".annotation-text").filter(has_text="head 7")).to_have_count(1)
    heads = slider_thumb(page, "Heads H")
    heads.focus()
    for _ in range(4):
        heads.press("ArrowLeft")
    expect(alibi.locator(".annotation-text").filter(has_text="head 7")).to_have_count(0, timeout=REDRAW_MS)
    expect(alibi.locator(".annotation-text").filter(has_text="head 3")).to_have_count(1)
    page.screenshot(path=str(artifacts / "positional-alibi.png"))

    # Order blindness: three heatmaps and the error table; another shuffle redraws the shuffled axis
    order = open_tab(page, "Order blindness")
    expect(order.locator(".gtitle").filter(has_text="Π P Πᵀ")).to_have_count(1)
    shuffled_chart = order.locator('[data-testid="stPlotlyChart"]').nth(1)
    before = shuffled_chart.locator(".ytick text").all_text_contents()
    seed = page.locator('[data-testid="stNumberInput"]').filter(has_text="Shuffle number").locator("input")
    assert before, "the shuffled chart has no tick labels"
    seed.fill("5")
    start = time.perf_counter()
    seed.press("Enter")
    expect(shuffled_chart.locator(".ytick text")).not_to_have_text(before, timeout=REDRAW_MS)
    print(f"browser redraw, new shuffle (two model copies run): {time.perf_counter() - start:.2f} s")
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "positional-order.png"))
