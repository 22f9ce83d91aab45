"""The bertviz views page in a real browser with the network off for everything but the app.

Every request whose host is not the app's (127.0.0.1 / localhost) is aborted and recorded: the test
asserts none was made, so bertviz's CDN scripts (require.js, d3, jQuery) are not needed to draw.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, Route, expect

from e2e_helpers import expect_no_exception, expect_view  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 90_000  # fresh server: torch import + MiniLM load
REDRAW_MS = 30_000
LOCAL = {"127.0.0.1", "localhost"}


def needed(aborted: list[str]) -> list[str]:
    """The aborted requests: the app must need none (its favicon is drawn locally, app/ui/brand.py)."""
    return list(aborted)


@pytest.fixture
def offline_page(page: Page):
    """``page`` with every non-local request aborted; yields (page, list of aborted URLs)."""
    aborted: list[str] = []

    def handle(route: Route) -> None:
        url = route.request.url
        if urlparse(url).hostname in LOCAL or url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            aborted.append(url)
            route.abort()

    page.context.route("**/*", handle)
    yield page, aborted


def open_page(page: Page, app_url: str) -> None:
    """Start on the app's first page, as a visitor does, then follow the sidebar link."""
    page.goto(app_url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)  # Explore's view of the layer's heads
    page.locator('[data-testid="stSidebarNav"]').get_by_text("bertviz views", exact=True).click()
    expect(page.get_by_role("radiogroup", name="View")).to_be_visible(timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stTextArea"] textarea')).to_have_value(re.compile("animal"))  # kept


def type_text(page: Page, text: str) -> None:
    """Type the sentence (the shared text box kept Explore's sentence: checked in ``open_page``)."""
    box = page.locator('[data-testid="stTextArea"] textarea')
    box.fill(text)
    box.press("Control+Enter")


def pick_view(page: Page, label: str) -> None:
    page.locator('[data-testid="stRadio"]').get_by_text(label, exact=True).click()


def test_bertviz_views_draw_offline(offline_page, app_url: str, artifacts: Path, publish_screenshot):
    page, aborted = offline_page
    open_page(page, app_url)
    type_text(page, "The animal didn't cross the street because it was too tired.")

    # head view: SVG with the sentence's tokens and one line per (query, key, head)
    head = page.frame_locator('iframe[title="bertviz head view"]')
    expect(head.locator("svg text").filter(has_text=re.compile(r"^\s*animal\s*$")).first).to_be_visible(
        timeout=FIRST_DRAW_MS
    )
    expect(head.locator("svg line").first).to_be_attached()
    assert head.locator("svg line").count() > 100
    expect_no_exception(page)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=REDRAW_MS)
    shot = artifacts / "bertviz-head.png"
    page.screenshot(path=str(shot))
    publish_screenshot(shot, "bertviz.png")

    # model view: a thumbnail per layer × head (MiniLM: 6 × 12), axis labels drawn
    pick_view(page, "Model view")
    model = page.frame_locator('iframe[title="bertviz model view"]')
    expect(model.locator("svg text").filter(has_text="Layers").first).to_be_visible(timeout=REDRAW_MS)
    expect(model.locator("svg text").filter(has_text="Heads").first).to_be_visible()
    assert model.locator("svg line").count() > 1000
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "bertviz-model.png"))

    # neuron view: token texts and the query/key headings; hover a token, expand, q·k appears
    pick_view(page, "Neuron view (queries · keys)")
    neuron = page.frame_locator('iframe[title="bertviz neuron view"]')
    expect(neuron.locator("svg text").filter(has_text=re.compile(r"^\s*animal\s*$")).first).to_be_attached(
        timeout=REDRAW_MS
    )
    expect(neuron.locator("svg text").filter(has_text="Query q").first).to_be_attached()
    assert neuron.locator("#queries rect").count() > 50, "query vectors drawn as cells"
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "bertviz-neuron.png"))

    assert needed(aborted) == [], f"requests outside the app were needed: {aborted}"


def test_translator_cross_attention_offline(offline_page, app_url: str, artifacts: Path):
    page, aborted = offline_page
    open_page(page, app_url)
    page.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name=re.compile("Tiny translator")).click()
    expect(page.get_by_role("combobox", name="Model")).to_have_value(re.compile("Tiny translator"))
    type_text(page, "the small cat sees the red apple")
    pick_view(page, "Neuron view (queries · keys)")
    neuron = page.frame_locator('iframe[title="bertviz neuron view"]')
    expect(neuron.locator("svg text").filter(has_text=re.compile(r"^\s*apple\s*$")).first).to_be_attached(
        timeout=FIRST_DRAW_MS
    )
    neuron.locator("select#filter").select_option("cross")
    # cross-attention: left = French tokens written, right = English source
    expect(neuron.locator("svg text").filter(has_text=re.compile(r"^\s*pomme\s*$")).first).to_be_attached(
        timeout=REDRAW_MS
    )
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "bertviz-translator-cross.png"))
    assert needed(aborted) == [], f"requests outside the app were needed: {aborted}"


def frame_fits(page: Page, title: str) -> None:
    """The view's frame is as tall as its drawing: no blank band under it, nothing cut (within a few pixels)."""
    frame = page.locator(f'iframe[title="{title}"]')
    inner = page.frame_locator(f'iframe[title="{title}"]').locator("body")
    expect(inner.locator("svg").first).to_be_attached(timeout=REDRAW_MS)
    page.wait_for_function(
        """(title) => {
          const frame = document.querySelector(`iframe[title="${title}"]`);
          const body = frame && frame.contentDocument && frame.contentDocument.body;
          return !!body && Math.abs(frame.getBoundingClientRect().height - body.scrollHeight) <= 8;
        }""",
        arg=title,
        timeout=REDRAW_MS,
    )
    assert frame.bounding_box()["height"] > 200


def test_views_open_on_the_apps_layer_head_and_token_and_fit_their_frames(page: Page, app_url: str):
    page.goto(f"{app_url}/bertviz_views?layer=2&head=5&focus=3")
    head = page.frame_locator('iframe[title="bertviz head view"]')
    expect(head.locator("select#layer")).to_have_value("2", timeout=FIRST_DRAW_MS)
    # the highlighted token's lines alone, as hovering it shows them (bertviz: the other lines hidden)
    shown = head.locator("#attention line[visibility='visible']")
    expect(shown.first).to_be_attached(timeout=REDRAW_MS)
    assert set(shown.evaluate_all("ls => ls.map(l => l.getAttribute('left-token-index'))")) == {"3"}
    frame_fits(page, "bertviz head view")
    pick_view(page, "Model view")  # taller
    frame_fits(page, "bertviz model view")
    pick_view(page, "Neuron view (queries · keys)")  # shorter again: the frame shrinks with it
    frame_fits(page, "bertviz neuron view")
    expect_no_exception(page)
