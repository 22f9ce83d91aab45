"""The "Is attention the explanation?" page in Chromium: open it, read the charts, switch to MiniLM and a permutation."""

from __future__ import annotations

import html
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
        timeout=FIRST_DRAW_MS
    )
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


TICKS = """el => Array.from(el.querySelectorAll('.xaxislayer-above .xtick text')).map(t => {
  const b = t.getBoundingClientRect();
  return {text: t.textContent, centre: (b.left + b.right) / 2, em: parseFloat(getComputedStyle(t).fontSize)};
})"""


def test_each_methods_bars_label_every_token_of_a_short_sentence(page: Page, app_url: str, artifacts: Path):
    """The six small bar charts (a third of the page wide) showed every other token's label ("0 <bos>, 2 had, …"),
    so a student could not tell which bar was "tom" or "ball"; up to 16 tokens each bar is labelled, none overlapping."""
    page.goto(f"{app_url}/explain")
    expect(page.locator(PLOT)).to_have_count(N_CHARTS, timeout=FIRST_DRAW_MS)
    expect_idle(page, FIRST_DRAW_MS)
    expect_no_exception(page)
    heat = page.locator(PLOT).first.evaluate(
        "el => Array.from(el._fullData[0].x)"
    )  # the heatmap: every token, in order
    assert 8 <= len(heat) <= 16
    for i in range(1, 7):  # the six methods' bars
        ticks = page.locator(PLOT).nth(i).evaluate(TICKS)
        assert [t["text"] for t in ticks] == [html.unescape(x) for x in heat], i  # labels are escaped in the data
        centres = sorted(t["centre"] for t in ticks)  # upright labels: one line of text (1 em) each, side by side
        assert min(b - a for a, b in zip(centres, centres[1:])) >= ticks[0]["em"], (i, centres)
    page.screenshot(path=str(artifacts / "explain_bars_labels.png"), full_page=True)


SUBTITLE = """el => {
  const sub = el.querySelector('.gtitle-subtitle') || el.querySelectorAll('.gtitle')[1];
  const lines = sub ? Array.from(sub.querySelectorAll('tspan.line')) : [];
  const box = el.getBoundingClientRect();
  const parts = (lines.length ? lines : (sub ? [sub] : [])).map(t => {
    const b = t.getBoundingClientRect();
    return {text: t.textContent, left: b.left, right: b.right};
  });
  return {parts, left: box.left, right: box.right};
}"""

LONG_TEXT = "tom had a big red ball and he liked to play with it in the park every day with his dog"


def test_each_methods_bars_source_line_fits_the_chart(page: Page, app_url: str, artifacts: Path):
    """The bar charts' source line (the model and the sentence under the title) ran past the chart's right edge,
    cut without "…"; a narrow chart gets the model on one line and the sentence, shortened with "…", on the next."""
    page.goto(f"{app_url}/explain")
    expect(page.locator(PLOT)).to_have_count(N_CHARTS, timeout=FIRST_DRAW_MS)
    expect_idle(page, FIRST_DRAW_MS)
    box = page.get_by_role("textbox", name="Text")
    box.fill(LONG_TEXT)
    box.press("Enter")
    for i in range(7):  # the heatmap and the six bar charts redrawn for the new sentence
        expect(page.locator(PLOT).nth(i)).to_contain_text("tom had a big red", timeout=FIRST_DRAW_MS)
    expect(page.locator(PLOT)).to_have_count(N_CHARTS, timeout=REDRAW_MS)
    expect_idle(page, FIRST_DRAW_MS)
    expect_no_exception(page)
    for i in range(1, 7):  # the six methods' bars
        sub = page.locator(PLOT).nth(i).evaluate(SUBTITLE)
        texts = [p["text"] for p in sub["parts"]]
        assert len(texts) == 2, (i, texts)  # the model, then the sentence
        assert texts[1].startswith("“tom had") and texts[1].endswith("…”"), (i, texts)
        assert LONG_TEXT.startswith(texts[1][1:-2].rstrip()), (i, texts)  # the sentence's start, cut, not changed
        for part in sub["parts"]:
            assert sub["left"] <= part["left"] and part["right"] <= sub["right"], (i, part, sub)
    heat = page.locator(PLOT).first.evaluate(SUBTITLE)  # the full-width heatmap keeps its one longer line
    assert len(heat["parts"]) == 1 and LONG_TEXT[:60] in heat["parts"][0]["text"], heat
    page.screenshot(path=str(artifacts / "explain_bars_source.png"), full_page=True)
