"""The room's screens as a class sees them (issue 21, item 7): a projector at 1280×720 and a phone at 390×844.

Projector (``?present=1``): Explore's head map starts within the first screen and fills most of its height;
the share box's "Show the QR code full screen" opens a dialog whose QR image is large; the shared link
leaves ``present`` out until the teacher asks for it. Phone (an iPhone's User-Agent, as the server sees
it): no two column labels of the map overlap (their bounding boxes), no toolbar sits over the title, and
the picked query token's row is drawn as bars.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from e2e_helpers import expect_grid, expect_idle, expect_no_exception  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 90_000  # fresh server: torch import + MiniLM load + plotly.js
REDRAW_MS = 30_000
IPHONE_UA = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1"
)
MAIN_MAP = ".st-key-main_heatmap .js-plotly-plot"


def open_explore(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator(MAIN_MAP)).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.locator(MAIN_MAP + " .main-svg").first).to_be_attached(timeout=REDRAW_MS)
    expect_idle(page)
    expect_no_exception(page)


def boxes_of(page: Page, selector: str) -> list[list[float]]:
    """[left, top, right, bottom] of every element ``selector`` matches inside the main map."""
    return page.locator(MAIN_MAP).evaluate(f"""(gd) => Array.from(gd.querySelectorAll('{selector}')).map(t => {{
        const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];}})""")


def overlap(a: list[float], b: list[float]) -> bool:
    return not (a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1])


def assert_title_clear(page: Page) -> None:
    """The map's title and subtitle (model and sentence) are not written over its column labels."""
    titles = boxes_of(page, ".gtitle, .gtitle-subtitle")
    labels = boxes_of(page, ".xtick text")
    assert len(titles) == 2 and labels, (titles, labels)
    for t in titles:
        for label in labels:
            assert not overlap(t, label), (t, label)


def test_projector_map_fills_the_first_screen_and_qr_goes_full_screen(
    browser: Browser, app_url: str, artifacts: Path, publish_screenshot
):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        open_explore(page, app_url + "/?present=1")
        page.screenshot(path=str(artifacts / "projector-1280x720.png"))
        publish_screenshot(artifacts / "projector-1280x720.png", "projector.png")
        box = page.locator(MAIN_MAP + " .main-svg").first.bounding_box()  # what Plotly drew, not its box
        assert box is not None
        assert 0 <= box["y"] < 720 / 3, box  # the map starts in the first screen's top third (one row of controls)
        assert box["height"] >= 720 * 0.6, box  # and it fills most of the screen's height
        assert box["y"] + box["height"] <= 720 + 2, box  # without running off the bottom
        assert_title_clear(page)
        # every one of the 16 rows keeps its label, one em of the tick font apart at least: none collide
        rows = page.locator(MAIN_MAP).evaluate("""(gd) => Array.from(gd.querySelectorAll('.ytick text')).map(t => {
            const r = t.getBoundingClientRect();
            return [(r.top + r.bottom) / 2, parseFloat(getComputedStyle(t).fontSize)];})""")
        assert len(rows) == 16, rows
        assert all(b[0] - a[0] >= a[1] - 0.5 for a, b in zip(rows, rows[1:])), rows
        assert rows[-1][0] <= 720, rows

        # the teacher opens the sidebar's share box; the shared link leaves presenter mode out
        page.get_by_test_id("stExpandSidebarButton").click()
        page.get_by_text("Share this view").click()
        code = page.get_by_test_id("stSidebar").get_by_test_id("stCode")
        expect(code).to_contain_text("http", timeout=REDRAW_MS)
        assert "present=" not in code.inner_text()
        page.get_by_text("Open in presenter mode").click()
        expect(code).to_contain_text("present=1", timeout=REDRAW_MS)

        page.get_by_role("button", name="Show the QR code full screen").click()
        dialog = page.get_by_role("dialog")
        image = dialog.get_by_role("img", name="QR code of the shared link, full screen")
        expect(image).to_be_visible(timeout=REDRAW_MS)
        page.screenshot(path=str(artifacts / "projector-qr-dialog.png"))
        qr = image.bounding_box()
        assert qr is not None and min(qr["width"], qr["height"]) >= 400, qr  # the sidebar's was ~190 px
        assert qr["y"] >= 0 and qr["y"] + qr["height"] <= 720, qr  # whole on the screen: scannable
        expect_no_exception(page)
    finally:
        context.close()


def test_phone_view_reads(browser: Browser, app_url: str, artifacts: Path, publish_screenshot):
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        user_agent=IPHONE_UA,
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    page = context.new_page()
    try:
        open_explore(page, app_url + "/")
        chart = page.locator(MAIN_MAP)
        chart.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "phone-390x844.png"))
        boxes = boxes_of(page, ".xtick text")
        assert len(boxes) >= 3, boxes
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert not overlap(a, b), (a, b)
        # no toolbar over the title: the phone view has no modebar at all, and the title is drawn
        assert page.locator(MAIN_MAP + " .modebar-container .modebar-btn").count() == 0
        expect(chart.locator(".gtitle")).to_contain_text("Layer")
        assert_title_clear(page)
        # the picked query token's row as bars
        bars = page.locator(".st-key-query_row_bars .js-plotly-plot")
        expect(bars).to_be_visible(timeout=REDRAW_MS)
        assert bars.locator(".bars .point").count() >= 3

        # the layer's heads three to a row (MiniLM: 12 heads, 4 rows): one picture inside the phone's width
        grid = expect_grid(page, REDRAW_MS)
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        assert box["width"] / 3 >= 90 and box["height"] > box["width"], box  # a tile ≥ 90 px across (was ~25)
        page.screenshot(path=str(artifacts / "phone-grid-390x844.png"))
        publish_screenshot(artifacts / "phone-grid-390x844.png", "phone.png")
        # a finger opens a head with the grid's buttons, one per head
        page.locator(".st-key-explore_grid_pills").get_by_text("H7", exact=True).tap()
        expect(page.locator(MAIN_MAP + " .gtitle").filter(has_text="Layer 0, head 7")).to_have_count(
            1, timeout=REDRAW_MS
        )
        expect_no_exception(page)
    finally:
        context.close()


def test_projector_heads_grid_shows_every_layer_with_square_tiles(browser: Browser, app_url: str, artifacts: Path):
    """Heads at 1280×720 in presenter mode: all six layers of MiniLM's grid are on the first screen (each row label
    and every head's button above the fold), its thumbnails square and large enough to click."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        page.goto(app_url + "/heads?present=1")
        grid = page.get_by_role("toolbar", name="Heads")
        expect(grid.get_by_role("button", name=re.compile(r"^Layer \d, head \d+$"))).to_have_count(
            72, timeout=FIRST_DRAW_MS
        )
        expect_idle(page)
        expect_no_exception(page)
        page.screenshot(path=str(artifacts / "projector-heads-1280x720.png"))
        rows = grid.locator(":scope > div > span:first-child").evaluate_all(
            "(spans) => spans.map((s) => { const r = s.getBoundingClientRect(); return [s.textContent, r.top, r.bottom]; })"
        )
        assert [name for name, _, _ in rows] == [""] + [f"L{layer}" for layer in range(6)], rows
        assert all(0 <= top and bottom <= 720 for _, top, bottom in rows), rows
        thumbs = grid.locator("button canvas").evaluate_all(
            "(cs) => cs.map((c) => { const r = c.getBoundingClientRect(); return [r.width, r.height, r.bottom]; })"
        )
        assert len(thumbs) == 72 and all(w == h >= 36 and bottom <= 720 for w, h, bottom in thumbs), thumbs
    finally:
        context.close()


def test_class_which_head_map_prints_every_token_apart(browser: Browser, app_url: str, artifacts: Path):
    """The teacher's "which head is this?" map: beside the answers for the default sentence (16 tokens), under them
    for a 32-token one; either way every token keeps its column label, no two labels' boxes overlap, and the
    labels are the tokens' own (a repeated word as "the (2)", no index). The class's answers have a caption."""
    long_words = (
        "the cat saw the dog and the bird and then the cat ran away from the big dog to the old red "
        "house by the sea on a cold day"
    ).split()
    assert len(long_words) == 30  # whole words in MiniLM's vocabulary: 32 tokens with [CLS] and [SEP]
    context = browser.new_context(viewport={"width": 1280, "height": 1400})
    page = context.new_page()
    try:
        page.goto(app_url + "/classroom")
        page.get_by_role("button", name="Start a class").click(timeout=FIRST_DRAW_MS)
        expect(page.get_by_text("Class code:")).to_be_visible(timeout=FIRST_DRAW_MS)
        page.get_by_role("tab", name="Which head is this?").click()
        for n, text, second in [(16, None, "the"), (32, " ".join(long_words), "the")]:
            if text is not None:
                page.locator(".st-key-class_h_text input").fill(text)
            page.locator(".st-key-class_ask_head button").click()
            plot = page.locator('[class*="st-key-class_class_map_"] .js-plotly-plot')
            expect(plot.locator(".xtick text")).to_have_count(n, timeout=REDRAW_MS)
            expect_idle(page)
            expect_no_exception(page)
            plot.scroll_into_view_if_needed()
            page.screenshot(path=str(artifacts / f"class-which-head-{n}-tokens-1280.png"))
            labels = plot.evaluate("""(gd) => Array.from(gd.querySelectorAll('.xtick text')).map(t => {
                const r = t.getBoundingClientRect(); return [t.textContent, [r.left, r.top, r.right, r.bottom]];})""")
            names = [name for name, _ in labels]
            assert names[0] == "[CLS]" and names[1] == second and names[-1] == "[SEP]", names
            assert len(set(names)) == n and not any(name.split(".")[0].isdigit() for name in names), names
            for (_, a), (_, b) in zip(labels, labels[1:]):
                assert not overlap(a, b), (a, b)
            expect(page.get_by_text("Each bar is one answer", exact=False).first).to_be_visible()
    finally:
        context.close()
