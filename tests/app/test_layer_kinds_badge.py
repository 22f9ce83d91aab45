"""The layer picker names each layer's kind when a model's layers differ (``AttentionTrace.layer_kinds``)."""

from __future__ import annotations

import os

import pytest
import torch

from apptest_helpers import assert_clean, open_page

TEXT = "The cat sat on the mat and it was warm."


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_hf_folders) -> dict:
    """A tiny Gemma 2 (a full layer, then a sliding one of 3 keys) saved here, and the session's tiny GPT-2."""
    from transformers import AutoModelForCausalLM

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer
    from tests.unit.test_hf_interface_parity import WINDOW, _config

    folder = tmp_path_factory.mktemp("allowed") / "gemma2"
    tokenizer = build_tokenizer()
    torch.manual_seed(0)
    config = _config("gemma2", len(tokenizer), tokenizer.eos_token_id)
    assert config.layer_types == ["full_attention", "sliding_attention"] and config.sliding_window == WINDOW
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return {"gemma2": folder, "gpt2": tiny_hf_folders["gpt2"]}


@pytest.mark.parametrize("page", ["step_by_step", "heads"])
def test_the_layer_picker_badges_layers_of_different_kinds(folders, monkeypatch, page: str) -> None:
    from tests.unit.test_hf_interface_parity import WINDOW

    monkeypatch.setenv("AP_MODEL_DIRS", os.pathsep.join(sorted({str(f.parent) for f in folders.values()})))
    at = open_page(page, hub_id=str(folders["gemma2"]), text=TEXT)
    assert_clean(at)
    assert at.selectbox(key="layer").options == ["0 · full", f"1 · sliding {WINDOW}"]
    at.selectbox(key="layer").select(1).run()
    assert_clean(at)
    assert at.selectbox(key="layer").value == 1
    plain = open_page(page, hub_id=str(folders["gpt2"]), text=TEXT)  # every layer full: no badge
    assert plain.selectbox(key="layer").options == ["0", "1"]
