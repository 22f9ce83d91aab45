"""The head-ablation panel (app/views/heads/ablation.py) through AppTest.

The panel is drawn by a tiny script (tests/app/ablation_panel_script.py) whose inputs come from
session_state. What the panel shows is compared with ``engine.analysis.ablation.ablate`` called
directly on a separately loaded model.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from apptest_helpers import ROOT, TIMEOUT, assert_clean, decode, messages
from engine.analysis.ablation import ablate

SCRIPT = ROOT / "tests" / "app" / "ablation_panel_script.py"
SENTENCE = "The animal didn't cross the street because it was too tired."
STORY = "the little girl saw a big red ball and she"
SOURCE = "the cat sees the dog ."
SETUPS = {
    "minilm": dict(t_model="minilm", t_text=SENTENCE, t_causal=False, t_layers=6, t_heads=12, t_family="encoder"),
    "tiny-gpt-stories": dict(
        t_model="tiny-gpt-stories", t_text=STORY, t_causal=True, t_layers=3, t_heads=4, t_family="decoder"
    ),
    "tiny-translator": dict(
        t_model="tiny-translator", t_text=SOURCE, t_causal=False, t_layers=2, t_heads=4, t_family="encoder-decoder"
    ),
}


@pytest.fixture(scope="module")
def models():
    return {}


def _model(models: dict, model_id: str):
    if model_id not in models:
        models[model_id] = engine.load(model_id)
    return models[model_id]


def panel(**state) -> AppTest:
    at = AppTest.from_file(str(SCRIPT), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert_clean(at)
    return at


def figures(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def captions(at: AppTest) -> str:
    return " ".join(messages(at.caption))


def metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert found, [m.label for m in at.metric]
    return found[0]


# ---------------------------------------------------------------- MiniLM: cosine similarity


def test_minilm_without_heads(models):
    at = panel(**SETUPS["minilm"])
    assert any("Pick one or more heads" in m for m in messages(at.info))
    assert metric(at, "Cosine similarity, before vs after") == "1.0000"
    assert "Ablation" in captions(at) and "0 of 72 heads switched off" in captions(at)


def test_minilm_with_heads_shows_ablate_numbers(models):
    at = panel(**SETUPS["minilm"], ablation_heads=["L0 H3", "L2 H5"])
    expected = ablate(_model(models, "minilm"), SENTENCE, [(0, 3), (2, 5)], causal=False, max_tokens=128)
    assert expected.cosine < 0.9999
    assert metric(at, "Cosine similarity, before vs after") == f"{expected.cosine:.4f}"
    assert "2 of 72 heads switched off" in captions(at)
    assert not at.info  # no "pick heads" hint once heads are chosen


def test_minilm_whole_layer_and_keep_only(models):
    at = panel(**SETUPS["minilm"])
    at.multiselect(key="ablation_layers").select("Layer 1").run()
    assert_clean(at)
    expected = ablate(_model(models, "minilm"), SENTENCE, [(1, None)], causal=False, max_tokens=128)
    assert metric(at, "Cosine similarity, before vs after") == f"{expected.cosine:.4f}"
    assert "12 of 72 heads switched off" in captions(at)
    at.toggle(key="ablation_keep_only").set_value(True).run()
    assert_clean(at)
    kept = ablate(_model(models, "minilm"), SENTENCE, [(1, None)], causal=False, max_tokens=128, keep_only=True)
    assert metric(at, "Cosine similarity, before vs after") == f"{kept.cosine:.4f}"
    assert "60 of 72 heads switched off" in captions(at)


# ---------------------------------------------------------------- own decoder: next-token bars


def _bars(at: AppTest) -> tuple[list[str], np.ndarray, np.ndarray]:
    figs = figures(at)
    assert len(figs) == 1
    before, after = figs[0]["data"]
    assert (before["name"], after["name"]) == ("All heads on", "Chosen heads off")
    return list(before["x"]), decode(before["y"]), decode(after["y"])


@pytest.mark.parametrize("heads", [[], ["L0 H1"], ["L0 H1", "L2 H3"]])
def test_stories_bars_equal_ablate(models, heads):
    at = panel(**SETUPS["tiny-gpt-stories"], ablation_heads=heads)
    pairs = [(int(h[1]), int(h[4])) for h in heads]
    expected = ablate(_model(models, "tiny-gpt-stories"), STORY, pairs, causal=True, max_tokens=128)
    labels, before, after = _bars(at)
    assert labels == list(expected.top_tokens)
    np.testing.assert_allclose(before, expected.top_before, rtol=1e-12)
    np.testing.assert_allclose(after, expected.top_after, rtol=1e-12)
    assert metric(at, "KL divergence (nats)") == f"{expected.kl:.4f}"
    assert metric(at, "Total variation") == f"{expected.tv:.4f}"
    winners = [expected.top_tokens[int(np.argmax(v))] for v in (expected.top_before, expected.top_after)]
    assert metric(at, "Most likely next token") in (winners[0], f"{winners[0]} → {winners[1]}")
    assert (winners[0] == winners[1]) == ("→" not in metric(at, "Most likely next token"))
    if heads:
        assert expected.kl > 1e-4
    else:
        np.testing.assert_array_equal(before, after)
    assert "Ablation" in captions(at) and "next token" in captions(at)
    assert at.get("download_button")


# ---------------------------------------------------------------- translator: two translations


def test_translator_without_and_with_heads(models):
    at = panel(**SETUPS["tiny-translator"])
    model = _model(models, "tiny-translator")
    plain = ablate(model, SOURCE, [])
    assert [c.value for c in at.code] == [plain.translation_before] * 2
    assert messages(at.success) == ["The translation did not change."]
    assert at.segmented_control(key="ablation_block").value == "cross"

    at.multiselect(key="ablation_layers").select("Layer 0").select("Layer 1").run()
    assert_clean(at)
    expected = ablate(model, SOURCE, [("cross", 0, None), ("cross", 1, None)])
    assert expected.changed
    assert [c.value for c in at.code] == [expected.translation_before, expected.translation_after]
    assert messages(at.warning) == ["Switching these heads off changed the translation."]
    confidences = [m.value for m in at.metric]
    assert confidences == [f"{expected.confidence_before:.3f}", f"{expected.confidence_after:.3f}"]
    assert "Ablation" in captions(at) and "8 of 24 heads switched off" in captions(at)


def test_translator_block_choice(models):
    at = panel(**SETUPS["tiny-translator"], ablation_block="encoder", ablation_heads=["L1 H0"])
    expected = ablate(_model(models, "tiny-translator"), SOURCE, [("encoder", 1, 0)])
    assert [m.value for m in at.metric] == [f"{expected.confidence_before:.3f}", f"{expected.confidence_after:.3f}"]


# ---------------------------------------------------------------- robustness


def test_choices_from_a_bigger_model_are_dropped():
    at = panel(**SETUPS["minilm"], ablation_heads=["L5 H11", "L0 H1"], ablation_layers=["Layer 5"])
    assert "13 of 72" in captions(at)  # layer 5 (12, L5 H11 among them) + L0 H1
    for key, value in SETUPS["tiny-gpt-stories"].items():
        at.session_state[key] = value
    at.run()
    assert_clean(at)
    assert at.multiselect(key="ablation_heads").value == ["L0 H1"]
    assert at.multiselect(key="ablation_layers").value == []
    assert "1 of 12 heads" in captions(at)


@pytest.mark.parametrize(
    ("state", "kind", "text"),
    [
        (dict(t_text="   "), "warning", "empty"),
        (dict(t_model="no/such-model-here"), "warning", "no/such-model-here"),
        (dict(t_model="bahdanau-translator", t_family="rnn-attention"), "info", "transformer text models"),
        (dict(t_layers="lots", t_heads=-3), None, None),
    ],
)
def test_bad_input_becomes_a_message(state, kind, text):
    at = panel(**{**SETUPS["minilm"], **state})
    if kind is not None:
        shown = messages(getattr(at, kind))
        assert any(text in m for m in shown), shown
    assert not at.get("plotly_chart")
