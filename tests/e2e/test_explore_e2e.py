"""The Explore page in a real browser: what a person sees and does.

Every wait is on a selector or a condition (Playwright ``expect`` with a timeout), never a sleep: the first draw
takes several seconds on 2 cores (model load + the page's scripts). The layer's heads are one in-browser view
(engine/views/layer_view.js): its rows are read from its tooltip, its title from its heading.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

from e2e_helpers import (  # noqa: E402
    PLOT,
    VIEW,
    expect_idle,
    expect_no_exception,
    expect_view,
    expect_view_row,
    section,
    view_cell,
    view_outlined,
    view_rows,
)

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000  # fresh server: torch import + MiniLM load
REDRAW_MS = 20_000


def params(page: Page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def expect_row(page: Page, word: str, timeout: int = REDRAW_MS) -> None:
    """Wait until a row of the view's map is named "<position> <word>"."""
    expect_view_row(page, rf"^\d+ {re.escape(word)}$", timeout)


def expect_settled(page: Page, charts: int = 0, heading: str | re.Pattern | None = None) -> None:
    """The view drawn (titled ``heading`` when given), ``charts`` Plotly charts (an open section's) drawn, and the
    app idle (no status, no spinner)."""
    expect_view(page, heading, REDRAW_MS)
    expect(page.locator(PLOT)).to_have_count(charts, timeout=REDRAW_MS)
    expect_idle(page, REDRAW_MS)


def open_app(page: Page, url: str) -> None:
    page.goto(url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    expect_row(page, "animal")
    expect_settled(page)
    expect_no_exception(page)


def test_explore_type_and_mask(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    open_app(page, app_url)
    texts = view_rows(page)
    assert any(t.endswith(" animal") for t in texts), texts
    assert not any("&#" in t or "&amp;" in t for t in texts), f"escaped entities shown raw: {texts}"
    expect_view(page, "Layer 0, head 0")

    default_png = artifacts / "explore-default.png"
    page.screenshot(path=str(default_png))  # the 1280×1400 viewport: the whole first screen of the app
    publish_screenshot(default_png, "explore.png")

    # type a new sentence; Ctrl+Enter submits a text area
    box = page.locator('[data-testid="stTextArea"] textarea')
    box.click()
    box.press("Control+a")
    box.press_sequentially("Lily found a red ball. She gave it to Tom.")
    box.press("Control+Enter")
    expect_row(page, "lily")
    expect_row(page, "tom")
    assert not any(t.endswith(" animal") for t in view_rows(page))
    expect_no_exception(page)
    expect_settled(page)
    # the labels have room: the map's cells start right of the row names and below the column names, and the
    # whole drawing (names and cells) stays inside the page's column
    view = page.locator(VIEW)
    whole, cells = view.locator("canvas.labels").bounding_box(), view.locator("canvas.cells").bounding_box()
    column = page.locator('[data-testid="stMainBlockContainer"]').bounding_box()
    assert cells["x"] > whole["x"] + 20 and cells["y"] > whole["y"] + 20, (whole, cells)
    assert column["x"] <= whole["x"] and whole["x"] + whole["width"] <= column["x"] + column["width"], (whole, column)

    # causal mask on: the title says so, the view redraws
    page.locator('[data-testid="stCheckbox"]').get_by_text("Causal mask", exact=True).click()
    expect(page.get_by_role("switch", name="Causal mask")).to_be_checked()
    expect_view(page, "Layer 0, head 0 · causal mask on", REDRAW_MS)
    expect_row(page, "tom")  # the typed text is kept
    expect_settled(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "explore-causal.png"))


def test_switch_to_tiny_gpt2(page: Page, app_url: str, artifacts: Path):
    open_app(page, app_url)
    expect_view(page, "Layer 0, head 0")

    page.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name=re.compile("Tiny random GPT-2")).click()
    expect(page.get_by_role("combobox", name="Model")).to_have_value(re.compile("Tiny random GPT-2"))

    expect_view(page, re.compile(r"causal mask on"), REDRAW_MS)
    expect(page.get_by_role("switch", name="Causal mask")).to_be_checked()
    expect_settled(page)
    expect_no_exception(page)
    # the same sentence, GPT-2 tokens (no [CLS]/[SEP])
    texts = view_rows(page)
    assert any("animal" in t for t in texts), texts
    assert not any("[CLS]" in t for t in texts), texts
    page.screenshot(path=str(artifacts / "explore-gpt2.png"))


def test_head_buttons_open_a_head_and_the_mask_tab_compares(page: Page, app_url: str, artifacts: Path):
    open_app(page, app_url)
    heads = page.get_by_role("toolbar", name="Heads")
    buttons = heads.get_by_role("button", name=re.compile(r"^Layer 0, head \d+$"))
    expect(buttons).to_have_count(12)  # MiniLM: 12 heads, each a button inside the page's column
    view = page.locator(VIEW).bounding_box()
    for box in (b.bounding_box() for b in buttons.all()):
        assert view["x"] <= box["x"] and box["x"] + box["width"] <= view["x"] + view["width"], (box, view)
    expect(heads.get_by_role("button", name="Layer 0, head 0")).to_have_attribute("aria-pressed", "true")
    heads.get_by_role("button", name="Layer 0, head 5").click()
    expect_view(page, "Layer 0, head 5", REDRAW_MS)
    expect(heads.get_by_role("button", name="Layer 0, head 5")).to_have_attribute("aria-pressed", "true")
    expect(heads.get_by_role("button", name="Layer 0, head 0")).to_have_attribute("aria-pressed", "false")
    page.wait_for_function("() => new URL(location.href).searchParams.get('head') === '5'")
    heads.screenshot(path=str(artifacts / "explore-heads.png"))

    # the contribution view: the same head as ‖α·f(x)‖ (the legend and the tooltip say so); the view picked
    # in the browser is kept through the server's run
    legend = page.locator(f"{VIEW} .legend")
    page.get_by_text("contribution ‖α·f(x)‖").click()
    expect(legend).to_contain_text("‖α·f(x)‖", timeout=REDRAW_MS)
    expect_settled(page, heading="Layer 0, head 5")
    page.get_by_text("weights α", exact=True).click()
    expect(legend).not_to_contain_text("‖α·f(x)‖", timeout=REDRAW_MS)
    expect(legend).to_contain_text("weight (this head's largest)")

    section(page, "Causal mask off vs on").click()
    expect_settled(page, charts=2, heading="Layer 0, head 5")
    titles = page.locator('[data-testid="stPlotlyChart"] .gtitle')
    expect(titles.filter(has_text="Causal mask OFF")).to_have_count(1)
    expect(titles.filter(has_text="Causal mask ON")).to_have_count(1)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "explore-mask-tab.png"))


def test_a_head_switch_sends_nothing_to_the_server(page: Page, app_url: str):
    """A head button and the arrow keys change the view in the browser: no websocket frame leaves the page; the
    address bar follows."""
    sent: list = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
    open_app(page, app_url)
    before = len(sent)
    assert before > 0, "the page's own messages were not seen: the count below could not fail"
    page.get_by_role("button", name="Layer 0, head 3").click()
    expect_view(page, "Layer 0, head 3")
    page.wait_for_function("() => new URL(location.href).searchParams.get('head') === '3'")
    page.get_by_label("Attention map: arrow keys pick another head or token").focus()
    page.keyboard.press("ArrowRight")
    expect_view(page, "Layer 0, head 4")
    assert view_cell(page, 2, 13).startswith("2 animal → 13 tired: ")
    expect_idle(page)
    assert len(sent) == before, "a head switch sent a message to the server"


def test_the_csv_of_the_head_picked_in_the_view_holds_its_exact_weights(page: Page, app_url: str):
    """Head 5 picked in the browser (the server not told yet): "Download this head as CSV" waits for the server to
    have head 5, then downloads its exact weights, as a direct trace of the engine computes them."""
    import engine
    from app.state import DEFAULT_TEXT

    open_app(page, app_url)
    page.get_by_role("button", name="Layer 0, head 5").click()
    expect_view(page, "Layer 0, head 5")
    with page.expect_download(timeout=REDRAW_MS) as download:
        page.get_by_role("button", name="Download this head as CSV").click()
    assert download.value.suggested_filename == "attention_L0_H5.csv"
    with open(download.value.path(), encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    trace = engine.trace(engine.load("minilm"), DEFAULT_TEXT)
    labels = trace.tokens.labels()
    assert rows[0][1:] == labels and [r[0] for r in rows[1:]] == labels, rows[0]
    got = np.array([[float(x) for x in row[1:]] for row in rows[1:]])
    np.testing.assert_allclose(got, trace.pattern(0, 5), atol=1e-6, rtol=0)
    assert not np.allclose(got, trace.pattern(0, 0), atol=1e-3)  # not the head the server had before
    expect_view(page, "Layer 0, head 5")


def test_a_highlighted_token_survives_a_layer_switch(page: Page, app_url: str):
    """A click on a row highlights its token in the browser; picking another layer (a server run) keeps it: the
    view told the server before that run."""
    open_app(page, app_url)
    assert view_cell(page, 2, 0, click=True).startswith("2 animal → 0 [CLS]: ")
    page.wait_for_function("() => new URL(location.href).searchParams.get('focus') === '2'")
    assert view_outlined(page, row=2) and view_outlined(page, col=2) and not view_outlined(page, row=5)

    page.get_by_role("combobox", name="Layer").click()
    page.get_by_role("option", name="1", exact=True).click()
    expect_view(page, "Layer 1, head 0", REDRAW_MS)
    expect_settled(page)
    assert params(page)["layer"] == "1" and params(page)["focus"] == "2", page.url
    assert view_outlined(page, row=2) and view_outlined(page, col=2) and not view_outlined(page, row=5)
    expect_no_exception(page)


def test_on_a_dense_screen_the_view_is_drawn_in_sharp_pixels(browser: Browser, app_url: str, artifacts: Path):
    """A laptop of two device pixels a CSS pixel: the cells are scaled up without smoothing (each a sharp square)
    and the names are drawn at the screen's own resolution (smoothing blurred the cells and the names)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1400}, device_scale_factor=2)
    try:
        page = context.new_page()
        open_app(page, app_url)
        view = page.locator(VIEW)
        for canvas in ("canvas.cells", ".bar canvas >> nth=0"):
            assert view.locator(canvas).evaluate("c => getComputedStyle(c).imageRendering") == "pixelated"
        shown, own = view.locator("canvas.labels").evaluate("c => [c.getBoundingClientRect().width, c.width]")
        assert own == round(shown * 2), (shown, own)  # its names: two device pixels a CSS pixel
        view.screenshot(path=str(artifacts / "explore-view-dpr2.png"))
    finally:
        context.close()


def test_on_a_laptop_screen_the_head_map_starts_above_the_fold(browser: Browser, app_url: str, artifacts: Path):
    """A 1280×800 laptop: the default page's view of the layer's heads starts inside the first screen."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        open_app(page, app_url)
        box = page.locator(VIEW).bounding_box()
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
    expect_row(page, "lily")
    expect_settled(page)  # the new sentence fully redrawn: one row of section buttons, not two
    expect(section(page, "What comes next?")).to_have_count(1, timeout=REDRAW_MS)
    section(page, "What comes next?").click()
    expect(page.locator(PLOT)).to_have_count(1, timeout=REDRAW_MS)  # the bars, under the view
    bars = page.locator('[data-testid="stPlotlyChart"]').first
    expect(bars.locator(".ytick text")).not_to_have_count(0, timeout=REDRAW_MS)
    top_bar = bars.locator(".point path").first
    before = top_bar.get_attribute("d")
    slider = page.get_by_role("slider").last
    slider.focus()
    for _ in range(5):
        slider.press("ArrowLeft")  # a lower temperature: the top token's bar grows
    expect(top_bar).not_to_have_attribute("d", before or "", timeout=REDRAW_MS)
    expect_settled(page, charts=1)  # the view and the bars
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "explore-next-token.png"))


def test_a_long_text_keeps_its_whole_map_after_a_text_of_another_length(page: Page, app_url: str):
    """511 tokens, then 510, then 511 again, the zoom panel open: the map still shows all 511 (it once shrank to
    one cell).

    The zoom's number boxes vanish with a token count and come back with it; the browser had forgotten them
    while the server kept their values, so it showed the boxes' minimum and sent it as an edit on the next run.
    """
    page.goto(app_url + "?max_tokens=528")
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    expect_settled(page)
    box = page.locator('[data-testid="stTextArea"] textarea')
    zoom = page.locator('[data-testid="stExpander"]').filter(has_text="Zoom:")
    sliders = page.locator('[data-testid="stSlider"]').filter(has_text="tokens (")
    for step, (word, tokens) in enumerate((("an", 511), ("a", 510), ("the", 511), ("one", 511))):
        page.locator(VIEW).evaluate("root => { root.dataset.old = '1'; }")  # the view drawn for the last text
        box.fill(" ".join([word] * (tokens - 2)))  # one token a word, plus [CLS] and [SEP]
        box.press("Control+Enter")
        expect(page.locator(f"{VIEW}:not([data-old])")).to_have_count(1, timeout=REDRAW_MS)  # this text's map
        expect(page.locator('[data-testid="stMarkdown"]').filter(has_text=f"{tokens} tokens ·")).to_have_count(1)
        expect_settled(page)
        expect_no_exception(page)
        rows = view_rows(page)  # an overview of blocks "first–last", the last row holding the last token
        assert len(rows) > 10 and re.match(rf"^(\d+–)?{tokens - 1}\b", rows[-1]), rows[-3:]
        if step == 0:  # the zoom's controls are drawn only in its open panel: open it, and it stays open
            expect(sliders).to_have_count(0)
            box.blur()  # a click that takes the focus from the text box can be lost (upstream Streamlit)
            expect_settled(page)
            zoom.locator("summary").click()
        expect(sliders).to_have_count(2, timeout=REDRAW_MS)
    assert len(view_rows(page)) > 10, "the map lost its rows"
    boxes = zoom.locator('[data-testid="stNumberInput"] input')
    assert [boxes.nth(i).input_value() for i in range(4)] == ["0", "511", "0", "511"]
