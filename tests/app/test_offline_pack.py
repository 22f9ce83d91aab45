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

from app.runtime.heads import attention_block
from app.runtime.request import ExplainRequest, TraceRequest
from app.runtime.traces import get_trace
from app.state import DEFAULT_TEXT, K, Look
from app.ui.share_box import Share
from app.views.bahdanau.keys import Bahdanau
from app.views.captions.data import CaptionRequest, caption_attention, caption_trace
from app.views.explain.data import EXPLAIN_EXAMPLES, EXPLAIN_MAX_TOKENS, explain_importance, explain_methods
from app.views.lessons.draft import WRITE_TAB
from app.views.lessons.keys import Draft, Offline
from app.views.lessons.lesson_file import Choice, Lesson, Link, Step
from app.views.lessons.offline_pack import lesson_html, view_html
from app.views.lessons.offline_pages import Drawn
from app.views.lessons.offline_views import PACK_CELLS, PACK_MAX_TOKENS, pack_view
from app.views.positional.data import pos_alibi, pos_learned_table, pos_sinusoidal
from app.views.pretraining.data import (
    MLM_MODEL,
    NEXT_TOKEN_MODEL,
    SEQ2SEQ_MODEL,
    blank_attention,
    get_fill_mask,
    objective_attention,
    objective_examples,
)
from app.views.pretraining.keys import OBJECTIVES_DEFAULT
from app.views.scaling.data import scaling_curves
from app.views.vit.data import get_vision_trace, vit_cls_maps, vit_sample
from apptest_helpers import assert_clean, decode, layer_shown, open_page

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
    view = pack_view("explore", {K.layer: "3", K.head: "1"})
    assert isinstance(view, Drawn) and (view.layer, view.head) == (3, 1)
    drawn = decode(fig["data"][0]["z"])
    np.testing.assert_array_equal(drawn, view.data.values)  # the service's map, value for value
    att = attention_block(get_trace(TraceRequest("minilm", DEFAULT_TEXT, None, 128)))
    np.testing.assert_allclose(drawn, softmax64(att, 3, 1), atol=2e-6)
    assert fig["layout"]["title"]["text"] == "Layer 3, head 1"
    assert "minilm" in fig["layout"]["title"]["subtitle"]["text"]
    assert "plotly.js" in page and "Plotly.newPlot" in page and len(page) > 1_000_000  # plotly.js is inside
    asks_more = pack_view("explore", {K.max_tokens: "16384"})  # one click traces every link: bounded
    assert asks_more.request.max_tokens == PACK_MAX_TOKENS and not asks_more.cut  # a short text is whole


def test_a_heads_link_gives_the_model_view_and_the_chosen_head():
    from app.ui.head_views import GAP

    model_view, chosen = charts(view_html("heads", {K.layer: "1", K.head: "2"}))
    att = attention_block(get_trace(TraceRequest("minilm", DEFAULT_TEXT, None, 128)))
    n = att.n_queries
    mosaic = model_view["data"][0]
    assert mosaic["z"]["dtype"] == "u1"  # one byte a cell: whole percents of each head's maximum
    shares = decode(mosaic["z"])
    for layer, head in ((0, 0), (1, 2), (att.n_layers - 1, att.n_heads - 1)):
        r, c = layer * (n + GAP), head * (n + GAP)
        weights = softmax64(att, layer, head)
        np.testing.assert_allclose(shares[r : r + n, c : c + n], weights / weights.max() * 100, atol=0.5 + 1e-6)
    assert (shares[n, :] == 255).all() and (shares[:, n] == 255).all()  # the gaps between tiles: drawn clear
    assert model_view["layout"]["shapes"][0]["x0"] == 2 * (n + GAP) - 0.5  # the red frame on the chosen head
    np.testing.assert_allclose(decode(chosen["data"][0]["z"]), softmax64(att, 1, 2), atol=2e-6)


def test_the_causal_mask_a_long_input_pooled_and_the_alignment_map():
    causal = charts(view_html("explore", {K.causal: "1", K.layer: "0", K.head: "2"}))[0]
    att = attention_block(get_trace(TraceRequest("minilm", DEFAULT_TEXT, True, 128)))
    np.testing.assert_allclose(decode(causal["data"][0]["z"]), softmax64(att, 0, 2, causal=True), atol=2e-6)
    assert "causal mask on" in causal["layout"]["title"]["text"]

    long_text = " ".join(["the cat sat on the mat and looked at the dog ."] * 40)  # ~480 tokens
    params = {K.text: long_text, K.max_tokens: "512"}
    (fig,) = charts(page := view_html("explore", params))
    drawn = decode(fig["data"][0]["z"])
    att = attention_block(get_trace(TraceRequest("minilm", long_text, None, 512)))
    n = att.n_queries
    assert n > PACK_CELLS and drawn.shape == (PACK_CELLS, PACK_CELLS)
    from engine.traces.overview import overview_edges

    edges = overview_edges(n, PACK_CELLS)  # 256 blocks covering every token, of n // 256 or one more
    assert edges[0] == 0 and edges[-1] == n and set(np.diff(edges)) <= {n // PACK_CELLS, -(-n // PACK_CELLS)}
    full = softmax64(att, 0, 0)
    pooled = np.maximum.reduceat(np.maximum.reduceat(full, edges[:-1], axis=0), edges[:-1], axis=1)
    np.testing.assert_allclose(drawn, pooled, atol=2e-6)
    assert f"at most {PACK_CELLS} × {PACK_CELLS} cells" in page

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
    assert said[1].startswith("Order blindness: No chart in the offline pack: The order-blindness demo runs")
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
            Step("s2", "Positions", "", (Link("positional.py", "Open Positional", {}), Link("train.py", "Train", {}))),
        ),
    )
    at = open_page("lessons", **{Draft.lesson: lesson, Draft.tab: WRITE_TAB})
    assert_clean(at)
    assert not [b for b in at.get("download_button") if b.proto.label == "Download offline pack (HTML)"]
    at.button(key=f"{Offline.build}draft").click().run()
    assert_clean(at)
    (button,) = [b for b in at.get("download_button") if b.proto.label == "Download offline pack (HTML)"]
    page = downloads[button.proto.deferred_file_id]()
    fig, table, _similarity = charts(page)  # Explore's head, then the Positional page's sinusoidal table
    view = pack_view("explore", {K.layer: "3", K.head: "1"})
    np.testing.assert_array_equal(decode(fig["data"][0]["z"]), view.data.values)
    np.testing.assert_array_equal(decode(table["data"][0]["z"]), pos_sinusoidal(64, 64)[0].astype(np.float32))
    assert len(notes(page)) == 1 and "&lt;script&gt;alert" in page
    assert any("3 charts and 1 note" in c.value for c in at.caption)


def test_the_share_box_serves_the_view_on_screen(downloads):  # noqa: F811 — the imported fixture
    at = open_page("explore", **{Share.open: True, K.layer: 2, K.head: 3})
    assert_clean(at)
    at.button(key=f"{Offline.build}view").click().run()
    assert_clean(at)
    (button,) = [b for b in at.get("download_button") if b.proto.label == "Download this view as offline HTML"]
    (fig,) = charts(downloads[button.proto.deferred_file_id]())
    shown = layer_shown(at)  # the page's own map: the pack holds its exact weights, the view them to 3 decimals
    np.testing.assert_allclose(decode(fig["data"][0]["z"]), shown.z, rtol=0, atol=5e-4 + 1e-6)
    assert fig["layout"]["title"]["text"] == shown.title == "Layer 2, head 3"


def test_the_share_box_on_the_vit_page_saves_its_cls_map(downloads):  # noqa: F811 — the imported fixture
    from app.views.vit.keys import Vit

    at = open_page("vit", **{Share.open: True, Vit.digit: 7, Vit.layer: 1, Vit.head: 3})
    assert_clean(at)
    at.button(key=f"{Offline.build}view").click().run()
    assert_clean(at)
    (button,) = [b for b in at.get("download_button") if b.proto.label == "Download this view as offline HTML"]
    one, _every = charts(downloads[button.proto.deferred_file_id]())
    (shown,) = [f for f in (c.proto.spec for c in at.get("plotly_chart")) if "[CLS] → patches" in f]
    page_fig = json.loads(shown)  # the page's own [CLS] map of the same layer and head
    assert one["layout"]["title"]["text"] == page_fig["layout"]["title"]["text"] == "[CLS] → patches, layer 1, head 3"
    np.testing.assert_array_equal(_attention(one), _attention(page_fig))


def test_a_pack_made_in_presenter_mode_has_the_default_look(downloads):  # noqa: F811 — the imported fixture
    from app.ui import theme

    at = open_page("explore", **{Share.open: True, Look.present: True})
    at.button(key=f"{Offline.build}view").click().run()
    assert_clean(at)
    (button,) = [b for b in at.get("download_button") if b.proto.label == "Download this view as offline HTML"]
    (fig,) = charts(downloads[button.proto.deferred_file_id]())
    default = [[i / (len(theme.DEFAULT.colors) - 1), c] for i, c in enumerate(theme.DEFAULT.colors)]
    assert fig["data"][0]["colorscale"] == default
    assert layer_shown(at).header["colors"] == list(theme.PRESENTER.colors) != theme.DEFAULT.colors
    assert fig["layout"]["font"]["size"] == theme.DEFAULT.tick_px


@pytest.mark.parametrize("title", ["Attention in eleven steps!", ""])
def test_file_names(title):
    from app.views.lessons.offline_pack import file_name

    assert file_name(title) == ("attention-in-eleven-steps-offline.html" if title else "lesson-offline.html")


# ---------------------------------------------------------------- the other pages' first charts


def _attention(fig: dict) -> np.ndarray:
    """The overlay trace of a picture chart (ViT, Captions, Swin): the weights drawn over the image."""
    (trace,) = [t for t in fig["data"] if t.get("name") == "attention"]
    return decode(trace["z"])


def test_positional_draws_the_open_tabs_matrices_as_the_page_and_a_bad_tab_falls_back():
    table_fig, sim_fig = charts(view_html("positional", {}))
    table, sim, _spread = pos_sinusoidal(64, 64)  # the Sinusoidal tab opens at 64 positions × 64 dims
    np.testing.assert_array_equal(decode(table_fig["data"][0]["z"]), table.astype(np.float32))
    np.testing.assert_array_equal(decode(sim_fig["data"][0]["z"]), sim.astype(np.float32))
    import math

    pe = [math.sin(5 / 10000 ** (2 * 3 / 64)), math.cos(5 / 10000 ** (2 * 3 / 64))]  # the formula, by hand
    np.testing.assert_allclose(decode(table_fig["data"][0]["z"])[5, 6:8], pe, atol=1e-6)
    assert "%{z" in table_fig["data"][0]["hovertemplate"]  # the numbers on hover
    assert charts(view_html("positional", {"pos_tab": "no-such-tab"})) == [table_fig, sim_fig]  # back to the default

    learned, cosine = charts(view_html("positional", {"pos_tab": "learned"}))
    values, cos_sim = pos_learned_table("minilm")
    np.testing.assert_array_equal(decode(learned["data"][0]["z"]), values.values[:128].astype(np.float32))
    np.testing.assert_array_equal(decode(cosine["data"][0]["z"]), cos_sim[:128, :128].astype(np.float32))
    view = pack_view("positional", {"pos_tab": "alibi"})
    slopes, bias = pos_alibi(8, 12)
    assert isinstance(view, Drawn) and view.heads == (0, 3, 7)
    np.testing.assert_array_equal(view.bias, bias)
    (grid,) = charts(view_html("positional", {"pos_tab": "alibi"}))
    from app.ui.head_views import GAP

    tile = decode(grid["data"][0]["z"])[:, 12 + GAP : 2 * 12 + GAP]  # the second tile: head 3, causal
    lower = np.tril(np.ones((12, 12), dtype=bool))
    np.testing.assert_allclose(tile[lower], bias[3][lower], atol=1e-6)
    assert np.isnan(tile[~lower]).all() and grid["layout"]["annotations"][1]["text"].startswith("head 3: slope")
    said = notes(view_html("positional", {"pos_tab": "rope"}))
    assert len(said) == 1 and "tab turns a query and a key with sliders" in said[0]
    assert "open the link in the app" in said[0]


def test_the_vit_pack_draws_cls_attention_over_the_links_sample():
    params = {"vit_digit": "7", "vit_layer": "1", "vit_head": "2"}
    one, every = charts(view_html("vit", params))
    image = vit_sample("digit", "7")
    trace = get_vision_trace("tiny-vit-digits", image)
    maps = vit_cls_maps(trace, 1)
    np.testing.assert_array_equal(_attention(one), maps[2])
    import engine
    from engine.analysis.vision import cls_map

    separate = engine.trace(engine.load("tiny-vit-digits"), image)  # not through the app's caches
    np.testing.assert_allclose(_attention(one), cls_map(separate, 1)[2], atol=1e-6)
    assert one["layout"]["title"]["text"] == "[CLS] → patches, layer 1, head 2"
    assert "weight %{z" in [t for t in one["data"] if t.get("name") == "attention"][0]["hovertemplate"]
    assert every["layout"]["shapes"] and len(every["layout"]["annotations"]) == maps.shape[0]
    # a refused digit number falls back to the default sample, and a layer past the last is the last (as the page)
    view = pack_view("vit", {"vit_digit": "99999", "vit_layer": "4000"})
    default = get_vision_trace("tiny-vit-digits", vit_sample("digit", "1500"))
    assert view.layer == default.attention.n_layers - 1 and "digit sample 1500" in view.described
    np.testing.assert_array_equal(view.maps, vit_cls_maps(default, view.layer))
    said = notes(view_html("vit", {"vit_source": "upload"}))
    assert len(said) == 1 and "An uploaded image is not part of a link" in said[0]


def test_a_swin_link_draws_its_query_patchs_window(tmp_path, monkeypatch):
    import engine
    from engine import samples
    from engine.traces.vision import window_row
    from tests.swin_helpers import save_tiny_swin

    folder = save_tiny_swin(tmp_path / "allowed" / "swin", window=2)
    monkeypatch.setenv("AP_MODEL_DIRS", str(folder.parent))
    params = {"vit_hub_id": str(folder), "vit_source": "photo", "vit_swin_block": "1", "vit_swin_head": "9"}
    (fig,) = charts(view_html("vit", params))
    view = pack_view("vit", params)
    assert (view.stage, view.block, view.head, view.patch) == (0, 1, 1, 0)  # head 9 kept inside the block's heads
    row = window_row(engine.trace(engine.load(str(folder)), samples.photo("china")).block_at(0, 1), 1, 0)
    drawn = _attention(fig)
    np.testing.assert_array_equal(np.isnan(drawn), ~row.visible)
    np.testing.assert_allclose(drawn[row.visible], row.weights[row.visible], atol=1e-6)
    assert fig["layout"]["title"]["text"] == "Patch 0 → its window, stage 0, block 1, head 1"


def test_the_captions_pack_draws_a_map_per_written_word():
    from app.ui.head_views import GAP

    (fig,) = charts(page := view_html("captions", {"cap_scene": "12"}))
    view = caption_attention(CaptionRequest(source="scene", scene=12))
    weights = decode([t for t in fig["data"] if t.get("name") == "attention"][0]["customdata"])
    grid, per_row = view.grid, min(len(view.words), 5)
    for w in range(len(view.words)):  # tile w of the mosaic is the word's α, as the page draws it
        r, c = divmod(w, per_row)
        tile = weights[r * (grid + GAP) : r * (grid + GAP) + grid, c * (grid + GAP) : c * (grid + GAP) + grid]
        np.testing.assert_allclose(tile, view.alphas[w], atol=1e-7)
    trace = caption_trace(CaptionRequest(source="scene", scene=12))
    assert f"The model writes “{trace.caption}”" in page
    bad = pack_view("captions", {"cap_scene": "9999"})  # refused: the page's default scene
    assert bad.view is caption_attention(CaptionRequest(source="scene", scene=4))
    said = notes(view_html("captions", {"cap_view": "mistakes"}))
    assert len(said) == 1 and "mistakes view" in said[0] and "open the link in the app" in said[0]


def test_pretraining_scaling_and_explain_draw_their_static_first_charts():
    text = "tom saw a big dog . [MASK] ran to the park ."
    bars, heat = charts(view_html("pretraining", {"fill_text": text}))
    result = get_fill_mask(text)
    blank = result.blanks[0]
    np.testing.assert_allclose(decode(bars["data"][0]["x"]), np.asarray(blank.probs, dtype=float), atol=1e-7)
    att = blank_attention(text, blank.position)
    np.testing.assert_allclose(decode(heat["data"][0]["z"]), att.reshape(-1, att.shape[-1]), atol=1e-7)
    np.testing.assert_allclose(decode(heat["data"][0]["z"]).sum(axis=1), 1.0, atol=1e-5)  # each head's row
    said = notes(view_html("pretraining", {"pretraining_tab": "finetune"}))
    assert len(said) == 1 and "fine-tunes a copy of the model live" in said[0]
    assert "[MASK]" in notes(view_html("pretraining", {"fill_text": "no blank here"}))[0]

    mlm, nxt, span = charts(view_html("pretraining", {"pretraining_tab": "objectives", "objectives_layer": "1"}))
    words = tuple(OBJECTIVES_DEFAULT.split())
    masked = " ".join(objective_examples(words)["masked"].inputs)
    real = objective_attention(MLM_MODEL, masked, False, 1, "self")
    np.testing.assert_array_equal(decode(mlm["data"][0]["z"]), real.weights.astype(np.float32))
    att = attention_block(get_trace(TraceRequest(NEXT_TOKEN_MODEL, " ".join(words), True, 64)))
    mean = np.mean([att.pattern(1, h) for h in range(att.n_heads)], axis=0)  # every head of layer 1, averaged here
    drawn = decode(nxt["data"][0]["z"])
    lower = np.tril(np.ones(drawn.shape, dtype=bool))
    np.testing.assert_allclose(drawn[lower], mean[lower], atol=1e-6)
    assert np.isnan(drawn[~lower]).all()  # the causal mask's cells are grey
    assert span["layout"]["title"]["text"].startswith(f"Real: {SEQ2SEQ_MODEL}, layer 1")

    params_fig, compute_fig = charts(view_html("scaling", {}))
    curves = scaling_curves()
    (shipped,) = [t for t in params_fig["data"] if t.get("name") == "shipped sizes"]
    np.testing.assert_allclose(decode(shipped["y"]), [r.final_loss for r in curves.runs])
    np.testing.assert_allclose(decode(shipped["x"]), [r.n_params for r in curves.runs])
    assert len(compute_fig["data"]) >= len(curves.runs)

    (fig,) = charts(view_html("explain", {}))
    request = ExplainRequest(
        "tiny-gpt-stories",
        EXPLAIN_EXAMPLES["tiny-gpt-stories"],
        "",
        EXPLAIN_MAX_TOKENS,
        32,
        "zero",
        "remove",
    )
    raw = decode(fig["data"][0]["customdata"])
    for row, method in zip(raw, explain_methods()):
        np.testing.assert_allclose(row, explain_importance(request, method).scores, atol=1e-12, equal_nan=True)
    assert fig["data"][0]["y"] == list(explain_methods().values())


def test_live_pages_say_what_to_do():
    train, room = notes(
        lesson_html(
            Lesson("Live", (Step("a", "t", "", (Link("train.py", "Train", {}), Link("classroom.py", "Class", {}))),))
        )
    )
    assert "a live training run" in train and "open the link in the app" in train
    assert "live room" in room and "open the link in the app" in room
