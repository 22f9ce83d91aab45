"""Any Hugging Face family on every text page (AppTest): "a person online can type any of those families'
Hub ids and use every text page" — offline, the same code on tiny random folders typed into the model
field, inside the folder the server allows (``AP_MODEL_DIRS``).

Each page must draw without a traceback, without the calm guard message and without an error box;
the Positional page may say in one info box that a model adds no position vectors (RoPE, T5).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from apptest_helpers import assert_clean, messages, open_page
from tests.seq2seq_models import save_tiny_seq2seq

PAGES = ("explore", "step_by_step", "heads", "bertviz_views", "positional")
FAMILIES = ("bert", "distilbert", "gpt2", "llama", "gemma2", "gpt_oss", "t5", "bart")
TEXT = "The cat sat on the mat and it was warm."


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_hf_folders) -> dict[str, Path]:
    """Each family's folder: BERT, DistilBERT and GPT-2 the session's (``tiny_hf_folders``), the others saved here."""
    from transformers import AutoModelForCausalLM

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer
    from tests.unit.test_hf_interface_parity import _config

    root = tmp_path_factory.mktemp("allowed")
    tokenizer = build_tokenizer()
    for kind in ("llama", "gemma2", "gpt_oss"):
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(_config(kind, len(tokenizer), tokenizer.eos_token_id)).save_pretrained(
            root / kind
        )
        tokenizer.save_pretrained(root / kind)
    for kind in ("t5", "bart"):
        save_tiny_seq2seq(kind, root / kind)
    return {kind: tiny_hf_folders[kind] if kind in tiny_hf_folders else root / kind for kind in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("page", PAGES)
def test_every_text_page_reads_every_family(folders, monkeypatch, family, page):
    monkeypatch.setenv("AP_MODEL_DIRS", os.pathsep.join(sorted({str(f.parent) for f in folders.values()})))
    at = open_page(page, hub_id=str(folders[family]), text=TEXT)
    assert_clean(at)
    assert not at.error, messages(at.error)
    if page != "positional":
        assert at.get("plotly_chart") or at.get("iframe") or at.get("bidi_component"), (
            f"{page} drew nothing for {family}"
        )
        assert not at.warning, messages(at.warning)
    if page == "explore":  # the folder was read, not the default model
        captions = " ".join(messages(at.caption))
        if family in {"t5", "bart"}:
            assert at.selectbox(key="explore_block").value == "encoder"
        elif family in {"llama", "gemma2", "gpt_oss"}:
            assert "share key/value head" in captions, captions
        else:
            assert "2 layers" in captions, captions
