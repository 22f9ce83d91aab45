"""Activation patching (engine.analysis.patching) against forward passes patched by hand.

The reference runs the corrupted prompt once per head (or per layer and position), batch 1, with a hook written
here that puts the clean run's activation in place: on our own models through the HookPoints ``hook_z``
(``[batch, pos, head, d_head]``: the head's own axis, not the concatenated columns the engine patches) and
``hook_resid_pre`` / ``hook_resid_post``; on Hugging Face decoders (GPT-2, Llama with grouped-query attention) a
copy loaded apart from the engine with eager attention, hooked on the output projection's input columns and on
each layer's ``hidden_states``. Restored share = (d_patched − d_corrupt) / (d_clean − d_corrupt), d the logit
difference answer − wrong at the last position.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine
from engine import EngineError
from engine.analysis.next_token import next_token_logits
from engine.analysis.patching import EXAMPLES, experiment, patch_heads, patch_residual
from engine.families.transformer.adapter import characters
from engine.vocab import BOS_ID, tokenize

pytestmark = pytest.mark.usefixtures("one_torch_thread")

STORY = EXAMPLES["tiny-gpt-stories"]
LETTERS = EXAMPLES["induction-2l-attn-only"]
HF_CLEAN, HF_CORRUPT = "The cat sat on the mat because it was", "The dog sat on the mat because it was"


@pytest.fixture(scope="module")
def induction():
    return engine.load("induction-2l-attn-only")


@pytest.fixture(scope="module")
def hf_decoders(tmp_path_factory) -> dict:
    """A tiny random GPT-2 and Llama (grouped-query attention), saved here: kind -> (engine model, eager HF copy)."""
    import transformers as tf

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer
    from tests.hf_helpers import build, tiny_llama

    root = tmp_path_factory.mktemp("tiny_decoders")
    build("gpt2", root / "gpt2")
    tok = build_tokenizer()
    torch.manual_seed(0)
    tf.AutoModelForCausalLM.from_config(tiny_llama(len(tok), tok.eos_token_id)).save_pretrained(root / "llama")
    tok.save_pretrained(root / "llama")
    out = {}
    for kind in ("gpt2", "llama"):
        ref = tf.AutoModelForCausalLM.from_pretrained(root / kind, attn_implementation="eager").eval()
        out[kind] = (engine.load(str(root / kind)), ref, tf.AutoTokenizer.from_pretrained(root / kind))
    return out


# ---------------------------------------------------------------- the reference


def _diff(logits: torch.Tensor, answer: int, wrong: int) -> float:
    last = logits[0, -1].double()
    return float(last[answer] - last[wrong])


def _reference(run, points, clean: list[int], corrupt: list[int], answer: int, wrong: int, n_index: int, put):
    """``[len(points), n_index]`` restored shares: point ``i`` is ``(module, pre)``, its first input (``pre``) or its
    output is recorded in the clean run, then ``put(x, clean_x, j)`` writes entry ``j`` of it into the corrupted run.
    """

    def hooked(module, pre: bool, fn):
        if pre:
            return module.register_forward_pre_hook(lambda _m, args: (fn(args[0]), *args[1:]))
        return module.register_forward_hook(lambda _m, _a, out: fn(out))

    saved = {}

    def keep(i: int):
        def fn(x):
            saved[i] = x.clone()
            return x

        return fn

    handles = [hooked(m, pre, keep(i)) for i, (m, pre) in enumerate(points)]
    with torch.no_grad():
        d_clean = _diff(run(clean), answer, wrong)
        for handle in handles:
            handle.remove()
        d_corrupt = _diff(run(corrupt), answer, wrong)
        out = np.zeros((len(points), n_index))
        for i, (module, pre) in enumerate(points):
            for j in range(n_index):
                handle = hooked(module, pre, lambda x, i=i, j=j: put(x.clone(), saved[i], j))
                try:
                    out[i, j] = (_diff(run(corrupt), answer, wrong) - d_corrupt) / (d_clean - d_corrupt)
                finally:
                    handle.remove()
    return out


def _put_head(n_heads: int):
    """Head ``j``'s columns of a concatenated ``z`` ``[1, T, H · d_head]``."""

    def put(x, clean, j):
        dh = x.shape[-1] // n_heads
        x[..., j * dh : (j + 1) * dh] = clean[..., j * dh : (j + 1) * dh]
        return x

    return put


def _put_position(x, clean, j):
    x[:, j] = clean[:, j]
    return x


def _own_case(model, ex):
    split = characters if model.spec.id == "induction-2l-attn-only" else tokenize
    ids = [[BOS_ID, *model.tokenizer.encode(split(text))] for text in (ex.clean, ex.corrupt)]
    answer, wrong = (model.tokenizer.id(split(word)[0]) for word in (ex.answer, ex.wrong))
    return (lambda x: model.module(torch.tensor([x], device=model.device))), ids, answer, wrong


def _hf_case(ref, tok, clean: str, corrupt: str, answer: str, wrong: str):
    ids = [tok(text)["input_ids"] for text in (clean, corrupt)]
    a, w = (tok.convert_tokens_to_ids("Ġ" + word) for word in (answer, wrong))
    return (lambda x: ref(input_ids=torch.tensor([x])).logits), ids, a, w


# ---------------------------------------------------------------- heads and residual against the reference


@pytest.mark.parametrize("which", ["stories", "induction"])
def test_own_heads_and_residual_equal_hand_patching(which, tiny_stories, induction):
    model, ex = (tiny_stories, STORY) if which == "stories" else (induction, LETTERS)
    run, (clean, corrupt), a, w = _own_case(model, ex)
    blocks = model.module.blocks
    cfg = model.module.cfg

    def put_z(x, clean_z, h):  # hook_z: [1, T, H, d_head]
        x[:, :, h] = clean_z[:, :, h]
        return x

    heads = _reference(run, [(b.attn.hook_z, False) for b in blocks], clean, corrupt, a, w, cfg.n_heads, put_z)
    got = patch_heads(model, ex.clean, ex.corrupt, ex.answer, ex.wrong)
    assert got.shape == (cfg.n_layers, cfg.n_heads)
    np.testing.assert_allclose(got, heads, atol=1e-4)

    points = [(b.hook_resid_pre, False) for b in blocks] + [(blocks[-1].hook_resid_post, False)]
    resid = _reference(run, points, clean, corrupt, a, w, len(clean), _put_position)
    got = patch_residual(model, ex.clean, ex.corrupt, ex.answer, ex.wrong)
    assert got.shape == (cfg.n_layers + 1, len(clean))
    np.testing.assert_allclose(got, resid, atol=1e-4)
    assert got[-1, -1] == pytest.approx(1.0, abs=1e-5)
    same = np.array(clean) == np.array(corrupt)  # positions where the prompts agree restore nothing at layer 0
    assert same.sum() >= len(clean) - 2 and np.all(np.abs(got[0, same]) < 1e-6)
    assert np.all(np.abs(got[-1, :-1]) < 1e-6)  # after the last layer only the last position makes the logits


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_hf_heads_and_residual_equal_hand_patching(kind, hf_decoders):
    model, ref, tok = hf_decoders[kind]
    run, (clean, corrupt), a, w = _hf_case(ref, tok, HF_CLEAN, HF_CORRUPT, "cat", "dog")
    assert experiment(model, HF_CLEAN, HF_CORRUPT, "cat", "dog").clean.ids == tuple(clean)
    layers = ref.transformer.h if kind == "gpt2" else ref.model.layers
    proj = [layer.attn.c_proj if kind == "gpt2" else layer.self_attn.o_proj for layer in layers]
    n_heads = ref.config.num_attention_heads

    heads = _reference(run, [(p, True) for p in proj], clean, corrupt, a, w, n_heads, _put_head(n_heads))
    got = patch_heads(model, HF_CLEAN, HF_CORRUPT, "cat", "dog")
    assert got.shape == (len(layers), n_heads) and np.abs(got).max() > 0.05  # some head matters
    np.testing.assert_allclose(got, heads, atol=1e-4)

    points = [(layer, True) for layer in layers] + [(layers[-1], False)]
    resid = _reference(run, points, clean, corrupt, a, w, len(clean), _put_position)
    got = patch_residual(model, HF_CLEAN, HF_CORRUPT, "cat", "dog")
    np.testing.assert_allclose(got, resid, atol=1e-4)
    assert got[-1, -1] == pytest.approx(1.0, abs=1e-5)
    assert np.all(np.abs(np.delete(got[0], 1)) < 1e-6)  # only the second token differs


def test_no_hooks_left(tiny_stories):
    patch_heads(tiny_stories, STORY.clean, STORY.corrupt, STORY.answer, STORY.wrong)
    patch_residual(tiny_stories, STORY.clean, STORY.corrupt, STORY.answer, STORY.wrong)
    for module in tiny_stories.module.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks


# ---------------------------------------------------------------- the built-in examples


@pytest.mark.parametrize("model_id", sorted(EXAMPLES))
def test_example_heads_carry_most_of_the_answer(model_id, tiny_stories, induction):
    model = {"tiny-gpt-stories": tiny_stories, "induction-2l-attn-only": induction}[model_id]
    ex = EXAMPLES[model_id]
    got = patch_heads(model, ex.clean, ex.corrupt, ex.answer, ex.wrong)
    order = [divmod(int(i), got.shape[1]) for i in np.argsort(-got, axis=None)]
    assert order[: len(ex.heads)] == list(ex.heads)  # the heads the notice names are the largest, in order
    assert got[ex.heads[0]] > 0.5 and all(got[h] > 0.25 for h in ex.heads)
    rest = np.delete(got.ravel(), [layer * got.shape[1] + head for layer, head in ex.heads])
    assert np.all(np.abs(rest) < 0.1)
    for text, word, other in ((ex.clean, ex.answer, ex.wrong), (ex.corrupt, ex.wrong, ex.answer)):
        logits = next_token_logits(model, text)
        top = logits.top_tokens[0]
        assert top == word.lower() and other.lower() != top  # each prompt's own next token is the top one


# ---------------------------------------------------------------- errors


def test_errors(tiny_stories, hf_decoders):
    ex = STORY
    with pytest.raises(EngineError, match="same number of tokens"):
        patch_heads(tiny_stories, ex.clean, ex.corrupt + " the", ex.answer, ex.wrong)
    with pytest.raises(EngineError, match="are the same tokens"):
        patch_residual(tiny_stories, ex.clean, ex.clean.upper(), ex.answer, ex.wrong)
    with pytest.raises(EngineError, match="must be one token"):
        patch_heads(tiny_stories, ex.clean, ex.corrupt, "ruby lily", ex.wrong)
    with pytest.raises(EngineError, match="not in tiny-gpt-stories's vocabulary"):
        patch_heads(tiny_stories, ex.clean, ex.corrupt, ex.answer, "zebra")
    with pytest.raises(EngineError, match="same token"):
        patch_heads(tiny_stories, ex.clean, ex.corrupt, "Ruby", "ruby")
    gpt2 = hf_decoders["gpt2"][0]
    with pytest.raises(EngineError, match="must be one token"):
        patch_heads(gpt2, HF_CLEAN, HF_CORRUPT, "cat", "Xylophonequartz")
    with pytest.raises(EngineError, match="needs a decoder"):
        patch_heads(engine.load("tiny-bert-stories"), ex.clean, ex.corrupt, ex.answer, ex.wrong)
