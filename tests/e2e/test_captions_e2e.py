"""The Captions page in a real browser: open it from the sidebar, step to another word with the keyboard, and see
the large map change to that word's attention (read from plotly.js's own data, checked against the engine); click
a cell of the map and its numbers are listed.

Waits are on selectors and conditions (Playwright ``expect``, a polled function), never sleeps.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect

import engine
from app.views.captions.keys import Captions
from e2e_helpers import PLOT, expect_idle, expect_no_exception
from engine.corpora.scenes import make_scenes
from engine.training.recipes.captioner import HELD_OUT_SEED

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 30_000
LARGE = '[data-testid="stPlotlyChart"]:has-text("α for word")'

#: the large map's attention layer as plotly.js drew it (``_fullData`` holds the base64 arrays decoded)
READ_MAP = """(el) => {
    const plot = el.querySelector('.js-plotly-plot');
    const layer = plot._fullData.find(t => t.name === 'attention');
    return {title: plot._fullLayout.title.text, z: Array.from(layer.z, row => Array.from(row, Number))};
}"""


def large_map(page: Page) -> dict:
    """The large map's title (markup removed) and its weights, as drawn."""
    drawn = page.locator(LARGE).evaluate(READ_MAP)
    return {"title": re.sub(r"<[^>]+>", "", drawn["title"]), "z": np.array(drawn["z"], dtype=float)}


def test_step_to_another_word_and_the_map_follows(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    model = engine.load("scene-captioner")
    first = Captions.DEFAULTS[Captions.scene]  # the scene the page opens on
    ref = model.adapter.trace(model, make_scenes(first + 1, seed=HELD_OUT_SEED)[first].image)

    page.goto(app_url)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Captions", exact=True).click()
    expect(page.get_by_role("heading", name="Captions")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.locator(PLOT)).to_have_count(4, timeout=FIRST_DRAW_MS)
    expect(page.locator(LARGE + " .js-plotly-plot")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    expect_no_exception(page)
    expect(page.get_by_text(ref.caption).first).to_be_visible()

    before = large_map(page)
    assert before["title"].startswith(f"α for word 0, “{ref.words.strings[0]}”")
    np.testing.assert_allclose(before["z"], ref.alphas[0], atol=1e-6)
    shot = artifacts / "captions.png"
    page.screenshot(path=str(shot))
    publish_screenshot(shot, "captions.png")

    # the word slider, moved with the keyboard as a student would: two words on
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="Word").get_by_role("slider")
    slider.focus()
    slider.press("ArrowRight")
    slider.press("ArrowRight")
    # while the page reruns, the old map can stand next to the new one for a moment: wait until only the new one is left
    charts = page.locator('[data-testid="stPlotlyChart"]')
    expect(charts.filter(has_text=f"α for word 2, “{ref.words.strings[2]}”")).to_have_count(1, timeout=REDRAW_MS)
    expect_idle(page)
    expect(page.locator(LARGE)).to_have_count(1, timeout=REDRAW_MS)
    expect_no_exception(page)
    after = large_map(page)
    assert after["title"].startswith(f"α for word 2, “{ref.words.strings[2]}”")
    np.testing.assert_allclose(after["z"], ref.alphas[2], atol=1e-6)
    assert not np.allclose(after["z"], before["z"], atol=1e-3), "the map did not change with the word"
    page.screenshot(path=str(artifacts / "captions-word-2.png"))

    # a click on the map's bottom-right cell makes it the cell whose numbers are listed
    area = page.locator(LARGE).locator(".nsewdrag").first.bounding_box()
    assert area is not None
    page.mouse.click(area["x"] + area["width"] * 15 / 16, area["y"] + area["height"] * 15 / 16)
    expect(page.get_by_label("Grid cell (or click one on the map)")).to_have_value("63", timeout=REDRAW_MS)
    expect_idle(page)
    expect(page.get_by_text("Cell 63 is row 7, column 7")).to_have_count(1, timeout=REDRAW_MS)
    expect_no_exception(page)
