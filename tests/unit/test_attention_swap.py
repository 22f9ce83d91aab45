"""Jain & Wallace's test (``engine.analysis.attention_swap``): the replaced weights are the ones the model used.

Our transformer: the pattern captured after the override equals the permuted pattern exactly, and the head
outputs z equal permuted α · V. MiniLM (``ap_capture``): the weights the override receives equal the trace's
(which is tested against Hugging Face's eager attentions), the self-attention output equals permuted α · V of
the recorded values, and an override that returns the weights unchanged gives SDPA's output.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine
from engine.analysis.attention_swap import (
    attention_override,
    permute_weights,
    row_permutations,
    swap_test,
    uniform_weights,
)
from engine.analysis.attribution import predict
from engine.capture import capture
from engine.capture.hf import recording
from engine.records import EngineError

GPT_TEXT = "lily found a red ball . she gave the red"
MINILM_TEXT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def gpt():
    return engine.load("tiny-gpt-stories")


def test_permutations_keep_each_row_inside_the_mask():
    rng = np.random.default_rng(0)
    index = row_permutations(5, True, rng)
    for i, row in enumerate(index):
        assert sorted(row[: i + 1]) == list(range(i + 1)) and list(row[i + 1 :]) == list(range(i + 1, 5))
    assert sorted(row_permutations(4, False, rng)[2]) == [0, 1, 2, 3]


def test_the_own_models_forward_uses_the_permuted_pattern(gpt):
    module, layer, heads = gpt.module, 1, (0, 2)
    ids = torch.tensor([list(predict(gpt, GPT_TEXT).ids)], device=gpt.device)
    n = ids.shape[1]
    rng = np.random.default_rng(1)
    index = np.stack([row_permutations(n, True, rng) for _ in heads])
    names = [f"blocks.{layer}.attn.hook_pattern", f"blocks.{layer}.attn.hook_v", f"blocks.{layer}.attn.hook_z"]
    with gpt.lock, torch.inference_mode():
        with capture(module, names=names[:1]) as acts:
            module(ids, attn_impl="explicit")
        own = acts[names[0]]
        with attention_override(gpt, module, layer, lambda w: permute_weights(w, heads, index)):
            with capture(module, names=names) as acts:
                module(ids, attn_impl="explicit")
        assert not module.blocks[layer].attn.hook_pattern._forward_hooks  # removed on exit
    expected = own.clone()
    for k, h in enumerate(heads):
        for i in range(n):
            expected[0, h, i] = own[0, h, i, torch.as_tensor(index[k, i], device=own.device)]
    assert torch.equal(acts[names[0]], expected)
    assert not torch.equal(expected, own)  # the permutation really changed the weights
    assert torch.all(expected[0].triu(1) == 0)  # and kept the causal mask
    v, z = acts[names[1]][0], acts[names[2]][0]  # (T, H, dh)
    for h in range(module.cfg.n_heads):
        torch.testing.assert_close(z[:, h], expected[0, h] @ v[:, h], rtol=1e-5, atol=1e-6)


def test_minilm_attention_is_replaced_inside_the_capture_function(minilm):
    module, layer = minilm.module, 2
    ids = torch.tensor([minilm.tokenizer(MINILM_TEXT)["input_ids"]], device=minilm.device)
    n = ids.shape[1]
    self_attention = minilm.adapter.layers(module)[layer].attention.self
    trace = engine.trace(minilm, MINILM_TEXT)
    rng = np.random.default_rng(2)
    heads = tuple(range(trace.n_heads))
    index = np.stack([row_permutations(n, False, rng) for _ in heads])
    received, outs = [], []
    handle = self_attention.register_forward_hook(lambda _m, _i, out: outs.append(out[0].detach()))
    try:
        with minilm.lock, torch.inference_mode():
            plain = minilm.adapter.base(module)(input_ids=ids).last_hidden_state
            with attention_override(minilm, module, layer, lambda w: received.append(w) or w):
                same = minilm.adapter.base(module)(input_ids=ids).last_hidden_state
            with (
                recording() as rec,
                attention_override(minilm, module, layer, lambda w: permute_weights(w, heads, index)),
            ):
                changed = minilm.adapter.base(module)(input_ids=ids).last_hidden_state
    finally:
        handle.remove()
    (weights,) = received  # one call of that layer
    np.testing.assert_allclose(weights[0].cpu().numpy(), trace.pattern(layer), atol=2e-6)
    torch.testing.assert_close(same, plain, rtol=1e-4, atol=1e-5)  # written out = SDPA
    values = torch.as_tensor(rec.layers[layer].value).cpu().numpy()  # [H, n, d] (recorded on the model's device)
    permuted = permute_weights(weights, heads, index)[0].cpu().numpy()
    expected = np.concatenate([permuted[h] @ values[h] for h in heads], axis=-1)  # head-major, as the module
    np.testing.assert_allclose(outs[-1][0].cpu().numpy(), expected, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(changed, plain, atol=1e-3)


def test_uniform_weights_spread_over_the_allowed_keys():
    w = torch.softmax(torch.randn(1, 2, 4, 4), dim=-1)
    out = uniform_weights(w, (1,), causal=True)
    torch.testing.assert_close(out[0, 0], w[0, 0])
    torch.testing.assert_close(out[0, 1, 2], torch.tensor([1 / 3, 1 / 3, 1 / 3, 0.0]))


def test_swap_test_reports_each_run(gpt, minilm):
    pred = predict(gpt, GPT_TEXT)
    result = swap_test(gpt, pred, 2, (1,), "permuted", runs=4, seed=5)
    again = swap_test(gpt, pred, 2, (1,), "permuted", runs=4, seed=5)
    np.testing.assert_array_equal(result.after, again.after)  # the seed fixes the permutations
    assert result.rows == (pred.position,)  # last layer: only the predicting row reaches the output
    assert result.before == pytest.approx(pred.probability, rel=1e-4)
    assert len(result.after) == len(result.output_change) == len(result.attention_change) == 4
    assert np.all(result.attention_change >= 0) and np.all(result.attention_change <= np.log(2) + 1e-9)
    assert np.all((result.output_change >= 0) & (result.output_change <= 1))
    uniform = swap_test(gpt, pred, 0, None, "uniform")
    assert uniform.heads == (0, 1, 2, 3) and len(uniform.rows) == len(pred.tokens) and uniform.attention_change[0] > 0
    emb = predict(minilm, MINILM_TEXT, reference="A dog slept on the rug.")
    adversarial = swap_test(minilm, emb, 5, (0,), "adversarial", steps=8)
    assert len(adversarial.after) == 1 and 0 <= adversarial.output_change[0] <= 2
    with pytest.raises(EngineError):
        swap_test(gpt, pred, 9, None)
    with pytest.raises(EngineError):
        swap_test(gpt, pred, 0, (7,))
