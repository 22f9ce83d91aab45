"""A causal LM of a family the table lacks is read through the same capture path, checked on load and marked.

Starcoder2 (grouped-query attention, a sliding window) is not in the family table: ``engine.load`` finds its layers
and output projection from one recorded forward pass, checks the probe's patterns against its own eager attention,
and serves it with a "not verified by us" notice; its patterns then equal eager ``output_attentions`` to 1e-5 and
its greedy ids its own ``generate``. Families whose attention does not go through the interface are refused with
the reason, as is one whose patterns differ from its eager attention's (a model type transformers has no causal LM
for keeps the old message: test_hf_interface_parity.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.families import HUB_TYPES
from engine.generation import DecodeSettings
from engine.records import ModelUnavailableError
from tests.hf_helpers import TINY_TEXT
from tests.unit.test_hf_interface_parity import SENTENCES, reference

WINDOW = 3


def _save(kind: str, root: Path) -> Path:
    import transformers as tf

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    eos = tokenizer.eos_token_id
    ids = dict(vocab_size=len(tokenizer), bos_token_id=eos, eos_token_id=eos, pad_token_id=eos)
    if kind == "starcoder2":
        config = tf.Starcoder2Config(
            num_key_value_heads=2,
            sliding_window=WINDOW,
            max_position_embeddings=128,
            initializer_range=0.25,
            **TINY_TEXT,
            **ids,
        )
    elif kind == "granite_swa":  # sinks that scale the output after a plain softmax (its eager weights omit them)
        config = tf.GraniteSWAConfig(
            num_key_value_heads=2, sliding_window=WINDOW, max_position_embeddings=128, **TINY_TEXT, **ids
        )
    elif kind == "bloom":  # ALiBi, its own attention code (no attention interface)
        config = tf.BloomConfig(hidden_size=32, n_layer=2, n_head=4, **ids)
    else:  # mamba: a state-space model, no attention at all
        config = tf.MambaConfig(hidden_size=32, num_hidden_layers=2, state_size=4, **ids)
    torch.manual_seed(0)
    tf.AutoModelForCausalLM.from_config(config).eval().save_pretrained(root / kind)
    tokenizer.save_pretrained(root / kind)
    return root / kind


@pytest.fixture(scope="module")
def starcoder2(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    folder = _save("starcoder2", tmp_path_factory.mktemp("unverified"))
    return engine.load(str(folder)), AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()


def test_a_family_outside_the_table_is_traced_and_marked_not_verified(starcoder2) -> None:
    model, ref = starcoder2
    assert "starcoder2" not in HUB_TYPES and model.info["verified"] is False
    assert (model.adapter.layers_path, model.adapter.out_proj) == ("layers", "self_attn.o_proj")
    for sentence in SENTENCES.values():
        tr = engine.trace(model, sentence)
        assert any("not verified by us" in n and "starcoder2" in n for n in tr.notices)
        assert tr.layer_kinds == (f"sliding {WINDOW}",) * 2 and tr.kv_heads == 2
        for layer, att in enumerate(reference(ref, tr.tokens.ids)):
            np.testing.assert_allclose(tr.pattern(layer), att, atol=1e-5, rtol=0, err_msg=f"layer {layer}")
    assert model.module.config._attn_implementation == "ap_capture"  # the probe's eager pass was undone


def test_a_family_outside_the_table_writes_what_its_own_generate_writes(starcoder2) -> None:
    model, ref = starcoder2
    tr = engine.generate(model, SENTENCES["short"], DecodeSettings(max_new_tokens=8))
    with torch.no_grad():
        out = ref.generate(torch.tensor([list(tr.tokens.ids[: tr.generated_from])]), max_new_tokens=8, do_sample=False)
    assert list(tr.tokens.ids) == out[0].tolist() and tr.generated_from < len(tr.tokens)


@pytest.mark.parametrize("kind", ["bloom", "mamba"])
def test_a_family_whose_attention_the_interface_never_sees_is_refused_with_the_reason(kind: str, tmp_path) -> None:
    folder = _save(kind, tmp_path)
    with pytest.raises(ModelUnavailableError) as caught:
        engine.load(str(folder))
    said = str(caught.value)
    assert f"is a '{kind}' model, a family not in the engine's table" in said
    reason, _, table = said.partition(" The families checked here: ")
    assert reason.endswith("no attention call went through transformers' attention interface") and "llama" in table


def test_a_family_whose_patterns_differ_from_its_eager_attention_is_refused(tmp_path) -> None:
    """Granite-SWA reports each row's softmax before its sink scales the output (rows sum to one), while the capture
    keeps the sink in the row (gpt-oss's convention): the probe sees patterns unlike its eager ones and refuses."""
    folder = _save("granite_swa", tmp_path)
    with pytest.raises(
        ModelUnavailableError,
        match=r"'granite_swa' model, a family not in the engine's table, and its "
        r"attention cannot be read here: its traced patterns differ from its own eager attention by up to",
    ):
        engine.load(str(folder))
