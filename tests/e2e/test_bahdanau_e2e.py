"""The Bahdanau attention page in a real browser: the map is drawn, a typed sentence redraws it, steps move.

Waits are on selectors (Playwright ``expect`` with timeouts), never sleeps.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from e2e_helpers import PLOT  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 30_000


def alignment_chart(page: Page) -> Locator:
    return page.locator('[data-testid="stPlotlyChart"]').first


def expect_row(page: Page, word: str) -> None:
    """Wait until a row label of the alignment map reads "<position> <word>"."""
    ticks = alignment_chart(page).locator(".ytick text")
    expect(ticks.filter(has_text=re.compile(rf"^\d+ {re.escape(word)}$"))).not_to_have_count(0, timeout=REDRAW_MS)


def expect_settled(page: Page) -> None:
    expect(page.locator(PLOT)).to_have_count(7, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def test_bahdanau_page(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    page.goto(app_url)  # the entry point, then the sidebar link, as a person arrives
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Bahdanau attention").click()
    expect(page.locator(PLOT).first).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_row(page, "voiture")
    expect_row(page, "rouge")
    expect(alignment_chart(page).locator(".gtitle")).to_contain_text("Alignment map")
    expect_settled(page)
    expect(page.get_by_role("button", name=re.compile("^Try"))).to_be_visible(timeout=REDRAW_MS)
    shot = artifacts / "bahdanau-default.png"
    page.screenshot(path=str(shot))
    publish_screenshot(shot, "bahdanau.png")

    # type a new sentence: the map is redrawn with its words
    box = page.get_by_role("textbox", name="English sentence or a date")
    box.fill("the white cat likes the green apples")
    box.press("Enter")
    expect_row(page, "pommes")
    expect_row(page, "vertes")
    expect_settled(page)

    # step to another decoding step: the step chart's title follows
    energies_title = page.locator(PLOT).nth(2).locator(".gtitle")
    expect(energies_title).to_contain_text("Step 1", timeout=REDRAW_MS)
    thumb = page.get_by_role("slider").first
    thumb.focus()
    thumb.press("ArrowRight")
    thumb.press("ArrowRight")
    expect(energies_title).to_contain_text("Step 3", timeout=REDRAW_MS)
    expect(energies_title).to_contain_text("blanc")
    expect_settled(page)
    page.screenshot(path=str(artifacts / "bahdanau-step3.png"))
    compare = page.locator('[data-testid="stPlotlyChart"]').nth(6)
    compare.scroll_into_view_if_needed()
    expect(compare.locator(".gtitle")).to_contain_text("head average")
    page.screenshot(path=str(artifacts / "bahdanau-compare.png"))
