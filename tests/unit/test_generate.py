"""engine.generate: decoders write greedy or sampled tokens, stop at end-of-text, and trace what they wrote.

References are independent of the generation loop: each step's scores come from a fresh full forward
pass of the model without a cache, and the returned patterns are compared with our own tracer on the
same ids (own model) or with the model's eager ``output_attentions`` (Hugging Face models).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine
from engine.decoding import decode_loop, generated_text
from engine.families.transformer.adapter import trace_own
from engine.generation import DecodeSettings, candidate_probs
from engine.records import EngineError
from engine.vocab import EOS_ID
from tests.hf_helpers import tiny_llama

PROMPT_OWN = "lily found a"
PROMPT_HF = "The cat sat on the mat"


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A tiny random Llama with grouped-query attention (2 key/value heads for 4 query heads)."""
    import transformers as tf

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    tok = build_tokenizer()
    cfg = tiny_llama(len(tok), tok.eos_token_id)
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny_llama") / "llama"
    tf.AutoModelForCausalLM.from_config(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    model = engine.load(str(folder))
    ref = tf.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    return model, ref


def _fresh_logits(model, ids: list[int]) -> np.ndarray:
    """The next-token scores of ``ids`` from a full forward pass without a cache (the reference)."""
    with torch.no_grad():
        x = torch.tensor([ids], device=model.device)
        if hasattr(model.module, "cfg"):  # our own Transformer
            return model.module(x, causal=True)[0, -1].float().cpu().numpy()
        return model.module(input_ids=x, use_cache=False).logits[0, -1].float().cpu().numpy()


def _check_greedy(model, trace) -> None:
    ids = list(trace.tokens.ids)
    for t in range(trace.generated_from, len(ids)):
        assert ids[t] == int(np.argmax(_fresh_logits(model, ids[:t]))), f"step {t - trace.generated_from}"


def _check_sampled_inside(model, trace, settings) -> None:
    ids = list(trace.tokens.ids)
    for t in range(trace.generated_from, len(ids)):
        p = candidate_probs(_fresh_logits(model, ids[:t]), settings)
        assert p[ids[t]] > 0, f"step {t - trace.generated_from} picked a token outside top-k/top-p"


# ---- own decoder ------------------------------------------------------------------------------------
def test_own_greedy_is_argmax_and_stops_at_eos(tiny_stories):
    tr = engine.generate(tiny_stories, PROMPT_OWN, DecodeSettings(max_new_tokens=60))
    prompt_ids = list(engine.trace(tiny_stories, PROMPT_OWN).tokens.ids)
    assert list(tr.tokens.ids[: tr.generated_from]) == prompt_ids and tr.generated_from == len(prompt_ids)
    _check_greedy(tiny_stories, tr)
    assert tr.tokens.ids[-1] == EOS_ID and EOS_ID not in tr.tokens.ids[tr.generated_from : -1]
    assert len(tr.tokens) - tr.generated_from < 60
    assert any("greedy" in n and "end-of-text" in n for n in tr.notices)


def test_own_trace_equals_a_trace_of_the_same_ids(tiny_stories):
    tr = engine.generate(tiny_stories, PROMPT_OWN, DecodeSettings(max_new_tokens=8))
    assert len(tr.tokens) == tr.generated_from + 8 and tr.causal and tr.family == "decoder"
    with torch.no_grad():
        ref = trace_own(tiny_stories.module, list(tr.tokens.ids), tr.tokens, model_id="x", causal=True)
    for layer in range(tr.n_layers):
        np.testing.assert_allclose(tr.pattern(layer), ref.pattern(layer), atol=1e-6)


def test_own_sampling_is_seeded_and_stays_in_top_k_top_p(tiny_stories):
    settings = DecodeSettings(max_new_tokens=15, sample=True, temperature=1.5, top_k=5, top_p=0.9, seed=7)
    first = engine.generate(tiny_stories, PROMPT_OWN, settings)
    assert first.tokens.ids == engine.generate(tiny_stories, PROMPT_OWN, settings).tokens.ids
    _check_sampled_inside(tiny_stories, first, settings)
    assert "top-k 5" in " ".join(first.notices)


def test_own_generated_text_joins_words(tiny_stories):
    tr = engine.generate(tiny_stories, PROMPT_OWN, DecodeSettings(max_new_tokens=5))
    prompt, rest = generated_text(tiny_stories, tr)
    assert prompt == PROMPT_OWN and rest == " " + " ".join(tr.tokens.strings[tr.generated_from :])


def test_prompt_filling_the_positions_is_refused(tiny_stories):
    with pytest.raises(EngineError, match="positions"):
        engine.generate(tiny_stories, " ".join(["lily"] * 200), DecodeSettings())


def test_generation_stops_at_the_position_limit(tiny_stories):
    words = " ".join(["lily"] * (tiny_stories.max_positions - 4))
    tr = engine.generate(tiny_stories, words, DecodeSettings(max_new_tokens=20))
    assert len(tr.tokens) <= tiny_stories.max_positions
    assert "limit of 96 positions" in " ".join(tr.notices) or tr.tokens.ids[-1] == EOS_ID


def test_encoders_cannot_generate():
    with pytest.raises(EngineError, match="needs a decoder"):
        engine.generate(engine.load("minilm"), "The cat sat.", DecodeSettings())


def test_decode_loop_keeps_eos_and_stops():
    logits = [np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])]
    calls = iter(logits)
    new, stopped = decode_loop(lambda ids: next(calls), [0], DecodeSettings(), {2}, 10)
    assert new == [1, 2] and stopped


# ---- Hugging Face decoders ------------------------------------------------------------------------
def test_gpt2_greedy_is_argmax_of_fresh_forwards(tiny_gpt2):
    tr = engine.generate(tiny_gpt2, PROMPT_HF, DecodeSettings(max_new_tokens=12))
    assert tr.generated_from == len(engine.trace(tiny_gpt2, PROMPT_HF).tokens)
    _check_greedy(tiny_gpt2, tr)
    prompt, rest = generated_text(tiny_gpt2, tr)
    assert prompt == PROMPT_HF and rest


def test_gpt2_sampling_and_trace_of_the_same_ids(tiny_gpt2):
    settings = DecodeSettings(max_new_tokens=10, sample=True, top_k=20, top_p=0.8, seed=3)
    tr = engine.generate(tiny_gpt2, PROMPT_HF, settings)
    assert tr.tokens.ids == engine.generate(tiny_gpt2, PROMPT_HF, settings).tokens.ids
    _check_sampled_inside(tiny_gpt2, tr, settings)
    with torch.no_grad():
        out = tiny_gpt2.module(
            input_ids=torch.tensor([list(tr.tokens.ids)], device=tiny_gpt2.device),
            output_attentions=True,
            use_cache=False,
        )
    for layer, att in enumerate(out.attentions):
        np.testing.assert_allclose(tr.pattern(layer), att[0].float().cpu().numpy(), atol=1e-5)


def test_llama_greedy_sampled_and_eager_patterns(llama):
    model, ref = llama
    tr = engine.generate(model, PROMPT_HF, DecodeSettings(max_new_tokens=10))
    assert len(tr.tokens) > tr.generated_from
    _check_greedy(model, tr)
    with torch.no_grad():
        out = ref(input_ids=torch.tensor([list(tr.tokens.ids)]), output_attentions=True, use_cache=False)
    for layer, att in enumerate(out.attentions):
        np.testing.assert_allclose(tr.pattern(layer), att[0].float().numpy(), atol=1e-5)
    settings = DecodeSettings(max_new_tokens=10, sample=True, temperature=0.8, top_k=10, seed=1)
    sampled = engine.generate(model, PROMPT_HF, settings)
    assert sampled.tokens.ids == engine.generate(model, PROMPT_HF, settings).tokens.ids
    _check_sampled_inside(model, sampled, settings)


def test_llama_eos_stops(llama, monkeypatch):
    model, _ = llama
    eos = model.tokenizer.eos_token_id
    real, calls = model.module.forward, []

    def eos_third(*args, **kwargs):  # the model's own scores, with <eos> made best from the third step on
        out = real(*args, **kwargs)
        calls.append(1)
        if len(calls) >= 3:
            out.logits[..., eos] = 1e4
        return out

    monkeypatch.setattr(model.module, "forward", eos_third)
    tr = engine.generate(model, PROMPT_HF, DecodeSettings(max_new_tokens=20))
    assert tr.tokens.ids[-1] == eos and len(tr.tokens) - tr.generated_from == 3
    assert "end-of-text" in " ".join(tr.notices)


def test_kv_heads_on_grouped_query_llama(llama):
    model, _ = llama
    tr = engine.trace(model, PROMPT_HF)
    assert tr.kv_heads == 2 and [tr.key_head(h) for h in range(4)] == [0, 0, 1, 1]
    np.testing.assert_array_equal(tr.k(0)[0], tr.k(0)[1])
    assert engine.generate(model, PROMPT_HF, DecodeSettings(max_new_tokens=3)).kv_heads == 2
    assert engine.trace(engine.load("tiny-gpt-stories"), PROMPT_OWN).kv_heads is None


@pytest.fixture(scope="module")
def interface_folders(tmp_path_factory):
    """Every AttentionInterface family as a tiny random model (configs of the parity tests: sliding windows,
    grouped-query heads, Gemma 2's logit cap)."""
    import transformers as tf

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer
    from test_hf_interface_parity import KINDS, _config

    tok = build_tokenizer()
    root = tmp_path_factory.mktemp("tiny_families")
    for kind in KINDS:
        torch.manual_seed(0)
        net = tf.AutoModelForCausalLM.from_config(_config(kind, len(tok), tok.eos_token_id)).eval()
        net.save_pretrained(root / kind)
        tok.save_pretrained(root / kind)
    return root


@pytest.mark.parametrize("kind", ["mistral", "qwen2", "gpt_neox", "phi3", "gemma2", "gemma3_text"])
def test_cached_greedy_equals_fresh_forwards_in_every_family(interface_folders, kind):
    """The key/value cache (sliding windows, logit caps included) picks what a full forward pass picks."""
    model = engine.load(str(interface_folders / kind))
    tr = engine.generate(model, PROMPT_HF, DecodeSettings(max_new_tokens=8))
    assert len(tr.tokens) > tr.generated_from
    _check_greedy(model, tr)
