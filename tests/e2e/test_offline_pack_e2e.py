"""An offline lesson pack opened as a student would (issue 21, 4): the exported HTML file from disk (``file://``) in
Chromium with every http(s) request aborted. The Plotly charts are drawn (plotly.js and the data come from the file
itself), a note stands where a view has no chart, a note's ``<script>`` is shown as text, and no request leaves the
page. The first test builds the pack through the functions the download buttons call (no server); the second saves
the view on screen from the app's Share box and opens the downloaded file the same way.

Waits are on selectors, never sleeps.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from app.state import K
from app.views.bahdanau.keys import Bahdanau
from app.views.captions.keys import Captions
from app.views.lessons.lesson_file import Lesson, Link, Step
from app.views.lessons.offline_pack import lesson_html
from app.views.vit.keys import Vit
from e2e_helpers import expect_idle, expect_no_exception, expect_view

pytestmark = pytest.mark.e2e

DRAW_MS = 30_000
LOAD_MS = 60_000  # the app's first page loads MiniLM
NOTE = "Look at <script>document.title = 'hacked'</script> the diagonal.\nSecond line."


@pytest.fixture(scope="module")
def pack_file(tmp_path_factory):
    lesson = Lesson(
        "Offline <b>check</b>",
        (
            Step(
                "a",
                "Where it looks",
                NOTE,
                (Link("explore.py", "MiniLM, layer 3 head 1", {K.layer: "3", K.head: "1"}),),
            ),
            Step(
                "b",
                "Alignment",
                "",
                (
                    Link("bahdanau.py", "The red car", {Bahdanau.text: "the red car is fast"}),
                    Link("positional.py", "Order blindness", {"pos_tab": "order"}),
                ),
            ),
            Step(
                "c",
                "Pictures",
                "",
                (
                    Link("vit.py", "Digit 7", {Vit.digit: "7", Vit.layer: "1", Vit.head: "2"}),
                    Link("captions.py", "Scene 12", {Captions.scene: "12"}),
                ),
            ),
        ),
    )
    path = tmp_path_factory.mktemp("pack") / "lesson-offline.html"
    path.write_text(lesson_html(lesson), encoding="utf-8")
    return path


def test_the_pack_draws_its_charts_from_disk_with_the_network_cut(page: Page, pack_file):
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.context.route(re.compile(r"^https?://"), lambda route: route.abort())
    page.goto(pack_file.as_uri())
    charts = page.locator("div.chart")
    expect(charts).to_have_count(5)  # Explore's head, Bahdanau's map, the ViT's [CLS] map and heads, the captions
    for i in range(5):  # plotly.js (from the file) drew each one: its SVG and the heatmap's picture
        expect(charts.nth(i).locator(".main-svg").first).to_be_attached(timeout=DRAW_MS)
        expect(charts.nth(i).locator("g.hm image").first).to_be_attached(timeout=DRAW_MS)
    for i in range(2):
        expect(charts.nth(i).locator("g.hm image")).to_have_count(1)
    vit = charts.nth(2)  # the image under the overlay and the weights, both heatmaps of the grey digit
    expect(vit.locator("g.hm image")).to_have_count(2)
    expect(vit.locator(".gtitle")).to_have_text("[CLS] → patches, layer 1, head 2")
    vit.scroll_into_view_if_needed()
    box = vit.locator(".nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # a patch's weight on hover
    expect(vit.locator(".hovertext")).to_contain_text("weight", timeout=DRAW_MS)
    expect(charts.nth(4).locator(".annotation-text").first).to_be_attached()  # the captions' words name their maps
    expect(page.locator("p.note")).to_have_count(1)
    expect(page.locator("p.note")).to_contain_text("Order blindness: No chart in the offline pack")
    assert page.locator("#step-1 .text").inner_text() == NOTE  # the teacher's text, literally
    assert page.title() == "Offline <b>check</b>"  # the note's script never ran
    expect(page.locator("h1")).to_have_text("Offline <b>check</b>")
    assert [url for url in asked if not url.startswith("file://")] == []  # nothing left the file


def test_the_share_box_saves_the_view_on_screen_as_a_file_that_draws_offline(page: Page, app_url: str, tmp_path):
    page.goto(f"{app_url}/?layer=2&head=3")
    expect_view(page, "Layer 2, head 3", LOAD_MS)
    expect_idle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Share this view").click()
    sidebar.get_by_role("button", name="Build this view as offline HTML").click()
    save = sidebar.get_by_role("button", name="Download this view as offline HTML")
    expect(save).to_be_visible(timeout=LOAD_MS)
    expect_no_exception(page)
    with page.expect_download() as download:
        save.click()
    path = tmp_path / "view.html"
    download.value.save_as(path)

    offline = page.context.browser.new_page()
    asked: list[str] = []
    offline.on("request", lambda request: asked.append(request.url))
    offline.route(re.compile(r"^https?://"), lambda route: route.abort())
    offline.goto(path.as_uri())
    expect(offline.locator("div.chart .main-svg").first).to_be_attached(timeout=DRAW_MS)
    expect(offline.locator("div.chart g.hm image")).to_have_count(1, timeout=DRAW_MS)
    expect(offline.locator("div.chart .gtitle").first).to_have_text("Layer 2, head 3")
    assert [url for url in asked if not url.startswith("file://")] == []
    offline.close()
