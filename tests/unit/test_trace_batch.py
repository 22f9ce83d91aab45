"""Several texts in one forward pass (``engine.trace_many``): what a class pressing Enter at once costs less.

Every family marked ``batches`` (BERT-likes, DistilBERT, GPT-2 and its scale switches) is loaded from a tiny
random folder; texts of different lengths are traced together and each trace is compared with the trace of
its text alone (Q, K, V, patterns, positions, value norms) and with a separate eager copy's
``output_attentions``. A text that cannot be traced fails only itself; a mask the model does not make by
itself, or a family not checked with padding, goes one text at a time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.batching import length_groups
from engine.families.hf_text.adapter import PASS_TOKENS
from engine.records import EmptyInputError, EngineError
from tests.hf_helpers import KINDS, assert_parity, engine_and_eager, reference_attentions

TEXTS = [
    "The cat sat on the mat.",
    "A much longer sentence, so that the others are padded: the teacher explains attention to the class today.",
    "Dogs bark.",
]
ATOL = 2e-5


def _pair(kind: str, tiny_hf_folders: dict[str, Path]):
    return engine_and_eager(kind, tiny_hf_folders)


def _forward_calls(model) -> tuple[list[int], object]:
    """Count the base model's forward calls (and the batch size of each)."""
    calls: list[int] = []
    base = model.adapter.base(model.module)
    handle = base.register_forward_pre_hook(lambda _m, _a, kw: calls.append(kw["input_ids"].shape[0]), with_kwargs=True)
    return calls, handle


def assert_same_trace(got, alone) -> None:
    assert got.tokens == alone.tokens and got.notices == alone.notices and got.causal == alone.causal
    assert got.truncated == alone.truncated and got.n_input_tokens == alone.n_input_tokens
    for name in ("queries", "keys", "values", "value_out_norms"):
        for a, b in zip(getattr(got, name), getattr(alone, name), strict=True):
            assert a.shape == b.shape, name
            np.testing.assert_allclose(a, b, atol=ATOL, rtol=0, err_msg=name)
    for layer in range(alone.n_layers):
        np.testing.assert_allclose(got.pattern(layer), alone.pattern(layer), atol=ATOL, rtol=0)
    if alone.pos_encoding is None:
        assert got.pos_encoding is None
    else:
        np.testing.assert_allclose(got.pos_encoding, alone.pos_encoding, atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_texts_traced_together_equal_each_traced_alone_and_eager(kind, tiny_hf_folders) -> None:
    model, ref = _pair(kind, tiny_hf_folders)
    assert model.adapter.batches
    calls, handle = _forward_calls(model)
    try:
        together = engine.trace_many(model, TEXTS, max_tokens=64)
    finally:
        handle.remove()
    lengths = [len(tr.tokens) for tr in together]
    assert len(set(lengths)) >= 2  # padding really happened
    # one pass per run of similar lengths, as planned; fewer passes than texts
    assert calls == [len(group) for group in length_groups(lengths, PASS_TOKENS)] and len(calls) < len(TEXTS)
    for text, got in zip(TEXTS, together, strict=True):
        alone = engine.trace(model, text, max_tokens=64)
        assert_same_trace(got, alone)
        assert_parity(got, reference_attentions(ref, got.tokens.ids))
        assert got.pattern(0).sum(axis=-1) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_a_bad_text_fails_only_itself(kind, tiny_hf_folders) -> None:
    model, _ = _pair(kind, tiny_hf_folders)
    out = engine.trace_many(model, [TEXTS[0], "   ", TEXTS[2]], max_tokens=[64, 64, 3])
    assert isinstance(out[1], EmptyInputError)
    assert_same_trace(out[0], engine.trace(model, TEXTS[0], max_tokens=64))
    cut = engine.trace(model, TEXTS[2], max_tokens=3)
    assert cut.truncated or len(cut.tokens) <= 3
    assert_same_trace(out[2], cut)  # its own token limit, its own notices


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_a_mask_against_the_model_default_goes_one_text_at_a_time(kind, tiny_hf_folders) -> None:
    model, ref = _pair(kind, tiny_hf_folders)
    flipped = not model.default_causal
    calls, handle = _forward_calls(model)
    try:
        out = engine.trace_many(model, TEXTS, causal=flipped, max_tokens=64)
    finally:
        handle.remove()
    assert calls == [1, 1, 1]
    for text, got in zip(TEXTS, out, strict=True):
        assert got.causal is flipped
        assert_same_trace(got, engine.trace(model, text, causal=flipped, max_tokens=64))


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_texts_of_very_different_lengths_go_in_passes_of_similar_lengths(kind, tiny_hf_folders) -> None:
    """Two short texts and two long ones: two passes (the short ones not padded to the long), each text still
    equal to its trace alone."""
    model, ref = _pair(kind, tiny_hf_folders)
    short, long = "Dogs bark.", " ".join(["the teacher explains attention to the class"] * 6)
    texts = [long, short, long + " again", short + " Cats too."]
    calls, handle = _forward_calls(model)
    try:
        out = engine.trace_many(model, texts, max_tokens=256)
    finally:
        handle.remove()
    assert calls == [2, 2]
    for text, got in zip(texts, out, strict=True):
        assert_same_trace(got, engine.trace(model, text, max_tokens=256))
        assert_parity(got, reference_attentions(ref, got.tokens.ids))


def test_limits_must_match_the_texts(tiny_hf_folders) -> None:
    model, _ = _pair("bert", tiny_hf_folders)
    with pytest.raises(EngineError):
        engine.trace_many(model, TEXTS, max_tokens=[64])


def test_minilm_batch_equals_single_traces() -> None:
    """The offline default's real weights: the padded pass gives each sentence its own numbers."""
    model = engine.load("minilm")
    texts = [*TEXTS, "Attention lets every token look at every other token in the sentence."]
    for got, text in zip(engine.trace_many(model, texts), texts, strict=True):
        assert_same_trace(got, engine.trace(model, text))


def test_a_model_that_does_not_batch_traces_each_text(tiny_hf_folders) -> None:
    model, _ = _pair("bert", tiny_hf_folders)
    import dataclasses

    single = dataclasses.replace(model, adapter=dataclasses.replace(model.adapter, batches=False), lock=model.lock)
    calls, handle = _forward_calls(single)
    try:
        out = engine.trace_many(single, TEXTS[:2], max_tokens=64)
    finally:
        handle.remove()
    assert calls == [1, 1]
    assert_same_trace(out[1], engine.trace(model, TEXTS[1], max_tokens=64))
    assert torch.is_inference_mode_enabled() is False
