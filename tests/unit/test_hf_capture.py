"""One capture path reads every Hugging Face text family: the edges of it.

BERT, RoBERTa, ELECTRA, DistilBERT and GPT-2 (with each of its scale switches) are loaded through
``engine.load(folder)`` with ``attn_implementation="ap_capture"`` and traced from their attention
calls. Compared here with a separate eager copy and ``output_attentions=True``: an input at the
position table's limit, each causal toggle, ``trace_ids`` on an id sequence no tokenizer made, and
head ablation at each family's output projection. A model that does not run ``ap_capture`` is refused
with a message, never traced wrongly.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.records import EmptyInputError, EngineError
from tests.hf_helpers import KINDS, MAX_POS, additive_causal_mask, assert_equals_eager, engine_and_eager, family

LONG = "The quick brown fox jumps over the lazy dog, and the cat watches it. " * 12
TEXT = "The cat sat on the mat, and the teacher explains attention."


def _pair(kind: str, tiny_hf_folders: dict[str, Path]):
    return engine_and_eager(kind, tiny_hf_folders)


@pytest.fixture(params=KINDS)
def pair(request, tiny_hf_folders):
    return request.param, *_pair(request.param, tiny_hf_folders)


def test_every_family_runs_the_capturing_attention(pair) -> None:
    _, model, _ = pair
    assert model.module.config._attn_implementation == "ap_capture"
    tr = engine.trace(model, TEXT)
    assert tr.window == () and tr.softcap == () and tr.kv_heads is None  # nothing a BERT or GPT-2 has
    hooked = [m for m in model.module.modules() if m._forward_hooks or m._forward_pre_hooks]
    assert not hooked


def test_an_input_at_the_position_limit_equals_eager(pair) -> None:
    kind, model, ref = pair
    tr = engine.trace(model, LONG, max_tokens=4 * MAX_POS)
    assert len(tr.tokens) == MAX_POS == model.max_positions and tr.truncated
    assert any("at most" in note for note in tr.notices), tr.notices
    assert_equals_eager(tr, ref, peaked=True)
    if tr.pos_encoding is not None:  # the last row of the table (RoBERTa: after its padding offset)
        assert tr.pos_encoding.shape[0] == MAX_POS


def test_causal_toggles_equal_eager_with_the_same_mask(pair) -> None:
    kind, model, ref = pair
    decoder = family(kind) == "gpt2"
    default = engine.trace(model, TEXT)
    assert default.causal is decoder
    flipped = engine.trace(model, TEXT, causal=not decoder)
    n = len(flipped.tokens)
    mask = torch.zeros(1, 1, n, n) if decoder else additive_causal_mask(n)  # the same mask, as eager reads it
    assert flipped.causal is not decoder
    assert_equals_eager(flipped, ref, mask)
    looks_ahead = float(np.triu(flipped.pattern(0), 1).sum())
    assert looks_ahead > 0.1 if decoder else looks_ahead == 0.0
    assert engine.trace(model, TEXT).causal is decoder  # the shared model kept its own mask


def test_a_trace_stops_after_the_last_layers_attention_call(pair) -> None:
    """Nothing after the last layer's attention call is computed (its output, MLP, the final norm, a head):
    every layer but the last returns, the last never does, and its pattern still equals eager's."""
    kind, model, ref = pair
    layers = model.adapter.layers(model.module)
    returned: list[int] = []
    handles = [layer.register_forward_hook(lambda *_a, i=i: returned.append(i)) for i, layer in enumerate(layers)]
    try:
        tr = engine.trace(model, TEXT)
    finally:
        for h in handles:
            h.remove()
    assert returned == list(range(len(layers) - 1))
    assert tr.n_layers == len(layers)
    assert_equals_eager(tr, ref)


def test_a_recorder_that_stops_nothing_lets_the_stop_signal_through() -> None:
    from engine.capture.hf import ForwardStopped, recording

    with pytest.raises(ForwardStopped), recording():
        raise ForwardStopped
    with recording(stop_after=[torch.nn.Linear(1, 1)]) as rec:
        raise ForwardStopped
    assert rec.calls == []


def test_trace_ids_reads_any_id_sequence(pair) -> None:
    """What token generation will call: the prompt's ids and then ids the model picked itself."""
    kind, model, ref = pair
    adapter = model.adapter
    by_text = engine.trace(model, TEXT)
    same = adapter.trace_ids(model, by_text.tokens.ids, by_text.tokens, causal=None)
    for layer in range(by_text.n_layers):
        np.testing.assert_array_equal(same.pattern(layer), by_text.pattern(layer))
    assert not same.truncated and same.n_input_tokens == len(by_text.tokens) and same.notices == ()

    ids = list(by_text.tokens.ids) + [7, 11, 7, 30]  # 4 "generated" ids
    tokens = dataclasses.replace(
        by_text.tokens,
        strings=by_text.tokens.strings + ("a", "b", "a", "c"),
        ids=tuple(ids),
        special=by_text.tokens.special + (False,) * 4,
    )
    tr = adapter.trace_ids(model, ids, tokens, causal=None, notices=("kept",))
    assert tr.notices == ("kept",) and tr.tokens is tokens and tr.tokens.ids == tuple(ids)
    assert_equals_eager(tr, ref)


def test_trace_ids_refuses_what_it_cannot_trace(tiny_hf_folders) -> None:
    model, _ = _pair("gpt2", tiny_hf_folders)
    tokens = engine.trace(model, TEXT).tokens
    with pytest.raises(EmptyInputError):
        model.adapter.trace_ids(model, [], dataclasses.replace(tokens, strings=(), ids=(), special=()), causal=None)
    with pytest.raises(EngineError, match="display tokens"):
        model.adapter.trace_ids(model, list(tokens.ids)[:-1], tokens, causal=None)
    too_many = [5] * (MAX_POS + 1)
    long_tokens = dataclasses.replace(
        tokens, strings=("x",) * len(too_many), ids=tuple(too_many), special=(False,) * len(too_many)
    )
    with pytest.raises(EngineError, match=f"at most {MAX_POS} tokens"):
        model.adapter.trace_ids(model, too_many, long_tokens, causal=None)


def test_a_model_without_the_capturing_attention_is_refused(tiny_hf_folders) -> None:
    import threading

    from transformers import AutoModel

    model, _ = _pair("bert", tiny_hf_folders)
    # on the loaded model's device, as Model.device promises: only the attention differs
    plain = AutoModel.from_pretrained(tiny_hf_folders["bert"], attn_implementation="sdpa").to(model.device).eval()
    other = dataclasses.replace(model, module=plain, lock=threading.Lock())
    with pytest.raises(EngineError, match="ap_capture"):
        engine.trace(other, TEXT)


def test_a_layer_calling_attention_twice_is_refused() -> None:
    from engine.capture.hf import layer_records

    layers = [torch.nn.Sequential(torch.nn.Linear(2, 2)), torch.nn.Sequential(torch.nn.Linear(2, 2))]
    one, two = layers[0][0], layers[1][0]
    assert layer_records([(one, "a"), (two, "b")], layers) == ["a", "b"]
    with pytest.raises(EngineError, match="twice"):
        layer_records([(one, "a"), (one, "b"), (two, "c")], layers)
    with pytest.raises(EngineError, match=r"layers \[1\]"):
        layer_records([(one, "a")], layers)
    with pytest.raises(EngineError, match="outside"):
        layer_records([(torch.nn.ReLU(), "a")], layers)


def test_head_ablation_zeroes_the_family_output_projection(pair) -> None:
    """Switching heads off in the engine equals zeroing their slice of W_O in a separate eager copy."""
    from engine.analysis.ablation import ablate

    kind, model, ref = pair
    r = ablate(model, TEXT, [(0, 1), (1, 3)], top_k=5)
    edited = copy.deepcopy(ref)
    base = getattr(edited, edited.base_model_prefix, edited)
    layers = (
        base.h if family(kind) == "gpt2" else (base.transformer.layer if kind == "distilbert" else base.encoder.layer)
    )
    for _block, layer, head in r.heads_off:
        proj = dict(layers[layer].named_modules())[model.adapter.out_proj]
        with torch.no_grad():
            if isinstance(proj, torch.nn.Linear):  # weight [out, H·d]
                proj.weight[:, head * 8 : (head + 1) * 8] = 0.0
            else:  # GPT-2's Conv1D: weight [H·d, out]
                proj.weight[head * 8 : (head + 1) * 8, :] = 0.0
    ids = torch.tensor([list(r.tokens.ids)])
    with torch.no_grad():
        if family(kind) == "gpt2":
            after = torch.softmax(edited(input_ids=ids).logits[0, -1].double(), -1).numpy()
            np.testing.assert_allclose(r.top_after, after[list(r.top_ids)], atol=1e-6)
            assert r.kl > 1e-6
        else:
            hidden = edited(input_ids=ids).last_hidden_state[0].mean(dim=0)
            np.testing.assert_allclose(
                r.embedding_after, torch.nn.functional.normalize(hidden, dim=0).numpy(), atol=1e-5
            )
            assert r.cosine < 1.0 - 1e-6
