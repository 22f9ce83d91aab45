"""The Bahdanau attention page through AppTest: every number drawn equals the engine's trace of the same input.

References are computed here directly with ``engine.trace`` (and, for the step tables, from the trace's
captured energies and weights), independently of the page's data module.
"""

from __future__ import annotations

import html
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from apptest_helpers import assert_clean, decode, figures, messages, open_page

PAGE = "bahdanau"
ADDITIVE, DOT, TRANSFORMER = "bahdanau-translator", "luong-translator", "tiny-translator"


def by_meta(at: AppTest) -> dict[str, dict]:
    return {f["layout"].get("meta"): f for f in figures(at)}


def z(fig: dict) -> np.ndarray:
    return decode(fig["data"][0]["z"])


def ys(fig: dict, k: int = 0) -> np.ndarray:
    return decode(fig["data"][k]["y"])


def ticks(fig: dict, axis: str) -> list[str]:
    """Axis labels as shown (Plotly renders the escaped ``&lt;eos&gt;`` as ``<eos>``)."""
    return [html.unescape(t) for t in fig["layout"][axis]["ticktext"]]


@pytest.fixture(scope="module")
def default_page() -> AppTest:
    return open_page(PAGE)


@pytest.fixture(scope="module")
def reference_trace():
    return engine.trace(engine.load(ADDITIVE), "the red car is big", max_tokens=32)


def test_default_sentence_renders(default_page: AppTest):
    at = default_page
    assert_clean(at)
    assert not at.error and not at.warning, messages(at.error) + messages(at.warning)
    assert at.text_input(key="bahdanau_text").value == "the red car is big"
    figs = by_meta(at)
    assert set(figs) == {
        "bahdanau_map",
        "bahdanau_state",
        "bahdanau_energies",
        "bahdanau_context",
        "bahdanau_cmp_additive",
        "bahdanau_cmp_dot",
        "bahdanau_cmp_transformer",
    }
    text = " ".join(m.value for m in at.markdown)
    assert "la voiture rouge est grande" in text and "matches" in text


def test_alignment_map_equals_the_trace(default_page: AppTest, reference_trace):
    fig = by_meta(default_page)["bahdanau_map"]
    np.testing.assert_allclose(z(fig), reference_trace.alignment, atol=1e-6)
    assert ticks(fig, "yaxis") == [f"{i} {w}" for i, w in enumerate(reference_trace.target.strings)]
    assert ticks(fig, "xaxis") == [f"{i} {w}" for i, w in enumerate(reference_trace.source.strings)]
    # the gold links of the grammar are drawn: "red" (1) ↔ "rouge" (2) and "car" (2) ↔ "voiture" (1) cross
    gold = fig["data"][1]  # markers on the categorical axes: named by their labels
    col = {name: i for i, name in enumerate(fig["data"][0]["x"])}
    row = {name: i for i, name in enumerate(fig["data"][0]["y"])}
    pairs = {(col[x], row[y]) for x, y in zip(gold["x"], gold["y"])}
    assert {(1, 2), (2, 1)} <= pairs
    captions = " ".join(c.value for c in default_page.caption)
    assert "not word alignments" in captions and "80%" in captions  # "la" looks at "car", not "the"
    assert "cross" in captions


def _step_figures(at: AppTest):
    figs = by_meta(at)
    return figs["bahdanau_state"], figs["bahdanau_energies"], figs["bahdanau_context"]


def test_stepping_changes_the_step_figures(reference_trace):
    at = open_page(PAGE)
    state0, energies0, _ = _step_figures(at)
    np.testing.assert_allclose(ys(state0), reference_trace.decoder_states[0], atol=1e-6)
    at.select_slider(key="bahdanau_step").set_value(2).run()
    assert_clean(at)
    state, energies, context = _step_figures(at)
    tr = reference_trace
    assert not np.allclose(ys(state), ys(state0))
    np.testing.assert_allclose(ys(state), tr.decoder_states[2], atol=1e-6)
    np.testing.assert_allclose(ys(energies, 0), tr.energies[2], atol=1e-5)
    np.testing.assert_allclose(ys(energies, 1), tr.alignment[2], atol=1e-6)
    c = z(context)
    np.testing.assert_allclose(c[:-1], tr.encoder_states, atol=1e-6)
    np.testing.assert_allclose(c[-1], tr.contexts[2], atol=1e-5)  # last row: c(i) = Σ α h
    assert at.metric[0].value == tr.target.strings[2] == "rouge"
    table = at.dataframe[0].value
    np.testing.assert_allclose(table.iloc[:, 1].to_numpy(float), np.round(tr.energies[2], 4), atol=1e-4)
    np.testing.assert_allclose(table.iloc[:, 2].to_numpy(float), np.round(tr.alignment[2], 4), atol=1e-4)
    assert f"{tr.output_probs[2]:.3f}" in " ".join(c.value for c in at.caption)


def test_dot_variant_shows_its_own_map_and_formula():
    at = open_page(PAGE)
    at.radio(key="bahdanau_variant").set_value("dot").run()
    assert_clean(at)
    tr = engine.trace(engine.load(DOT), "the red car is big", max_tokens=32)
    np.testing.assert_allclose(z(by_meta(at)["bahdanau_map"]), tr.alignment, atol=1e-6)
    np.testing.assert_allclose(ys(by_meta(at)["bahdanau_energies"]), tr.energies[0], rtol=1e-6, atol=1e-5)
    latex = " ".join(e.value for e in at.latex)
    assert "s_{i-1}^\\top" in latex
    assert any("W_h h(j)" in str(c) for c in at.dataframe[0].value.columns)


def test_compare_maps_equal_their_traces(default_page: AppTest):
    figs = by_meta(default_page)
    text = "the red car is big"
    np.testing.assert_allclose(
        z(figs["bahdanau_cmp_additive"]), engine.trace(engine.load(ADDITIVE), text).alignment, atol=1e-6
    )
    np.testing.assert_allclose(z(figs["bahdanau_cmp_dot"]), engine.trace(engine.load(DOT), text).alignment, atol=1e-6)
    s2s = engine.trace(engine.load(TRANSFORMER), text, max_tokens=32)
    np.testing.assert_allclose(z(figs["bahdanau_cmp_transformer"]), s2s.cross.pattern(0).mean(axis=0), atol=1e-6)
    rows = ticks(figs["bahdanau_cmp_transformer"], "yaxis")
    assert rows[0] == "0 la" and rows[-1].endswith("<eos>")  # the row that writes each word


def test_transformer_layer_and_head_selectors():
    at = open_page(PAGE)
    at.selectbox(key="bahdanau_tf_layer").set_value(1).run()
    at.selectbox(key="bahdanau_tf_head").set_value(2).run()
    assert_clean(at)
    fig = by_meta(at)["bahdanau_cmp_transformer"]
    cross = engine.trace(engine.load(TRANSFORMER), "the red car is big", max_tokens=32).cross
    np.testing.assert_allclose(z(fig), cross.pattern(1, 2), atol=1e-6)
    assert "layer 1, head 2" in fig["layout"]["title"]["text"]


def test_unknown_word_gets_a_notice_with_a_suggestion():
    at = open_page(PAGE)
    at.text_input(key="bahdanau_text").input("the bluee car is big").run()
    assert_clean(at)
    infos = " ".join(messages(at.info))
    assert "bluee" in infos and "blue" in infos.replace("bluee", ""), infos
    assert "<unk>" in ticks(by_meta(at)["bahdanau_map"], "xaxis")[1]
    assert "No reference translation" in " ".join(c.value for c in at.caption)


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_input_gives_a_message(text):
    at = open_page(PAGE)
    at.text_input(key="bahdanau_text").input(text).run()
    assert_clean(at)
    assert any("Type an English sentence" in m for m in messages(at.info))
    assert not at.get("plotly_chart")


def test_huge_and_odd_input_do_not_crash():
    at = open_page(PAGE, bahdanau_text="the red car is big " * 400)
    assert_clean(at)
    assert any("first 200 characters" in w for w in messages(at.warning))
    assert any("32" in m for m in messages(at.info) + messages(at.warning))  # the model reads 32 tokens
    at = open_page(PAGE, bahdanau_text="<b>the</b> 🙂 red <script>car")
    assert_clean(at)
    assert not at.error
    blob = json.dumps(figures(at))
    assert "<script" not in blob and "<b>" not in blob


def test_examples_dates_and_the_differs_example():
    at = open_page(PAGE)
    at.selectbox(key="bahdanau_example").set_value("21 November 2026").run()
    assert_clean(at)
    assert at.text_input(key="bahdanau_text").value == "21 November 2026"
    assert "2026-11-21" in " ".join(messages(at.markdown))
    tr = engine.trace(engine.load(ADDITIVE), "21 November 2026")
    np.testing.assert_allclose(z(by_meta(at)["bahdanau_map"]), tr.alignment, atol=1e-6)

    button = at.button(key="bahdanau_differs")
    sentence = button.label.split("“", 1)[1].rstrip("”")
    button.click().run()
    assert_clean(at)
    assert at.text_input(key="bahdanau_text").value == sentence
    captions = " ".join(c.value for c in at.caption)
    assert "Where it differs" in captions, captions


def test_a_late_step_survives_a_shorter_sentence():
    at = open_page(PAGE, bahdanau_text="she sees the small black dog")
    at.select_slider(key="bahdanau_step").set_value(5).run()
    assert at.metric[0].value == "noir"
    at.text_input(key="bahdanau_text").input("he is happy").run()
    assert_clean(at)
    tr = engine.trace(engine.load(ADDITIVE), "he is happy")
    step = at.select_slider(key="bahdanau_step").value
    assert step == len(tr.target) - 1  # clamped to the last step of the new translation
    np.testing.assert_allclose(ys(by_meta(at)["bahdanau_energies"], 1), tr.alignment[step], atol=1e-6)
