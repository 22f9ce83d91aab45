"""The Explore page in a real browser: what a person sees and does.

Every wait is on a selector or a condition (Playwright ``expect`` with a timeout), never a sleep:
the first Plotly chart takes several seconds on 2 cores (model load + plotly.js loading lazily).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from e2e_helpers import GRID, PLOT, expect_grid, expect_no_exception, section  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000  # fresh server: torch import + MiniLM load + plotly.js
REDRAW_MS = 20_000


def main_chart(page: Page) -> Locator:
    return page.locator('[data-testid="stPlotlyChart"]').first


def y_ticks(page: Page) -> Locator:
    return main_chart(page).locator(".ytick text")


def tick_texts(page: Page) -> list[str]:
    return [t.strip() for t in y_ticks(page).all_text_contents()]


def expect_tick(page: Page, word: str, timeout: int = REDRAW_MS) -> None:
    """Wait until a y tick of the main chart reads "<position> <word>"."""
    expect(y_ticks(page).filter(has_text=re.compile(rf"^\d+ {re.escape(word)}$"))).not_to_have_count(0, timeout=timeout)


def expect_settled(page: Page, charts: int = 1, grid: bool = True) -> None:
    """Every chart drawn (the head by default) and the layer's grid of heads loaded (a picture; ``grid=False``:
    another section is open), and the app idle (no status, no spinner)."""
    expect(page.locator(PLOT)).to_have_count(charts, timeout=REDRAW_MS)
    if grid:
        expect_grid(page, REDRAW_MS)
    else:
        expect(page.locator(GRID)).to_have_count(0, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stSpinner"]')).to_have_count(0, timeout=REDRAW_MS)


def open_app(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator(PLOT).first).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_tick(page, "animal")
    expect_settled(page)
    expect_no_exception(page)


def test_explore_type_and_mask(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    open_app(page, app_url)
    texts = tick_texts(page)
    assert any(t.endswith(" animal") for t in texts), texts
    assert not any("&#" in t or "&amp;" in t for t in texts), f"escaped entities shown raw: {texts}"
    expect(main_chart(page).locator(".gtitle")).to_have_text("Layer 0, head 0")

    default_png = artifacts / "explore-default.png"
    page.screenshot(path=str(default_png))  # the 1280×1400 viewport: the whole first screen of the app
    publish_screenshot(default_png, "explore.png")

    # type a new sentence; Ctrl+Enter submits a text area
    box = page.locator('[data-testid="stTextArea"] textarea')
    box.click()
    box.press("Control+a")
    box.press_sequentially("Lily found a red ball. She gave it to Tom.")
    box.press("Control+Enter")
    expect_tick(page, "lily")
    expect_tick(page, "tom")
    assert not any(t.endswith(" animal") for t in tick_texts(page))
    expect_no_exception(page)
    expect_settled(page)
    # the margins the server set leave room for the labels and the colour bar: plotly.js's automargin pushed
    # none of them (a push draws the whole figure a second time); _size is plotly.js's own record of the margins
    margins = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')].map(gd =>
            [gd.layout.margin.l, gd._fullLayout._size.l, gd.layout.margin.r, gd._fullLayout._size.r])"""
    )
    assert len(margins) == 1 and all(
        left == drawn_l and right == drawn_r for left, drawn_l, right, drawn_r in margins
    ), margins

    # causal mask on: the title says so, the charts redraw
    page.locator('[data-testid="stCheckbox"]').get_by_text("Causal mask", exact=True).click()
    expect(page.get_by_role("switch", name="Causal mask")).to_be_checked()
    expect(main_chart(page).locator(".gtitle")).to_contain_text("causal mask on", timeout=REDRAW_MS)
    expect_tick(page, "tom")  # the typed text is kept
    expect_settled(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "explore-causal.png"))


def test_switch_to_tiny_gpt2(page: Page, app_url: str, artifacts: Path):
    open_app(page, app_url)
    expect(main_chart(page).locator(".gtitle")).not_to_contain_text("causal")

    page.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name=re.compile("Tiny random GPT-2")).click()
    expect(page.get_by_role("combobox", name="Model")).to_have_value(re.compile("Tiny random GPT-2"))

    expect(main_chart(page).locator(".gtitle")).to_contain_text("causal mask on", timeout=REDRAW_MS)
    expect(page.get_by_role("switch", name="Causal mask")).to_be_checked()
    expect_settled(page)
    expect_no_exception(page)
    # the same sentence, GPT-2 tokens (no [CLS]/[SEP])
    texts = tick_texts(page)
    assert any("animal" in t for t in texts), texts
    assert not any("[CLS]" in t for t in texts), texts
    page.screenshot(path=str(artifacts / "explore-gpt2.png"))


def test_grid_buttons_open_a_head_and_the_mask_tab_compares(page: Page, app_url: str, artifacts: Path):
    open_app(page, app_url)
    grid = expect_grid(page)
    grid.scroll_into_view_if_needed()
    before = grid.get_attribute("src")
    width = grid.evaluate("img => img.getBoundingClientRect().width")
    assert 400 <= width <= 760, width  # MiniLM: 12 heads, two rows of six, inside the page's column
    # one device pixel a CSS pixel: the picture is shown as the browser draws any picture (pixelated is for dense screens)
    assert grid.evaluate("img => getComputedStyle(img).imageRendering") == "auto"
    buttons = page.locator(".st-key-explore_grid_pills")
    expect(buttons.get_by_text(re.compile(r"^H\d+$"))).to_have_count(12)
    buttons.get_by_text("H5", exact=True).click()
    expect(main_chart(page).locator(".gtitle")).to_have_text("Layer 0, head 5", timeout=REDRAW_MS)
    expect_settled(page)
    expect(page.locator(GRID)).not_to_have_attribute("src", before or "", timeout=REDRAW_MS)  # head 5 framed now
    page.locator(GRID).screenshot(path=str(artifacts / "explore-grid.png"))

    # the CSV of the chosen head is built when the button is clicked, and holds its exact weights
    with page.expect_download(timeout=REDRAW_MS) as download:
        page.get_by_role("button", name="Download this head as CSV").click()
    assert download.value.suggested_filename == "attention_L0_H5.csv"
    import csv

    with open(download.value.path(), encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][1] == "0 [CLS]" and rows[3][0] == "2 animal" and len(rows) == len(rows[0])  # 16 × 16 + labels
    for row in rows[1:]:
        assert abs(sum(float(x) for x in row[1:]) - 1.0) < 1e-4

    # the contribution view: the same head as ‖α·f(x)‖ (colour bar and hover say so)
    page.get_by_text("contribution ‖α·f(x)‖").click()
    expect(main_chart(page).locator(".cbtitle")).to_contain_text("‖α·f(x)‖", timeout=REDRAW_MS)
    expect_settled(page)
    page.get_by_text("weights α", exact=True).click()
    expect(main_chart(page).locator(".cbtitle")).not_to_contain_text("‖α·f(x)‖", timeout=REDRAW_MS)

    section(page, "Causal mask off vs on").click()
    expect_settled(page, charts=3, grid=False)
    titles = page.locator('[data-testid="stPlotlyChart"] .gtitle')
    expect(titles.filter(has_text="Causal mask OFF")).to_have_count(1)
    expect(titles.filter(has_text="Causal mask ON")).to_have_count(1)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "explore-mask-tab.png"))


def test_on_a_dense_screen_the_grid_is_drawn_in_sharp_pixels(browser: Browser, app_url: str, artifacts: Path):
    """A laptop of two device pixels a CSS pixel: the browser scales the grid's picture up 2×; nearest-neighbour
    keeps each cell a sharp square (smoothing blurred the cells and the heads' names)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1400}, device_scale_factor=2)
    try:
        page = context.new_page()
        open_app(page, app_url)
        grid = expect_grid(page)
        assert grid.evaluate("img => getComputedStyle(img).imageRendering") == "pixelated"
        shown, own = grid.evaluate("img => [img.getBoundingClientRect().width, img.naturalWidth]")
        assert shown == own, (shown, own)  # at its own size: each of its pixels two by two on the screen
        grid.scroll_into_view_if_needed()
        grid.screenshot(path=str(artifacts / "explore-grid-dpr2.png"))
    finally:
        context.close()


def test_on_a_laptop_screen_the_head_map_starts_above_the_fold(browser: Browser, app_url: str, artifacts: Path):
    """A 1280×800 laptop: the default page's first chart (the head map) starts inside the first screen."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        open_app(page, app_url)
        box = main_chart(page).bounding_box()
        page.screenshot(path=str(artifacts / "explore-1280x800.png"))
        assert box is not None and box["y"] < 800, box
    finally:
        context.close()


def test_what_comes_next_on_the_stories_model(page: Page, app_url: str, artifacts: Path):
    """A decoder's next-token bars, and the temperature slider redrawing them."""
    open_app(page, app_url)
    page.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name=re.compile("GPT trained on stories", re.I)).first.click()
    # the switch redrawn before typing: a box filled while that rerun is in flight can be drawn over by it
    expect(page.get_by_text(re.compile(r"tokens · 3 layers × 4 heads"))).to_be_visible(timeout=REDRAW_MS)
    expect_settled(page)
    box = page.locator('[data-testid="stTextArea"] textarea')
    box.fill("Lily found a red ball. She")
    box.press("Control+Enter")
    expect_tick(page, "lily")
    expect_settled(page)  # the new sentence fully redrawn: one row of section buttons, not two
    expect(section(page, "What comes next?")).to_have_count(1, timeout=REDRAW_MS)
    section(page, "What comes next?").click()
    expect(page.locator(PLOT)).to_have_count(2, timeout=REDRAW_MS)  # the head, and the bars (the grid's section closed)
    bars = page.locator('[data-testid="stPlotlyChart"]').nth(1)
    expect(bars.locator(".ytick text")).not_to_have_count(0, timeout=REDRAW_MS)
    top_bar = bars.locator(".point path").first
    before = top_bar.get_attribute("d")
    slider = page.get_by_role("slider").last
    slider.focus()
    for _ in range(5):
        slider.press("ArrowLeft")  # a lower temperature: the top token's bar grows
    expect(top_bar).not_to_have_attribute("d", before or "", timeout=REDRAW_MS)
    expect_settled(page, charts=2, grid=False)  # the head and the bars
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "explore-next-token.png"))


def test_a_long_text_keeps_its_whole_map_after_a_text_of_another_length(page: Page, app_url: str):
    """511 tokens, then 510, then 511 again, the zoom panel open: the map still shows all 511 (it once shrank to
    one cell).

    The zoom's number boxes vanish with a token count and come back with it; the browser had forgotten them
    while the server kept their values, so it showed the boxes' minimum and sent it as an edit on the next run.
    """
    page.goto(app_url + "?max_tokens=528")
    expect(page.locator(PLOT).first).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_settled(page)
    box = page.locator('[data-testid="stTextArea"] textarea')
    zoom = page.locator('[data-testid="stExpander"]').filter(has_text="Zoom:")
    sliders = page.locator('[data-testid="stSlider"]').filter(has_text="tokens (")
    for step, (word, tokens) in enumerate((("an", 511), ("a", 510), ("the", 511), ("one", 511))):
        box.fill(" ".join([word] * (tokens - 2)))  # one token a word, plus [CLS] and [SEP]
        box.press("Control+Enter")
        expect(main_chart(page)).to_contain_text(f"{word} {word} {word}", timeout=REDRAW_MS)  # this text's map
        expect(page.locator('[data-testid="stMarkdown"]').filter(has_text=f"{tokens} tokens ·")).to_have_count(1)
        expect_settled(page)
        expect_no_exception(page)
        if step == 0:  # the zoom's controls are drawn only in its open panel: open it, and it stays open
            expect(sliders).to_have_count(0)
            box.blur()  # a click that takes the focus from the text box can be lost (upstream Streamlit)
            expect_settled(page)
            zoom.locator("summary").click()
        expect(sliders).to_have_count(2, timeout=REDRAW_MS)
    assert len(tick_texts(page)) > 10, f"the map lost its rows: {tick_texts(page)}"
    boxes = zoom.locator('[data-testid="stNumberInput"] input')
    assert [boxes.nth(i).input_value() for i in range(4)] == ["0", "511", "0", "511"]
