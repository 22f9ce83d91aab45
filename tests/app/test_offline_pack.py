"""The offline lesson pack (issue 21, 4): what its charts hold and the buttons that make it.

The numbers in the HTML are read back from the file (each chart's JSON beside its div) and compared with the
service's map and with float64 re-computations from the captured queries and keys (softmax(q·kᵀ·scale), the
causal mask, block maxima of a pooled long input) or the engine's own alignment. A view with no chart, a model that
fails and a note with ``<script>`` in it give notes and literal text, never a crash. AppTest presses the Lessons
editor's and the Share box's buttons and reads the file their download buttons serve.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from test_lesson_editor import downloads  # noqa: F401 — the fixture that keeps the download buttons' callables

from app import services
from app.components.lesson_draft import WRITE_TAB
from app.components.offline_pack import lesson_html, view_html
from app.lesson_file import Choice, Lesson, Link, Step
from app.state import DEFAULT_TEXT, Bahdanau, Draft, K, Look, Offline, Share
from apptest_helpers import assert_clean, decode, main_figure, open_page, z

SCRIPT_NOTE = "<script>alert('x')</script> & <b>not bold</b>"


def charts(page: str) -> list[dict]:
    """Every chart's figure, parsed back from the JSON the pack holds for it, in the order of the divs."""
    divs = re.findall(r'<div class="chart" id="(chart-\d+)"></div>', page)
    data = dict(re.findall(r'<script type="application/json" id="(chart-\d+)-data">(.*?)</script>', page, re.S))
    assert sorted(divs) == sorted(data) and len(divs) == len(set(divs))
    return [json.loads(data[d]) for d in divs]


def notes(page: str) -> list[str]:
    return re.findall(r'<p class="note" role="note">(.*?)</p>', page, re.S)


def softmax64(att, layer: int, head: int, causal: bool = False) -> np.ndarray:
    """The head's weights in float64 from its captured queries and keys (NaN where the mask blocks)."""
    q = att.queries[layer][head].astype(np.float64)
    k = att.keys[layer][head].astype(np.float64)
    s = q @ k.T * float(att.scales[layer])
    if causal:
        s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return np.where(np.isneginf(s), np.nan, p) if causal else p


def test_a_head_map_holds_the_services_numbers_and_the_models():
    page = view_html("explore", {K.layer: "3", K.head: "1"})
    (fig,) = charts(page)
    view = services.pack_view("explore", {K.layer: "3", K.head: "1"})
    assert isinstance(view, services.HeadMap) and (view.layer, view.head) == (3, 1)
    drawn = decode(fig["data"][0]["z"])
    np.testing.assert_array_equal(drawn, view.data.values)  # the service's map, value for value
    att = services.attention_block(services.get_trace(services.TraceRequest("minilm", DEFAULT_TEXT, None, 128)))
    np.testing.assert_allclose(drawn, softmax64(att, 3, 1), atol=2e-6)
    assert fig["layout"]["title"]["text"] == "Layer 3, head 1"
    assert "minilm" in fig["layout"]["title"]["subtitle"]["text"]
    assert "plotly.js" in page and "Plotly.newPlot" in page and len(page) > 1_000_000  # plotly.js is inside
    asks_more = services.pack_view("explore", {K.max_tokens: "16384"})  # one click traces every link: bounded
    assert asks_more.request.max_tokens == services.PACK_MAX_TOKENS and not asks_more.cut  # a short text is whole


def test_a_heads_link_gives_the_model_view_and_the_chosen_head():
    from app.components.head_views import GAP

    model_view, chosen = charts(view_html("heads", {K.layer: "1", K.head: "2"}))
    att = services.attention_block(services.get_trace(services.TraceRequest("minilm", DEFAULT_TEXT, None, 128)))
    n = att.n_queries
    weights = decode(model_view["data"][0]["customdata"])  # every head's weights, tiles with NaN gaps between
    for layer, head in ((0, 0), (1, 2), (att.n_layers - 1, att.n_heads - 1)):
        r, c = layer * (n + GAP), head * (n + GAP)
        np.testing.assert_allclose(weights[r : r + n, c : c + n], softmax64(att, layer, head), atol=2e-6)
    assert model_view["layout"]["shapes"][0]["x0"] == 2 * (n + GAP) - 0.5  # the red frame on the chosen head
    np.testing.assert_allclose(decode(chosen["data"][0]["z"]), softmax64(att, 1, 2), atol=2e-6)


def test_the_causal_mask_a_long_input_pooled_and_the_alignment_map():
    causal = charts(view_html("explore", {K.causal: "1", K.layer: "0", K.head: "2"}))[0]
    att = services.attention_block(services.get_trace(services.TraceRequest("minilm", DEFAULT_TEXT, True, 128)))
    np.testing.assert_allclose(decode(causal["data"][0]["z"]), softmax64(att, 0, 2, causal=True), atol=2e-6)
    assert "causal mask on" in causal["layout"]["title"]["text"]

    long_text = " ".join(["the cat sat on the mat and looked at the dog ."] * 40)  # ~480 tokens
    params = {K.text: long_text, K.max_tokens: "512"}
    (fig,) = charts(page := view_html("explore", params))
    drawn = decode(fig["data"][0]["z"])
    att = services.attention_block(services.get_trace(services.TraceRequest("minilm", long_text, None, 512)))
    n = att.n_queries
    assert n > services.PACK_CELLS and drawn.shape == (services.PACK_CELLS, services.PACK_CELLS)
    from engine.analysis.overview import overview_edges

    edges = overview_edges(n, services.PACK_CELLS)  # 256 blocks covering every token, of n // 256 or one more
    assert (
        edges[0] == 0
        and edges[-1] == n
        and set(np.diff(edges)) <= {n // services.PACK_CELLS, -(-n // services.PACK_CELLS)}
    )
    full = softmax64(att, 0, 0)
    pooled = np.maximum.reduceat(np.maximum.reduceat(full, edges[:-1], axis=0), edges[:-1], axis=1)
    np.testing.assert_allclose(drawn, pooled, atol=2e-6)
    assert f"at most {services.PACK_CELLS} × {services.PACK_CELLS} cells" in page

    text = "the red car is fast"
    (fig,) = charts(view_html("bahdanau", {Bahdanau.text: text}))
    import engine

    reference = engine.trace(engine.load("bahdanau-translator"), text)  # not through the app's caches
    np.testing.assert_allclose(decode(fig["data"][0]["z"]), reference.alignment, atol=1e-6)
    assert fig["data"][1]["name"] == "gold link"


def test_a_failing_view_and_a_page_without_chart_give_notes_and_text_stays_literal():
    lesson = Lesson(
        "Mixed <i>lesson</i>",
        (
            Step(
                "a",
                "A <b>title</b>",
                SCRIPT_NOTE,
                (
                    Link("explore.py", "A folder model", {K.hub_id: "/no/such/model"}),
                    Link("positional.py", "Order blindness", {"pos_tab": "order"}),
                ),
                Choice("Is <script> shown?", ("<yes>", "no"), 0, "It is <em>text</em>."),
            ),
            Step("b", "Empty link", "", (Link("bahdanau.py", "No sentence", {Bahdanau.text: ""}),)),
        ),
    )
    page = lesson_html(lesson)
    assert charts(page) == []
    said = notes(page)
    assert len(said) == 3
    assert said[0].startswith("A folder model: This view could not be drawn for the pack: ")
    assert said[1].startswith("Order blindness: This page is interactive")
    assert "No sentence: This view could not be drawn for the pack: The link has no sentence" in said[2]
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &lt;b&gt;not bold&lt;/b&gt;" in page
    assert "<script>alert" not in page and "<b>" not in page and "<em>text" not in page
    assert "&lt;yes&gt;" in page and "1. &lt;yes&gt;\nIt is &lt;em&gt;text&lt;/em&gt;." in page


def test_the_lessons_editor_builds_and_serves_the_pack(downloads):  # noqa: F811 — the imported fixture
    lesson = Lesson(
        "Week 3",
        (
            Step(
                "s1", "Where it looks", SCRIPT_NOTE, (Link("explore.py", "Open MiniLM", {K.layer: "3", K.head: "1"}),)
            ),
            Step("s2", "Positions", "", (Link("positional.py", "Open Positional", {}),)),
        ),
    )
    at = open_page("lessons", **{Draft.lesson: lesson, Draft.tab: WRITE_TAB})
    assert_clean(at)
    assert not [b for b in at.get("download_button") if b.proto.label == "Download offline pack (HTML)"]
    at.button(key=f"{Offline.build}draft").click().run()
    assert_clean(at)
    (button,) = [b for b in at.get("download_button") if b.proto.label == "Download offline pack (HTML)"]
    page = downloads[button.proto.deferred_file_id]()
    (fig,) = charts(page)
    view = services.pack_view("explore", {K.layer: "3", K.head: "1"})
    np.testing.assert_array_equal(decode(fig["data"][0]["z"]), view.data.values)
    assert len(notes(page)) == 1 and "&lt;script&gt;alert" in page
    assert any("1 chart and 1 note" in c.value for c in at.caption)


def test_the_share_box_serves_the_view_on_screen(downloads):  # noqa: F811 — the imported fixture
    at = open_page("explore", **{Share.open: True, K.layer: 2, K.head: 3})
    assert_clean(at)
    at.button(key=f"{Offline.build}view").click().run()
    assert_clean(at)
    (button,) = [b for b in at.get("download_button") if b.proto.label == "Download this view as offline HTML"]
    (fig,) = charts(downloads[button.proto.deferred_file_id]())
    np.testing.assert_array_equal(decode(fig["data"][0]["z"]), z(main_figure(at)))  # the page's own map
    assert fig["layout"]["title"]["text"] == "Layer 2, head 3"


def test_a_pack_made_in_presenter_mode_has_the_default_look(downloads):  # noqa: F811 — the imported fixture
    from app.components import theme

    at = open_page("explore", **{Share.open: True, Look.present: True})
    at.button(key=f"{Offline.build}view").click().run()
    assert_clean(at)
    (button,) = [b for b in at.get("download_button") if b.proto.label == "Download this view as offline HTML"]
    (fig,) = charts(downloads[button.proto.deferred_file_id]())
    default = [[i / (len(theme.DEFAULT.colors) - 1), c] for i, c in enumerate(theme.DEFAULT.colors)]
    assert fig["data"][0]["colorscale"] == default != main_figure(at)["data"][0]["colorscale"]
    assert fig["layout"]["font"]["size"] == theme.DEFAULT.tick_px


@pytest.mark.parametrize("title", ["Attention in ten steps!", ""])
def test_file_names(title):
    from app.components.offline_pack import file_name

    assert file_name(title) == ("attention-in-ten-steps-offline.html" if title else "lesson-offline.html")
