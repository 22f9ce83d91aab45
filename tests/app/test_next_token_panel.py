"""Explore's "What comes next?" tab through AppTest: bars equal the engine's reference, temperature
re-draws them from cached scores (no second forward pass), encoders get a one-line note."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import engine
import engine.analysis.next_token as next_token
from apptest_helpers import assert_clean, messages, run_app  # noqa: E402
from engine.analysis.ablation_runs import runner_for

STORY = "the little girl saw a big red ball and she"
TAB = "What comes next?"


def _bars(at) -> dict:
    charts = [c for c in at.get("plotly_chart") if c.key == "next_token_chart"]
    assert len(charts) == 1, [c.key for c in at.get("plotly_chart")]
    return json.loads(charts[0].proto.spec)["data"][0]


def _open(**state):
    at = run_app(**state)
    at.session_state["explore_tab"] = TAB
    at.run()
    assert_clean(at)
    assert not at.error, messages(at.error)
    return at


@pytest.fixture()
def forward_passes(monkeypatch):
    calls = []
    real = next_token.next_token_logits

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(next_token, "next_token_logits", counted)
    return calls


def test_bars_equal_the_reference_and_temperature_reuses_the_scores(forward_passes):
    text = STORY + " "  # an input no other test cached
    at = _open(model="tiny-gpt-stories", text=text)
    bars = _bars(at)
    assert bars["orientation"] == "h" and len(bars["x"]) == 10
    model = engine.load("tiny-gpt-stories")
    ids = torch.tensor([list(runner_for(model).prepare(model, text, causal=None, max_tokens=512).ids)])
    with torch.no_grad():
        ref = torch.softmax(model.module(ids)[0, -1].double(), -1).numpy()
    assert bars["x"][0] == pytest.approx(float(ref.max()), abs=1e-5)
    assert bars["x"] == sorted(bars["x"], reverse=True)
    assert len(forward_passes) == 1

    at.slider(key="next_token_temperature").set_value(0.3).run()
    assert_clean(at)
    cold = _bars(at)
    assert cold["y"] == bars["y"]  # same candidates, same order
    assert cold["x"][0] > bars["x"][0]
    t_ref = torch.softmax(torch.log(torch.tensor(ref)) / 0.3, -1).numpy()
    np.testing.assert_allclose(cold["x"], np.sort(t_ref)[::-1][:10], atol=1e-5)
    assert len(forward_passes) == 1, "moving the temperature must not run the model again"


def test_encoder_shows_a_one_line_note():
    at = _open()  # MiniLM by default
    assert not [c for c in at.get("plotly_chart") if c.key == "next_token_chart"]
    assert any("needs a decoder" in m.value for m in at.info), messages(at.info)


def test_token_labels_are_escaped_and_distinct():
    from app.views.explore.next_token import next_token_figure

    fig = next_token_figure(("<b>x</b>", "a", "a"), [0.5, 0.3, 0.2], 1.0)
    labels = list(fig.data[0].y)
    assert labels[0] == "&lt;b&gt;x&lt;/b&gt;"
    assert len(set(labels)) == 3
