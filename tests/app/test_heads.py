"""The Heads page through AppTest: every tab renders, and the numbers it shows equal the engine's.

References are computed here from ``engine.trace`` directly (not through the app's services):
the metrics table against ``engine.analysis.metrics`` on ``trace.pattern()``, the difference map
against the difference of two traces' patterns, the model view (drawn in the browser: what it was sent) against
``trace.pattern`` to the 3 decimals it prints.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from apptest_helpers import assert_clean, decode, figures, layer_shown, messages, open_page, title
from engine.analysis import metrics as M

TEXT = "The animal didn't cross the street because it was too tired."
TABS = ("Model view", "Per-head metrics", "Head similarity", "Compare", "Rollout", "Ablation")
BASE = {"text": TEXT, "max_tokens": 128}


def heads_page(model: str = "minilm", text: str = TEXT, block: str | None = None) -> AppTest:
    """The Heads page with ``model``/``text`` set through the widgets (as a person would).

    Values preset in session_state before a page switch were used by the first run but not kept by
    the widgets on the next run (see the report on cross-page widget state), so the widgets are set.
    """
    at = open_page("heads", **BASE)
    at.text_area(key="text").input(text)
    at.number_input(key="max_tokens").set_value(128)
    at.selectbox(key="model").set_value(model)
    at.run()
    if block is not None:
        at.selectbox(key="heads_block").set_value(block).run()
    assert at.selectbox(key="model").value == model and at.text_area(key="text").value == text
    return at


def show_tab(at: AppTest, tab: str) -> AppTest:
    model = at.selectbox(key="model").value
    at.session_state["heads_tab"] = tab
    at.run()
    assert_clean(at)
    assert at.selectbox(key="model").value == model
    assert not at.error, messages(at.error)
    return at


def figure_titled(at: AppTest, text: str) -> dict:
    found = [f for f in figures(at) if text in title(f)]
    assert found, [title(f) for f in figures(at)]
    return found[0]


def engine_attention(model_id: str, text: str, block: str = "self", causal=None):
    tr = engine.trace(engine.load(model_id), text, causal=causal, max_tokens=128)
    return getattr(tr, block) if block != "self" else tr


@pytest.fixture(scope="module")
def minilm_page() -> AppTest:
    at = heads_page()
    assert_clean(at)
    return at


# ---------------------------------------------------------------- model view


SHOWN = 5e-4 + 1e-6  # the view's cells: weights to 3 decimals


def test_model_view_sends_every_layer_s_heads_and_opens_the_chosen_one():
    at = heads_page()
    assert not at.error and not at.warning, messages(at.error) + messages(at.warning)
    shown = layer_shown(at)
    att = engine_attention("minilm", TEXT)
    assert shown.header["grid"] and shown.header["layers"] == list(range(6)) and shown.header["n_heads"] == 12
    patterns = np.stack([att.pattern(layer) for layer in range(att.n_layers)])
    np.testing.assert_allclose(shown.values, patterns, atol=SHOWN)  # every layer × head, to 3 decimals
    assert shown.title == "Layer 0, head 0" and shown.rows == [f"{i} {t}" for i, t in enumerate(att.tokens.strings)]
    np.testing.assert_allclose(shown.z, att.pattern(0, 0), atol=SHOWN)
    assert at.query_params.get("layer") in (None, "0")
    assert "All 6 layers (rows) × 12 heads" in " ".join(str(c.value) for c in at.caption)


def test_the_large_head_can_show_value_weighted_contributions():
    at = heads_page()
    at.segmented_control(key="heads_weighting").set_value("value").run()
    assert_clean(at)
    att = engine_attention("minilm", TEXT)
    shown = layer_shown(at)
    want = att.pattern(0, 0) * att.value_norms(0, 0)[None, :]
    np.testing.assert_allclose(shown.z, want, atol=shown.header["step"] / 2 + 1e-6)
    assert "α·‖v‖" in shown.header["value_name"]
    at.segmented_control(key="heads_weighting").set_value("contribution").run()
    assert_clean(at)
    shown = layer_shown(at)
    np.testing.assert_allclose(shown.z, att.contributions(0, 0), atol=shown.header["step"] / 2 + 1e-6)
    assert "‖α·f(x)‖" in shown.header["value_name"]


def test_picking_a_head_opens_it_large():
    at = heads_page()
    at.selectbox(key="layer").set_value(4).run()
    at.selectbox(key="head").set_value(9).run()
    assert_clean(at)
    shown = layer_shown(at)
    assert shown.title == "Layer 4, head 9" and at.query_params["layer"] == "4" and at.query_params["head"] == "9"
    np.testing.assert_allclose(shown.z, engine_attention("minilm", TEXT).pattern(4, 9), atol=SHOWN)


def test_a_head_picked_in_the_view_reaches_the_server_and_its_downloads():
    """A click in the view's grid is the browser's; the next run it asks for brings its layer and head (as
    ``layer_view.take`` writes them), and the exact downloads below follow."""
    at = heads_page()
    at.session_state["layer"], at.session_state["head"] = 3, 7
    at.run()
    assert_clean(at)
    assert layer_shown(at).title == "Layer 3, head 7"
    keys = [b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button")]
    assert keys == ["heads_csv", "heads_json"], keys  # keyed: the view holds their click until the server has its head


# ---------------------------------------------------------------- metrics


def _reference_table(att, square: bool = True) -> dict[str, np.ndarray]:
    patterns = np.stack([att.pattern(layer) for layer in range(att.n_layers)])
    values = M.head_metrics(
        patterns, M.sink_positions(att.key_tokens.special), blocked=np.isneginf(att.mask(0)), square=square
    )
    values["labels"], values["score"] = M.label_heads(values)
    return values


@pytest.mark.parametrize("model_id,causal", [("minilm", False), ("tiny-gpt-stories", True)])
def test_metrics_table_equals_the_engine_metrics(model_id: str, causal: bool):
    text = TEXT if model_id == "minilm" else "Lily found a red ball. She gave it to Tom."
    at = show_tab(heads_page(model=model_id, text=text), "Per-head metrics")
    assert at.toggle(key="causal").value is causal
    table = at.dataframe[0].value
    att = engine_attention(model_id, text, causal=causal)
    ref = _reference_table(att)
    assert len(table) == att.n_layers * att.n_heads
    assert table["layer"].tolist() == np.repeat(np.arange(att.n_layers), att.n_heads).tolist()
    for name in ("entropy", "entropy_bits", "broad", "mean_distance", "sink", "previous", "self", "next", "score"):
        np.testing.assert_allclose(table[name].to_numpy(float), ref[name].ravel(), atol=1e-6, err_msg=name)
    assert table["pattern"].tolist() == ref["labels"].ravel().tolist()
    # the layer × head map shows the chosen metric (entropy by default)
    heat = figure_titled(at, "entropy (nats)")
    np.testing.assert_allclose(decode(heat["data"][0]["z"]), ref["entropy"], atol=1e-6)


def test_an_unknown_word_is_not_counted_as_a_sink():
    """MiniLM reads the emoji as [UNK]: the sink column is the weight on [CLS] and [SEP] alone."""
    text = "I love 🙂 pizza"
    at = show_tab(heads_page(text=text), "Per-head metrics")
    table = at.dataframe[0].value
    att = engine_attention("minilm", text)
    assert list(att.tokens.strings) == ["[CLS]", "i", "love", "[UNK]", "pizza", "[SEP]"]
    by_hand = [
        att.pattern(layer, head)[:, [0, 5]].sum(axis=-1).mean()
        for layer in range(att.n_layers)
        for head in range(att.n_heads)
    ]
    np.testing.assert_allclose(table["sink"].to_numpy(float), by_hand, atol=1e-6)


def test_metric_picker_changes_the_map():
    at = show_tab(heads_page(), "Per-head metrics")
    at.selectbox(key="heads_metric").set_value("previous").run()
    assert_clean(at)
    heat = figure_titled(at, "previous-token share")
    np.testing.assert_allclose(
        decode(heat["data"][0]["z"]), _reference_table(engine_attention("minilm", TEXT))["previous"], atol=1e-6
    )


# ---------------------------------------------------------------- every model and block renders


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_renders_for_the_stories_model(tab: str):
    at = show_tab(heads_page(model="tiny-gpt-stories", text="Lily found a red ball."), tab)
    if tab == "Model view":  # drawn in the browser: every layer × head
        shown = layer_shown(at)
        assert (
            shown.header["grid"]
            and len(shown.header["layers"]) == engine_attention("tiny-gpt-stories", "Lily found a red ball.").n_layers
        )
    else:
        assert figures(at) or at.dataframe


@pytest.mark.parametrize("block", ["encoder", "decoder", "cross"])
def test_every_tab_renders_for_each_translator_block(block: str):
    text = "the cat sees the dog ."
    at = heads_page(model="tiny-translator", text=text, block=block)
    assert_clean(at)
    assert at.selectbox(key="heads_block").value == block
    att = engine_attention("tiny-translator", text, block)
    shown = layer_shown(at)
    assert shown.title.startswith("Layer 0, head 0") and shown.header["square"] is (block != "cross")
    np.testing.assert_array_equal(np.isnan(shown.z), np.isneginf(att.mask(0)))  # decoder: causal cells grey
    np.testing.assert_allclose(np.nan_to_num(shown.z), att.pattern(0, 0), atol=SHOWN)
    for tab in TABS:
        show_tab(at, tab)
        if tab == "Per-head metrics":
            table = at.dataframe[0].value
            square = block != "cross"
            ref = _reference_table(att, square=square)
            np.testing.assert_allclose(table["sink"].to_numpy(float), ref["sink"].ravel(), atol=1e-6)
            assert ("mean_distance" in table.columns) is square
            assert ("alignment" in table.columns) is not square
            assert table["pattern"].tolist() == ref["labels"].ravel().tolist()
            if not square:
                assert any("n/a" in m for m in messages(at.info))
        if tab == "Rollout" and block == "cross":
            assert any("self" in m.lower() for m in messages(at.info))
            assert not figures(at)


# ---------------------------------------------------------------- compare


def test_sentence_difference_equals_the_difference_of_patterns():
    at = heads_page()
    at.selectbox(key="layer").set_value(3).run()
    at.selectbox(key="head").set_value(5).run()
    show_tab(at, "Compare")
    diff = figure_titled(at, "Difference B − A")
    a = engine_attention("minilm", "The animal didn't cross the street because it was too tired.").pattern(3, 5)
    b = engine_attention("minilm", "The animal didn't cross the street because it was too wide.").pattern(3, 5)
    np.testing.assert_allclose(decode(diff["data"][0]["z"]), b - a, atol=1e-6)
    assert any("tired→wide" in label for label in diff["layout"]["yaxis"]["ticktext"])
    # two heads side by side: A is the chosen head, B the next one
    np.testing.assert_allclose(decode(figure_titled(at, "A: layer 3, head 5")["data"][0]["z"]), a, atol=1e-6)
    # each map names the sentence it shows (the page's own sentence is neither), the difference both
    subtitle = {t: figure_titled(at, t)["layout"]["title"]["subtitle"]["text"] for t in ("Sentence A", "Sentence B")}
    assert "too tired." in subtitle["Sentence A"] and "too wide." in subtitle["Sentence B"], subtitle
    assert "all-MiniLM" in subtitle["Sentence A"]
    pair = diff["layout"]["title"]["subtitle"]["text"]
    assert "A → B: tired→wide" in pair, pair


def test_sentences_of_different_lengths_are_explained_not_crashed():
    at = show_tab(heads_page(), "Compare")
    at.text_input(key="heads_text_b").input("The animal didn't cross the busy street because it was too wide.").run()
    assert_clean(at)
    assert any("different numbers of tokens" in m for m in messages(at.info)), messages(at.info)
    assert not [f for f in figures(at) if "Difference" in title(f)]
    assert len(at.dataframe) == 2  # the two heads' metrics, and the head's metrics on both sentences


def test_rollout_equals_the_engine_rollout():
    from engine.analysis.rollout import rollout

    at = heads_page()
    at.selectbox(key="layer").set_value(5).run()
    show_tab(at, "Rollout")
    att = engine_attention("minilm", TEXT)
    ref = rollout([att.pattern(layer) for layer in range(att.n_layers)])[-1]
    np.testing.assert_allclose(decode(figure_titled(at, "Rollout, layers 0–5")["data"][0]["z"]), ref, atol=1e-5)
    raw = figure_titled(at, "Raw attention, layer 5")
    np.testing.assert_allclose(decode(raw["data"][0]["z"]), att.pattern(5).mean(axis=0), atol=1e-6)


@pytest.mark.parametrize("rule", ["all-off-diagonal", "keep-class-token"])
def test_rollout_discard_rule_is_the_engine_rule_and_is_named(rule: str):
    from engine.analysis.rollout import rollout

    at = heads_page()
    at.selectbox(key="layer").set_value(5).run()
    show_tab(at, "Rollout")
    assert at.radio(key="heads_discard_rule").value == "all-off-diagonal"  # the default
    at.slider(key="heads_discard").set_value(0.5).run()
    at.radio(key="heads_discard_rule").set_value(rule).run()
    assert_clean(at)
    att = engine_attention("minilm", TEXT)
    layers = [att.pattern(layer) for layer in range(att.n_layers)]
    ref = rollout(layers, discard_ratio=0.5, discard_rule=rule)[-1]
    shown = decode(figure_titled(at, "Rollout, layers 0–5")["data"][0]["z"])
    np.testing.assert_allclose(shown, ref, atol=1e-5)
    other = "keep-class-token" if rule == "all-off-diagonal" else "all-off-diagonal"
    assert not np.allclose(shown, rollout(layers, discard_ratio=0.5, discard_rule=other)[-1], atol=1e-3)
    captions = " ".join(str(c.value) for c in at.caption)
    named = "rule: keep attention to the class token" if rule == "keep-class-token" else "rule: all off-diagonal"
    assert named in captions and "`[CLS]`" in captions, captions


def test_similarity_matrix_is_symmetric_and_ordered():
    at = show_tab(heads_page(), "Head similarity")
    d = decode(figures(at)[0]["data"][0]["z"])
    assert d.shape == (72, 72)
    np.testing.assert_allclose(d, d.T, atol=1e-9)
    np.testing.assert_allclose(np.diag(d), 0.0, atol=1e-9)


# ---------------------------------------------------------------- bad input


def test_empty_text_gives_a_message():
    at = heads_page(text="   ")
    assert_clean(at)
    assert any("empty" in m.lower() for m in messages(at.warning)), messages(at.warning)
    assert not figures(at)


def test_html_in_the_text_is_escaped_on_every_tab():
    at = heads_page(text="<script>alert(1)</script> hello <b>bold</b>")
    for tab in TABS:
        show_tab(at, tab)
        for fig in figures(at):
            blob = json.dumps(fig)
            assert "<script" not in blob and "<b>bold" not in blob, tab


def test_long_input_sends_one_layer_at_a_time_with_notes():
    """Past the model view's budget (every layer's cells as uint16 ≤ 2 MB: MiniLM's 72 heads up to ~120 tokens) the
    view holds the open layer's heads alone; the Layer box brings another."""
    text = " ".join(["The quick brown fox jumps over the lazy dog."] * 12)  # > 120 tokens
    at = heads_page(text=text)
    att = engine_attention("minilm", text)
    assert 72 * att.n_queries**2 * 2 > 2 << 20
    shown = layer_shown(at)
    assert shown.header["grid"] and shown.header["layers"] == [0]
    np.testing.assert_allclose(np.nan_to_num(shown.values[0]), att.pattern(0), atol=SHOWN)
    captions = " ".join(str(c.value) for c in at.caption)
    assert "The 12 heads of layer 0" in captions and "one layer at a time" in captions, captions
    at.selectbox(key="layer").set_value(3).run()
    shown = layer_shown(at)
    assert shown.header["layers"] == [3] and shown.title == "Layer 3, head 0"
    np.testing.assert_allclose(np.nan_to_num(shown.values[0]), att.pattern(3), atol=SHOWN)
    show_tab(at, "Head similarity")
    assert any("64 evenly spaced query rows" in m for m in messages(at.info)), messages(at.info)


def test_out_of_range_page_settings_are_bounded():
    at = heads_page()
    at.session_state["heads_discard"] = 0.9
    show_tab(at, "Rollout")
    assert figure_titled(at, "Rollout, layers 0–0")
    at.session_state["heads_cmp_b_layer"] = 99
    at.session_state["heads_cmp_b_head"] = -3
    show_tab(at, "Compare")
    assert at.selectbox(key="heads_cmp_b_layer").value == 5 and at.selectbox(key="heads_cmp_b_head").value == 0


# ---------------------------------------------------------------- ablation tab (app/views/heads/ablation.py)


def test_ablation_tab_switches_heads_off_and_matches_the_engine():
    from engine.analysis.ablation import ablate

    at = show_tab(heads_page(), "Ablation")
    assert at.metric[0].value == "1.0000"  # nothing off yet: the embedding is unchanged
    at.multiselect(key="ablation_heads").set_value(["L0 H0", "L2 H5"]).run()
    assert_clean(at)
    expected = ablate(engine.load("minilm"), TEXT, [(0, 0), (2, 5)], causal=False, max_tokens=128)
    assert expected.cosine < 1.0
    assert at.metric[0].value == f"{expected.cosine:.4f}"


def test_the_model_view_mosaic_is_one_byte_a_cell_with_clear_gaps():
    from app.ui.head_views import GAP, OFF_TILE, SHARE_LEVELS, share_mosaic

    rng = np.random.default_rng(3)
    tiles = rng.random((2, 3, 4, 5)).astype(np.float32)
    tiles[1, 2] = 0.0  # a head with no weight here: all zero, no division by zero
    tiles[0, 1, 0, 0] = np.nan  # a blocked cell: drawn clear like a gap
    trace = share_mosaic(tiles)
    z = trace["z"]
    assert z.dtype == np.uint8 and z.shape == (2 * (4 + GAP) - GAP, 3 * (5 + GAP) - GAP)
    for r in range(2):
        for c in range(3):
            tile = tiles[r, c]
            peak = np.nanmax(tile) or 1.0
            want = np.where(np.isnan(tile), OFF_TILE, np.rint(np.nan_to_num(tile) / peak * SHARE_LEVELS))
            got = z[r * (4 + GAP) : r * (4 + GAP) + 4, c * (5 + GAP) : c * (5 + GAP) + 5]
            np.testing.assert_array_equal(got, want)
    assert (z[4, :] == OFF_TILE).all() and (z[:, 5] == OFF_TILE).all() and (z[:, 11] == OFF_TILE).all()
    stops = trace["colorscale"]
    positions = [position for position, _ in stops]
    assert positions == sorted(positions) and positions[0] == 0.0 and positions[-1] == 1.0
    # the theme's scale spans 0–100 on the 0–255 axis; above it every stop is clear
    theme_colours = [colour for _, colour in stops[:-2]]
    assert stops[-3][0] == pytest.approx(SHARE_LEVELS / OFF_TILE) and "rgba(255,255,255,0)" not in theme_colours
    assert stops[-2][1] == stops[-1][1] == "rgba(255,255,255,0)" and stops[-2][0] > SHARE_LEVELS / OFF_TILE
    assert trace["zmin"] == 0 and trace["zmax"] == OFF_TILE and trace["hoverinfo"] == "skip"
