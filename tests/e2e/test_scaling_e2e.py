"""The Scaling page in Chromium: the two log-log charts drawn at once with both laws (pure, and with an irreducible
term), then one more size trained live joins them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception  # noqa: E402
from engine.analysis.scaling_laws import analyse, read_curves

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
LIVE_MS = 240_000  # building the stories corpus once and 300 steps of the smallest size on a shared core
CURVES = Path(__file__).resolve().parents[2] / "assets" / "scaling" / "stories-scaling.json"


def test_scaling_page_walk(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    alpha = json.loads(CURVES.read_text())["fit"]["alpha"]
    with_e, compute_e, _ = analyse(read_curves(CURVES).runs, irreducible=True)
    page.goto(app_url)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Scaling", exact=True).click()
    expect(page.get_by_role("heading", name="Scaling laws, in miniature", level=1)).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.locator(PLOT)).to_have_count(2, timeout=FIRST_DRAW_MS)
    expect_idle(page, FIRST_DRAW_MS)
    expect_no_exception(page)
    params = page.locator(PLOT).first
    expect(params.locator(".gtitle")).to_contain_text("Loss against parameters")
    assert params.evaluate("el => el._fullLayout.xaxis.type") == "log"
    names = params.evaluate("el => el._fullData.map(t => t.name)")
    assert f"fit: L = (N_c / N)^{alpha:.3f}" in names and "trained here" not in names
    assert f"fit with E: L = {with_e.irreducible:.2f} + (N_c / N)^{with_e.alpha:.3f}" in names
    compute_names = page.locator(PLOT).nth(1).evaluate("el => el._fullData.map(t => t.name)")
    assert f"frontier fit with E: L = {compute_e.irreducible:.2f} + (C_c / C)^{compute_e.alpha:.3f}" in compute_names
    expect(page.get_by_text(f"α = {alpha:.3f}").first).to_be_visible()
    expect(page.get_by_text("The law with E fits better")).to_be_visible()
    page.screenshot(path=str(artifacts / "scaling.png"), full_page=True)
    publish_screenshot(artifacts / "scaling.png", "scaling.png")

    page.get_by_role("radiogroup", name="Size").get_by_text("d20-L1", exact=False).click()
    page.get_by_role("button", name="Train it").click()
    expect(page.get_by_text("(orange) in the fit as well")).to_be_visible(timeout=LIVE_MS)
    expect_idle(page, FIRST_DRAW_MS)
    expect_no_exception(page)
    names = page.locator(PLOT).first.evaluate("el => el._fullData.map(t => t.name)")
    assert "trained here" in names
    page.screenshot(path=str(artifacts / "scaling_live.png"), full_page=True)


LEGEND_AND_TITLE = """el => {
  const box = s => { const e = el.querySelector(s); const b = e.getBoundingClientRect(); return [b.top, b.bottom]; };
  return {legend: box('.legend'), xtitle: box('.g-xtitle'), ticks: box('.xaxislayer-above')};
}"""


@pytest.mark.parametrize("width", [1280, 900])
def test_the_charts_legends_sit_below_their_axis_titles(page: Page, app_url: str, artifacts: Path, width: int):
    """The compute chart's nine legend entries wrap to three rows in its half-width column; placed at a fraction of
    the plot's height, the legend rose onto the x-axis title ("compute C = 6·N·tokens ...") and hid it."""
    page.set_viewport_size({"width": width, "height": 1400})
    page.goto(f"{app_url}/scaling")
    expect(page.locator(PLOT)).to_have_count(2, timeout=FIRST_DRAW_MS)
    expect_idle(page, FIRST_DRAW_MS)
    expect_no_exception(page)
    for i in range(2):
        chart = page.locator(PLOT).nth(i)
        boxes = chart.evaluate(LEGEND_AND_TITLE)
        assert boxes["legend"][0] >= boxes["xtitle"][1] - 0.5, (i, boxes)  # the legend starts below the title
        assert boxes["xtitle"][0] >= boxes["ticks"][1] - 0.5, (i, boxes)  # and the title below the tick labels
    page.screenshot(path=str(artifacts / f"scaling_legends_{width}.png"), full_page=True)
