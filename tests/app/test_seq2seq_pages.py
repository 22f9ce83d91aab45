"""Pretrained encoder-decoders on the text pages (AppTest): a tiny T5 folder typed into the model field.

Explore shows the decoded output, an attention-block picker and the chosen block's head; Step by step
works through a cross-attention query; Heads and the bertviz page draw the three blocks. Numbers are
checked against ``engine.trace`` of the same folder. The own tiny-translator (offline) appears on
Explore too.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
from app.state import DEFAULT_TEXT
from apptest_helpers import assert_clean, assert_head_and_grid, layer_shown, messages, open_page, run_app
from tests.seq2seq_models import save_tiny_seq2seq

SHOWN = 5e-4 + 1e-6  # the view's weights travel to 3 decimals

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def t5_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return root, save_tiny_seq2seq("t5", root / "tiny-t5")


@pytest.fixture
def allowed(t5_folder, monkeypatch):
    root, folder = t5_folder
    monkeypatch.setenv("AP_MODEL_DIRS", str(root))
    return str(folder)


def _reference(folder: str, text: str = TEXT):
    return engine.trace(engine.load(folder), text)


def test_explore_shows_the_output_and_each_block(allowed):
    at = run_app(hub_id=allowed, text=TEXT)
    assert_clean(at)
    ref = _reference(allowed)
    shown = " ".join(m.value for m in at.markdown)
    assert "Output:" in shown
    assert not [t for t in at.toggle if t.label == "Causal mask"]  # nothing to toggle: the decoder is always causal
    picker = at.selectbox(key="explore_block")
    assert picker.value == "encoder"
    np.testing.assert_allclose(layer_shown(at).z, ref.encoder.pattern(0, 0), atol=SHOWN)
    picker.set_value("cross").run()
    assert_clean(at)
    shown = layer_shown(at)
    assert shown.z.shape == (len(ref.target), len(ref.source)) and not shown.header["square"]
    np.testing.assert_allclose(shown.z, ref.cross.pattern(0, 0), atol=SHOWN)


def test_step_by_step_walks_a_cross_attention_query(allowed):
    at = open_page("step_by_step", hub_id=allowed, text=TEXT, step_block="cross")
    assert_clean(at)
    ref = _reference(allowed).cross
    query = at.selectbox(key="step_query").value
    weights = [d.value for d in at.dataframe if "weight" in d.value.columns]
    assert weights, "the softmax table"
    np.testing.assert_allclose(weights[0]["weight"].astype(float), ref.pattern(0, 0)[query], atol=5.1e-5)
    assert len(weights[0]) == len(ref.key_tokens)  # keys are the source tokens


def test_step_by_step_names_t5s_relative_bias(allowed):
    at = open_page("step_by_step", hub_id=allowed, text=TEXT, step_block="encoder")
    assert_clean(at)
    assert any("relative-position bias" in h.value for h in at.subheader)
    assert any("learned bias b(j − i)" in c.value for c in at.caption)
    ref = _reference(allowed).encoder
    query = at.selectbox(key="step_query").value
    frame = next(d.value for d in at.dataframe if "+ bias" in d.value.columns)
    np.testing.assert_allclose(frame["+ bias"].astype(float), ref.bias(0)[0, query], atol=5.1e-5)


@pytest.mark.parametrize("block", ["encoder", "decoder", "cross"])
def test_heads_draws_every_block(allowed, block):
    at = open_page("heads", hub_id=allowed, text=TEXT, heads_block=block)
    assert_clean(at)
    shown = layer_shown(at)  # the model view: every layer × head of the block, drawn in the browser
    att = getattr(_reference(allowed), block)
    assert shown.header["grid"] and shown.header["square"] is (block != "cross")
    assert shown.values.shape[:2] == (att.n_layers, att.n_heads)
    np.testing.assert_allclose(np.nan_to_num(shown.z), att.pattern(0, 0), atol=SHOWN)


def test_bertviz_page_reads_a_pretrained_translator(allowed):
    from engine.views import bertviz_html as bv

    at = open_page("bertviz_views", hub_id=allowed, text=TEXT)
    assert_clean(at)
    frames = at.main.get("iframe")  # the sidebar has the share box's copy button
    assert len(frames) == 1 and frames[0].proto.alt == "bertviz head view"
    parts = bv.read_payload(frames[0].proto.srcdoc)["attention"]
    assert [p["name"] for p in parts] == ["Encoder", "Decoder", "Cross"]
    ref = _reference(allowed)
    assert len(parts[2]["left_text"]) == len(ref.target) and len(parts[2]["right_text"]) == len(ref.source)


def test_own_translator_is_on_explore_offline():
    at = run_app(model="tiny-translator", text="the cat eats the bread")
    assert_clean(at)
    assert at.selectbox(key="explore_block").value == "encoder"
    assert any("Output:" in m.value for m in at.markdown)
    assert DEFAULT_TEXT  # the shared sentence is untouched elsewhere


def test_explore_decodes_again_with_sampling(allowed):
    from engine.generation import DecodeSettings

    at = run_app(hub_id=allowed, text=TEXT)
    assert_clean(at)
    greedy_rows = layer_shown(at).z.shape
    at.radio(key="decode_mode").set_value("Sampled").run()  # outside the form: enables the sampling controls
    at.number_input(key="decode_tokens").set_value(5)
    at.number_input(key="decode_top_k").set_value(3)
    at.number_input(key="decode_seed").set_value(4)
    at.button(key="FormSubmitter:decode_form-Decode again").click().run()
    assert_clean(at)
    ref = engine.generate(engine.load(allowed), TEXT, DecodeSettings(max_new_tokens=5, sample=True, top_k=3, seed=4))
    assert any("sampled" in m for m in messages(at.info))
    at.selectbox(key="explore_block").set_value("cross").run()
    shown = layer_shown(at)
    assert shown.z.shape == (len(ref.target), len(ref.source)) != greedy_rows
    np.testing.assert_allclose(shown.z, ref.cross.pattern(0, 0), atol=SHOWN)


def test_forged_decoding_settings_get_a_message(allowed):
    at = run_app(hub_id=allowed, text=TEXT)
    at.session_state["explore_decode"] = (allowed, TEXT, 128, (10_000, True, 0.0, -1, 2.0, -5))
    at.run()
    assert_clean(at)
    assert any("must be" in m for m in messages(at.warning))


TRANSLATOR_TEXT = "the black cat sees the small dog"


def _translator_reference(settings):
    return engine.generate(engine.load("tiny-translator"), TRANSLATOR_TEXT, settings)


def _shows_the_decoded_output(at, ref) -> None:
    """The output line, the head map and the grid of ``ref`` (a Seq2SeqTrace) are on the page, no refusal."""
    assert_clean(at)
    assert not any("needs a decoder" in m for m in messages(at.warning)), messages(at.warning)
    assert any(m.value.startswith("**Output:**") and ref.output_text.split()[0] in m.value for m in at.markdown)
    at.selectbox(key="explore_block").set_value("cross").run()
    assert_clean(at)
    shown = assert_head_and_grid(at)  # every head of the layer in the view
    np.testing.assert_allclose(shown.z, ref.cross.pattern(0, 0), atol=SHOWN)
    # rows named by the word each step wrote (the last one the end token, or "(cut)"), not the one read in
    rows = [label.split(" ", 1)[1] for label in shown.rows]  # as typed: the view draws text, not markup
    finished = not any("did not end" in n for n in ref.notices)
    assert rows == [*ref.target.strings[1:], "<eos>" if finished else "(cut)"], rows


@pytest.mark.parametrize("sampled", [False, True])
def test_own_translator_decodes_again(sampled):
    """Issue 20: "Decode again" on the tiny translator blanked Explore with "needs a decoder"."""
    from engine.generation import DecodeSettings

    at = run_app(model="tiny-translator", text=TRANSLATOR_TEXT)
    assert_clean(at)
    if sampled:
        at.radio(key="decode_mode").set_value("Sampled").run()  # outside the form: enables the sampling controls
    at.number_input(key="decode_tokens").set_value(4 if not sampled else 10)
    if sampled:
        at.slider(key="decode_temperature").set_value(2.0)
        at.number_input(key="decode_seed").set_value(3)
    at.button(key="FormSubmitter:decode_form-Decode again").click().run()
    settings = (
        DecodeSettings(max_new_tokens=10, sample=True, temperature=2.0, seed=3)
        if sampled
        else DecodeSettings(max_new_tokens=4)
    )
    ref = _translator_reference(settings)
    if not sampled:
        assert len(ref.target) == 5  # <bos> + 4 words: the short greedy output, not the full translation
    _shows_the_decoded_output(at, ref)
    assert any(("sampled" if sampled else "greedy") in m for m in messages(at.info) + messages(at.caption))


def test_own_translator_decodes_from_a_link():
    from streamlit.testing.v1 import AppTest

    from apptest_helpers import APP, TIMEOUT
    from engine.generation import DecodeSettings

    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update({"model": "tiny-translator", "text": TRANSLATOR_TEXT, "explore_decode": "3,0"})
    at.run()
    _shows_the_decoded_output(at, _translator_reference(DecodeSettings(max_new_tokens=3)))
    assert at.query_params.get("explore_decode") == "3,0"
