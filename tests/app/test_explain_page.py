"""The "Is attention the explanation?" page through AppTest: its numbers against the engine, bad input calmly."""

from __future__ import annotations

import numpy as np

import engine
from apptest_helpers import assert_clean, decode, figures, messages, open_page, title
from engine.analysis.rank_agreement import spearman

GPT_TEXT = "tom had a big box and a small ball . he gave the"


def _by_title(at) -> dict[str, dict]:
    return {title(f): f for f in figures(at)}


def test_the_page_draws_every_method_and_their_agreement():
    at = open_page("explain")
    assert_clean(at)
    assert at.text_input(key="explain_text_0").value == GPT_TEXT
    figs = _by_title(at)
    heat = figs["Importance of each token, by method"]
    assert heat["data"][0]["y"][0] == "raw attention"
    trace = engine.trace(engine.load("tiny-gpt-stories"), GPT_TEXT)
    row = trace.pattern(trace.n_layers - 1).mean(0)[-1]
    np.testing.assert_allclose(decode(heat["data"][0]["z"])[0], row / row.max(), atol=1e-6)
    bars = {t: f for t, f in figs.items() if f["data"][0]["type"] == "bar"}
    assert len(bars) == 6
    # the Spearman matrix is the rank correlation of the bars' sizes over the non-special tokens (<bos> left out)
    loo = np.abs(decode(bars["leave-one-out"]["data"][0]["y"]))[1:]
    att = decode(bars["raw attention"]["data"][0]["y"])[1:]
    rho = decode(figs["Spearman's ρ of the rankings"]["data"][0]["z"])
    assert abs(rho[0, 3] - spearman(att, loo)) < 1e-6
    np.testing.assert_allclose(np.diag(rho), 1, atol=1e-6)
    assert "Attention moved vs output moved, one point per run" in figs
    captions = " ".join(messages(at.caption))
    assert "completeness check" in captions and "gap" in captions
    assert any("what it cannot" in m for m in messages(at.markdown))


def test_minilm_explains_the_cosine_with_a_reference():
    at = open_page("explain")
    at.radio(key="explain_model").set_value("minilm").run()
    assert_clean(at)
    assert any("cosine similarity" in m for m in messages(at.markdown))
    assert at.text_input(key="explain_reference").value
    assert len([f for f in figures(at) if f["data"][0]["type"] == "bar"]) == 6


def test_a_masked_lm_text_without_a_blank_says_how_to_make_one():
    at = open_page("explain", explain_model="tiny-bert-stories")
    at.text_input(key="explain_text_1").input("lily found a red ball .").run()
    assert_clean(at)
    assert any("[MASK]" in m for m in messages(at.warning))
    at.text_input(key="explain_text_1").input("lily found a [MASK] ball .").run()
    assert_clean(at)
    assert not at.warning and any("blank at position" in m for m in messages(at.markdown))
