"""The in-browser layer view (app/ui/layer_view.js) on a test page (tests/e2e/apps/layer_view.py): a head, a token or
a key press changes the view with no websocket frame to the server; the address bar follows and survives the
server's own writes; Back walks the views; a hovered cell prints the weight the page computed, to 3 decimals."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from PIL import Image
from playwright.sync_api import Page, expect

from conftest import running_app

pytestmark = pytest.mark.e2e
SCRIPT = "tests/e2e/apps/layer_view.py"
spec = importlib.util.spec_from_file_location("layer_view_app", Path(__file__).parent / "apps" / "layer_view.py")
APP = importlib.util.module_from_spec(spec)
spec.loader.exec_module(APP)  # not run as __main__: only its patterns()


@pytest.fixture(scope="module")
def url():
    with running_app("e2e-layer-view.log", script=SCRIPT) as served:
        yield served


def params(page: Page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def open_view(page: Page, url: str, n: int = 12) -> list:
    """Open the test page; returns the list that collects every websocket frame the page sends from now on."""
    sent: list = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
    page.goto(f"{url}/?n={n}")
    expect(page.get_by_role("heading", name="Layer 0, head 1 · causal mask on")).to_be_visible()
    expect(page.get_by_text("server runs: 1")).to_be_visible()
    return sent


def test_a_head_switch_sends_nothing_and_the_url_follows(page: Page, url: str):
    sent = open_view(page, url)
    page.wait_for_function("() => new URL(location.href).searchParams.get('head') === '1'")
    before = len(sent)
    page.get_by_role("button", name="Layer 0, head 2").click()
    expect(page.get_by_role("heading", name="Layer 0, head 2 · causal mask on")).to_be_visible()
    expect(page.get_by_role("button", name="Layer 0, head 2")).to_have_attribute("aria-pressed", "true")
    page.wait_for_function("() => new URL(location.href).searchParams.get('head') === '2'")
    assert len(sent) == before, "a head switch sent a message to the server"

    page.get_by_role("button", name="Rerun").click()  # the server runs and writes the URL from its own copy
    expect(page.get_by_text("server runs: 2")).to_be_visible()
    expect(page.get_by_role("heading", name="Layer 0, head 2 · causal mask on")).to_be_visible()
    assert params(page)["head"] == "2" and params(page)["n"] == "12"

    page.go_back()  # the entry before the switch
    expect(page.get_by_role("heading", name="Layer 0, head 1 · causal mask on")).to_be_visible()


def test_the_server_learns_the_views_choice_with_the_next_control_and_before_a_page_switch(page: Page, url: str):
    sent = open_view(page, url)
    page.get_by_role("button", name="Layer 0, head 3").click()
    expect(page.get_by_text("server has head 1, focus None, presses 0")).to_be_visible()  # nothing sent yet
    page.get_by_role("button", name="Rerun").click()  # one run: the button's press and the view's head
    expect(page.get_by_text("server has head 3, focus None, presses 1")).to_be_visible()
    expect(page.get_by_text("server runs: 2")).to_be_visible()
    before = len(sent)
    page.get_by_role("button", name="Layer 0, head 0").click()
    assert len(sent) == before
    page.get_by_text("To the other page").click()  # waits for the server to have head 0, then switches
    expect(page.get_by_text("the other page has head 0")).to_be_visible()


def test_hover_prints_the_weight_and_a_click_highlights_a_token(page: Page, url: str):
    sent = open_view(page, url)
    weights = APP.patterns(1, APP.HEADS, 12)[0, 1]
    cells = page.locator(".lv canvas.cells")
    box = cells.bounding_box()
    side = box["width"] / 12
    before = len(sent)
    for row, col in ((5, 2), (11, 11), (3, 9)):
        page.mouse.move(box["x"] + (col + 0.5) * side, box["y"] + (row + 0.5) * side)
        value = "blocked" if col > row else f"{weights[row, col]:.3f}"
        expect(page.locator(".lv .tip")).to_have_text(f"{row} tok{row} → {col} tok{col}: {value}")
    page.mouse.click(box["x"] + 2.5 * side, box["y"] + 7.5 * side)
    page.wait_for_function("() => new URL(location.href).searchParams.get('focus') === '7'")
    assert len(sent) == before


def test_keys_pick_the_next_head_and_token(page: Page, url: str):
    sent = open_view(page, url)
    before = len(sent)
    page.get_by_label("Attention map: arrow keys pick another head or token").focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("heading", name="Layer 0, head 2 · causal mask on")).to_be_visible()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_role("heading", name="Layer 0, head 0 · causal mask on")).to_be_visible()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.wait_for_function("() => new URL(location.href).searchParams.get('focus') === '1'")
    assert len(sent) == before


def test_the_png_download_is_the_drawn_map_of_the_shown_head(page: Page, url: str, tmp_path):
    sent = open_view(page, url)
    page.get_by_role("button", name="Layer 0, head 2").click()
    before = len(sent)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download PNG").click()
    assert download.value.suggested_filename == "attention_L0_H2.png" and len(sent) == before
    path = tmp_path / "map.png"
    download.value.save_as(path)
    picture = Image.open(path).convert("RGB")
    shown = page.locator(".lv canvas.labels").bounding_box()
    scale = page.evaluate("window.devicePixelRatio")
    # the map as drawn, under two lines that say what it is (its title and the source line)
    head = picture.size[1] - round(shown["height"] * scale)
    assert picture.size[0] == round(shown["width"] * scale) and head > 0
    title = picture.crop((0, 0, picture.size[0], head)).convert("L")
    assert title.getextrema()[0] < 128, "the title is drawn above the map"
    box, whole = page.locator(".lv canvas.cells").bounding_box(), page.locator(".lv canvas.labels").bounding_box()
    side = box["width"] / 12
    for row, col in ((11, 0), (0, 11)):  # a weight's colour, then a blocked cell's grey
        x, y = box["x"] - whole["x"] + (col + 0.5) * side, box["y"] - whole["y"] + (row + 0.5) * side
        pixel = picture.getpixel((int(x * scale), int(y * scale) + head))
        assert (pixel == (205, 208, 214)) == (col > row), pixel
