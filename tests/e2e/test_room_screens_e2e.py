"""The room's screens as a class sees them (issue 21, item 7): a projector at 1280×720 and a phone at 390×844.

Projector (``?present=1``): Explore's view starts within the first screen and its map fills most of its height,
every row named; the share box's "Show the QR code full screen" opens a dialog whose QR image is large; the
shared link leaves ``present`` out until the teacher asks for it. Phone (an iPhone's User-Agent, as the server sees
it): every column of the map named, its names apart, the title above the map, and the picked query token's row
drawn as bars.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from e2e_helpers import VIEW, expect_idle, expect_no_exception, expect_view, view_header, view_labelled  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 90_000  # fresh server: torch import + MiniLM load
REDRAW_MS = 30_000
IPHONE_UA = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1"
)
MAP = f"{VIEW} canvas.labels"  # the map as drawn: its names and its cells


def overlap(a: list[float], b: list[float]) -> bool:
    return not (a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1])


def open_explore(page: Page, url: str) -> None:
    page.goto(url)
    expect_view(page, "Layer 0, head 0", FIRST_DRAW_MS)
    expect_idle(page)
    expect_no_exception(page)


def assert_title_clear(page: Page) -> None:
    """The view's title is drawn above its map (the column names), not over it."""
    title, drawn = page.locator(f"{VIEW} h3").bounding_box(), page.locator(MAP).bounding_box()
    assert title is not None and drawn is not None and title["y"] + title["height"] <= drawn["y"], (title, drawn)


def test_projector_map_fills_the_first_screen_and_qr_goes_full_screen(
    browser: Browser, app_url: str, artifacts: Path, publish_screenshot
):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        open_explore(page, app_url + "/?present=1")
        page.screenshot(path=str(artifacts / "projector-1280x720.png"))
        publish_screenshot(artifacts / "projector-1280x720.png", "projector.png")
        assert_title_clear(page)
        rows, cols = view_labelled(page)  # every one of the 16 rows and columns keeps its name
        assert len(rows) == 16 and all(rows) and all(cols), (rows, cols)
        view, box = page.locator(VIEW).bounding_box(), page.locator(MAP).bounding_box()  # checked last, below

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

        assert view is not None and box is not None
        assert 0 <= view["y"] < 720 / 3, view  # the view starts in the first screen's top third (one row of controls)
        assert box["height"] >= 720 * 0.6, box  # its map fills most of the screen's height
        assert box["y"] + box["height"] <= 720 + 2, box  # without running off the bottom
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
        view = page.locator(VIEW)
        view.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "phone-390x844.png"))
        box = view.bounding_box()
        drawn = page.locator(MAP).bounding_box()
        assert box["x"] >= 0 and drawn["x"] + drawn["width"] <= 390, (box, drawn)  # inside the phone's width
        rows, cols = view_labelled(page)  # every column named (6 of 17 were), its names apart: neighbours'
        assert len(cols) == 16 and all(cols) and all(rows), (rows, cols)  # baselines a font's height apart at least
        cell = page.locator(f"{VIEW} canvas.cells").bounding_box()["width"] / len(cols)
        assert cell * math.sin(math.radians(60)) >= view_header(page)["font_px"], cell
        assert_title_clear(page)
        # the picked query token's row as bars
        bars = page.locator(".st-key-query_row_bars .js-plotly-plot")
        expect(bars).to_be_visible(timeout=REDRAW_MS)
        assert bars.locator(".bars .point").count() >= 3

        # the layer's heads as buttons a finger can press (MiniLM: 12 heads), inside the phone's width
        heads = page.get_by_role("toolbar", name="Heads").get_by_role("button")
        expect(heads).to_have_count(12)
        for head in (b.bounding_box() for b in heads.all()):
            assert head["x"] >= 0 and head["x"] + head["width"] <= 390 and min(head["width"], head["height"]) >= 44
        page.get_by_role("toolbar", name="Heads").screenshot(path=str(artifacts / "phone-grid-390x844.png"))
        publish_screenshot(artifacts / "phone-grid-390x844.png", "phone.png")
        page.get_by_role("button", name="Layer 0, head 7").tap()
        expect_view(page, "Layer 0, head 7", REDRAW_MS)
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
