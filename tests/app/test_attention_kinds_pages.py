"""Layers of different kinds and sinks on the text pages: the layer picker names each layer's kind when a model's
layers differ (``AttentionTrace.layer_kinds``); Step by step says what a sink takes (gpt-oss)."""

from __future__ import annotations

import os

import pytest
import torch

from apptest_helpers import assert_clean, messages, open_page
from tests.unit.test_hf_interface_parity import WINDOW

TEXT = "The cat sat on the mat and it was warm."


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_hf_folders) -> dict:
    """A tiny Gemma 2 (a full layer, then a sliding one of 3 keys) and gpt-oss (sliding, then full; learned sinks)
    saved here, and the session's tiny GPT-2."""
    from transformers import AutoModelForCausalLM

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer
    from tests.unit.test_hf_interface_parity import _config

    root = tmp_path_factory.mktemp("allowed")
    tokenizer = build_tokenizer()
    for kind in ("gemma2", "gpt_oss"):
        torch.manual_seed(0)
        config = _config(kind, len(tokenizer), tokenizer.eos_token_id)
        assert config.layer_types == ["full_attention", "sliding_attention"][:: 1 if kind == "gemma2" else -1]
        assert config.sliding_window == WINDOW
        AutoModelForCausalLM.from_config(config).save_pretrained(root / kind)
        tokenizer.save_pretrained(root / kind)
    return {"gemma2": root / "gemma2", "gpt_oss": root / "gpt_oss", "gpt2": tiny_hf_folders["gpt2"]}


@pytest.mark.parametrize("page", ["step_by_step", "heads"])
def test_the_layer_picker_badges_layers_of_different_kinds(folders, monkeypatch, page: str) -> None:
    monkeypatch.setenv("AP_MODEL_DIRS", os.pathsep.join(sorted({str(f.parent) for f in folders.values()})))
    at = open_page(page, hub_id=str(folders["gemma2"]), text=TEXT)
    assert_clean(at)
    assert at.selectbox(key="layer").options == ["0 · full", f"1 · sliding {WINDOW}"]
    at.selectbox(key="layer").select(1).run()
    assert_clean(at)
    assert at.selectbox(key="layer").value == 1
    plain = open_page(page, hub_id=str(folders["gpt2"]), text=TEXT)  # every layer full: no badge
    assert plain.selectbox(key="layer").options == ["0", "1"]


def test_step_by_step_says_what_the_sink_takes(folders, monkeypatch) -> None:
    import engine
    from engine.analysis.stepwise import query_steps

    monkeypatch.setenv("AP_MODEL_DIRS", os.pathsep.join(sorted({str(f.parent) for f in folders.values()})))
    at = open_page("step_by_step", hub_id=str(folders["gpt_oss"]), text=TEXT)
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert at.selectbox(key="layer").options == [f"0 · sliding {WINDOW}", "1 · full"]
    trace = engine.trace(engine.load(str(folders["gpt_oss"])), TEXT)
    query = int(at.session_state["step_query"])  # the query row the page shows
    steps = query_steps(trace, 0, 0, query)
    assert 0 < steps.sink_weight[0] < 1
    caption = next(c.value for c in at.caption if "sink logit" in c.value)
    assert f"sink keeps {steps.sink_weight[0]:.4f}" in caption and f"sum to {steps.weights[0].sum():.4f}" in caption
