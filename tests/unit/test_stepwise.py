"""engine.analysis.stepwise against a hand-worked example, torch SDPA, the traces' own lazy math and
the own transformer's captured hooks (ALiBi included)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

import engine
from engine.analysis.stepwise import (
    StepInputError,
    attention_steps,
    calculator_example,
    causal_mask,
    query_steps,
    softmax,
    to_matrix,
)
from engine.capture import capture
from engine.families.transformer.adapter import trace_own
from engine.families.transformer.network import Transformer, TransformerConfig
from engine.records import Tokens

torch.set_num_threads(1)
INF = np.inf

# ---------------------------------------------------------------- a 3-token example by hand

Q = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
K = [[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]]
V = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]


def test_three_tokens_by_hand_no_mask() -> None:
    s = attention_steps(Q, K, V, scale=0.5)
    # raw[i, j] = q_i · k_j
    #   q0 = (1, 0): (1·2 + 0·0, 1·0 + 0·2, 0) = (2, 0, 0)
    #   q1 = (0, 1): (0, 0·0 + 1·2, 0)          = (0, 2, 0)
    #   q2 = (1, 1): (1·2, 1·2, 0)              = (2, 2, 0)
    np.testing.assert_array_equal(s.raw, [[2, 0, 0], [0, 2, 0], [2, 2, 0]])
    # scaled = raw · 0.5
    np.testing.assert_array_equal(s.scaled, [[1, 0, 0], [0, 1, 0], [1, 1, 0]])
    np.testing.assert_array_equal(s.mask, np.zeros((3, 3)))  # no mask: nothing blocked
    np.testing.assert_array_equal(s.masked, s.scaled)
    assert s.bias is None
    # softmax row 0 = (e, 1, 1) / (e + 2) = (2.7182818 / 4.7182818, 1 / 4.7182818, …)
    #               = (0.5761169, 0.2119416, 0.2119416); row 1 is the same, rotated
    # softmax row 2 = (e, e, 1) / (2e + 1) = (2.7182818 / 6.4365637, …, 1 / 6.4365637)
    #               = (0.4223188, 0.4223188, 0.1553624)
    weights = [[0.5761169, 0.2119416, 0.2119416], [0.2119416, 0.5761169, 0.2119416], [0.4223188, 0.4223188, 0.1553624]]
    np.testing.assert_allclose(s.weights, weights, atol=1e-7)
    # z0 = 0.5761169·(1, 0) + 0.2119416·(0, 1) + 0.2119416·(1, 1) = (0.7880585, 0.4238832)
    # z2 = 0.4223188·(1, 0) + 0.4223188·(0, 1) + 0.1553624·(1, 1) = (0.5776812, 0.5776812)
    np.testing.assert_allclose(s.z[0], [0.7880585, 0.4238832], atol=1e-7)
    np.testing.assert_allclose(s.z[1], [0.4238832, 0.7880585], atol=1e-7)
    np.testing.assert_allclose(s.z[2], [0.5776812, 0.5776812], atol=1e-7)


def test_three_tokens_by_hand_causal() -> None:
    s = attention_steps(Q, K, V, scale=0.5, causal=True)
    # mask: query i sees keys j ≤ i
    np.testing.assert_array_equal(s.mask, [[0, -INF, -INF], [0, 0, -INF], [0, 0, 0]])
    np.testing.assert_array_equal(s.masked, [[1, -INF, -INF], [0, 1, -INF], [1, 1, 0]])
    np.testing.assert_array_equal(s.blocked, np.triu(np.ones((3, 3), bool), 1))
    # row 0: only itself → (1, 0, 0); row 1 = softmax(0, 1) = (1, e) / (1 + e) = (0.2689414, 0.7310586, 0)
    # row 2: nothing blocked, as without the mask
    weights = [[1.0, 0.0, 0.0], [0.2689414, 0.7310586, 0.0], [0.4223188, 0.4223188, 0.1553624]]
    np.testing.assert_allclose(s.weights, weights, atol=1e-7)
    assert (s.weights[s.blocked] == 0.0).all()  # exactly zero, not tiny
    # z1 = 0.2689414·(1, 0) + 0.7310586·(0, 1); z0 = v0
    np.testing.assert_allclose(s.z, [[1.0, 0.0], [0.2689414, 0.7310586], [0.5776812, 0.5776812]], atol=1e-7)
    # the softmax numerators: exp(masked − row max), 0 where blocked
    np.testing.assert_allclose(s.exp[1], [math.exp(-1), 1.0, 0.0])


def test_bias_is_added_before_the_softmax() -> None:
    bias = [[0.0, -1.0, -2.0]]  # ALiBi-like −m·|i−j| for query 0, m = 1
    s = attention_steps([1.0, 0.0], K, V, scale=0.5, bias=bias, query_positions=[0])
    # scaled = (1, 0, 0); + bias = (1, −1, −2); softmax = (e, e^-1, e^-2) / (e + e^-1 + e^-2)
    total = math.e + math.exp(-1) + math.exp(-2)
    np.testing.assert_allclose(s.masked, [[1.0, -1.0, -2.0]])
    np.testing.assert_allclose(s.weights, [[math.e / total, math.exp(-1) / total, math.exp(-2) / total]])
    np.testing.assert_array_equal(s.bias, bias)


def test_a_sink_logit_takes_its_share_of_the_total() -> None:
    s = attention_steps([1.0, 0.0], K, V, scale=0.5, sink=0.0, query_positions=[0])
    # scores (1, 0, 0) and the sink's 0: the total is e + 1 + 1 + 1; the weights are (e, 1, 1) / (e + 3)
    total = math.e + 3
    np.testing.assert_allclose(s.weights, [[math.e / total, 1 / total, 1 / total]], atol=1e-12)
    np.testing.assert_allclose(s.sink_weight, [1 / total], atol=1e-12)
    np.testing.assert_allclose(s.exp, [[math.e / math.e, 1 / math.e, 1 / math.e]])  # the max is the scores' (1 > 0)
    np.testing.assert_allclose(s.z, [[(math.e + 1) / total, 2 / total]], atol=1e-12)  # V's rows with those weights
    big = attention_steps([1.0, 0.0], K, V, scale=0.5, sink=5.0, query_positions=[0])  # the max is the sink's
    np.testing.assert_allclose(big.weights, np.array([[math.e, 1, 1]]) / (math.e + 2 + math.exp(5)), atol=1e-12)
    np.testing.assert_array_equal(attention_steps(Q, K, V, scale=0.5).sink_weight, [0, 0, 0])


def test_fully_masked_row_is_minus_infinity_and_weight_zero() -> None:
    mask = [[-INF, -INF, -INF], [0.0, -INF, 0.0], [0.0, 0.0, 0.0]]
    s = attention_steps(Q, K, V, scale=0.5, mask=mask)
    assert np.isneginf(s.masked[0]).all()
    np.testing.assert_array_equal(s.weights[0], [0.0, 0.0, 0.0])  # no NaN: as in torch's SDPA
    np.testing.assert_array_equal(s.z[0], [0.0, 0.0])
    assert np.isneginf(s.masked[1, 1]) and s.weights[1, 1] == 0.0
    np.testing.assert_allclose(s.weights.sum(axis=1), [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(softmax([[-INF, -INF]]), [[0.0, 0.0]])


def test_causal_mask_with_query_offset() -> None:
    # one query at position 2 of 4 keys sees keys 0, 1, 2
    np.testing.assert_array_equal(causal_mask(1, 4, np.array([2])), [[0, 0, 0, -INF]])
    # two queries, default: the last two positions
    np.testing.assert_array_equal(causal_mask(2, 3), [[0, 0, -INF], [0, 0, 0]])


# ---------------------------------------------------------------- against torch SDPA


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.3, 2.0])
def test_matches_torch_sdpa(causal: bool, scale: float | None) -> None:
    gen = torch.Generator().manual_seed(7)
    n, d, dv = 6, 5, 3
    q, k, v = (
        torch.randn(n, d, generator=gen) * 2,
        torch.randn(n, d, generator=gen) * 2,
        torch.randn(n, dv, generator=gen),
    )
    q, k, v = q.double(), k.double(), v.double()
    ref = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal, scale=scale)[0]
    eye = torch.eye(n, dtype=torch.float64)
    ref_w = F.scaled_dot_product_attention(q[None], k[None], eye[None], is_causal=causal, scale=scale)[0]
    s = attention_steps(
        q.numpy(), k.numpy(), v.numpy(), scale=1 / math.sqrt(d) if scale is None else scale, causal=causal
    )
    np.testing.assert_allclose(s.z, ref.numpy(), atol=1e-10)
    np.testing.assert_allclose(s.weights, ref_w.numpy(), atol=1e-10)


# ---------------------------------------------------------------- against real traces


@pytest.fixture(scope="module")
def traces() -> dict:
    text = "Lily saw a big dog. The dog ran to Lily and she laughed."
    minilm, stories = engine.load("minilm"), engine.load("tiny-gpt-stories")
    return {
        "minilm": engine.trace(minilm, text),
        "minilm-causal": engine.trace(minilm, text, causal=True),
        "tiny-gpt-stories": engine.trace(stories, text),
    }


@pytest.mark.parametrize("name", ["minilm", "minilm-causal", "tiny-gpt-stories"])
def test_query_steps_equal_the_trace(traces: dict, name: str) -> None:
    tr = traces[name]
    assert tr.causal is (name != "minilm")
    n = tr.n_queries
    for layer, head in [(0, 0), (1, tr.n_heads - 1), (tr.n_layers - 1, 2)]:
        scores = {stage: tr.scores(layer, head, stage) for stage in ("raw", "scaled", "masked")}
        pattern, z = tr.pattern(layer, head), tr.z(layer, head)
        for i in (0, 3, n - 1):
            s = query_steps(tr, layer, head, i)
            assert s.q.shape == (1, tr.d_head) and s.k.shape == (n, tr.d_head)
            np.testing.assert_array_equal(s.q[0], tr.q(layer)[head, i])
            np.testing.assert_array_equal(s.v, tr.v(layer)[head])
            assert s.scale == pytest.approx(tr.scales[layer])
            np.testing.assert_allclose(s.raw[0], scores["raw"][i], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(s.scaled[0], scores["scaled"][i], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(s.masked[0], scores["masked"][i], rtol=1e-5, atol=1e-5)  # same −∞
            np.testing.assert_array_equal(np.isneginf(s.masked[0]), np.isneginf(scores["masked"][i]))
            np.testing.assert_allclose(s.weights[0], pattern[i], atol=1e-6)
            np.testing.assert_allclose(s.z[0], z[i], atol=1e-5)
            if tr.causal:
                assert np.isneginf(s.mask[0, i + 1 :]).all() and (s.weights[0, i + 1 :] == 0).all()
                assert (s.mask[0, : i + 1] == 0).all()
            else:
                assert not s.blocked.any()


def test_query_steps_check_their_indices(traces: dict) -> None:
    tr = traces["tiny-gpt-stories"]
    with pytest.raises(IndexError):
        query_steps(tr, 0, 0, tr.n_queries)
    with pytest.raises(IndexError):
        query_steps(tr, 0, tr.n_heads, 0)
    with pytest.raises(IndexError):
        query_steps(tr, tr.n_layers, 0, 0)


def _alibi_model(causal: bool) -> Transformer:
    torch.manual_seed(3)
    cfg = TransformerConfig(
        vocab_size=19, d_model=16, n_layers=2, n_heads=2, d_mlp=32, max_len=10, pos_encoding="alibi", causal=causal
    )
    model = Transformer(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    return model


@pytest.mark.parametrize("causal", [False, True])
def test_own_alibi_model_against_its_hooks(causal: bool) -> None:
    """Steps read from the trace equal what the model itself computed (its hooks), bias included."""
    model = _alibi_model(causal)
    ids = [3, 1, 4, 1, 5, 9]
    n = len(ids)
    tokens = Tokens(tuple(f"w{i}" for i in ids), tuple(ids), (False,) * n)
    with torch.no_grad(), capture(model) as acts:
        model(torch.tensor([ids]), causal=causal)
    tr = trace_own(model, ids, tokens, model_id="alibi-test", causal=causal)
    assert tr.alibi_slopes is not None
    slopes = [2.0**-4, 2.0**-8]  # ALiBi for 2 heads: start 2^(-8/2), ratio 2^(-8/2)
    for layer in range(2):
        a = f"blocks.{layer}.attn."
        for head in range(2):
            for i in range(n):
                s = query_steps(tr, layer, head, i)
                # the bias row from its formula: −m_h · |i − j|
                np.testing.assert_allclose(s.bias[0], [-slopes[head] * abs(i - j) for j in range(n)], rtol=1e-6)
                np.testing.assert_allclose(s.raw[0], acts[a + "hook_scores_raw"][0, head, i], atol=1e-5)
                np.testing.assert_allclose(s.masked[0], acts[a + "hook_attn_scores"][0, head, i], atol=1e-5)
                np.testing.assert_allclose(s.weights[0], acts[a + "hook_pattern"][0, head, i], atol=1e-6)
                np.testing.assert_allclose(s.z[0], acts[a + "hook_z"][0, i, head], atol=1e-5)
                if causal:
                    assert np.isneginf(s.masked[0, i + 1 :]).all() and (s.weights[0, i + 1 :] == 0).all()


# ---------------------------------------------------------------- calculator input


def test_calculator_example_sizes_and_defaults() -> None:
    for n in (3, 4, 5):
        for d in (2, 3, 4):
            tokens, q, k, v = calculator_example(n, d)
            assert len(tokens) == n and q.shape == k.shape == v.shape == (n, d)
            w = attention_steps(q, k, v, 1 / math.sqrt(d)).weights
            assert w.max() > 0.5, "the defaults give at least one clear preference"
    with pytest.raises(ValueError):
        calculator_example(6, 2)


def test_to_matrix_accepts_numbers_and_number_strings() -> None:
    frame = pd.DataFrame([[1, "2.5"], [" −3 ", 0.25]])
    np.testing.assert_array_equal(to_matrix(frame, "Q", (2, 2)), [[1.0, 2.5], [-3.0, 0.25]])


@pytest.mark.parametrize(
    ("data", "shape", "needle"),
    [
        (pd.DataFrame([[1.0, np.nan], [0.0, 1.0]]), (2, 2), "row 1, column 2 is empty"),
        (pd.DataFrame([[1.0, None], [0.0, 1.0]]), (2, 2), "empty"),
        ([["abc", 1.0], [0.0, 1.0]], (2, 2), "not a number"),
        ([["", 1.0], [0.0, 1.0]], (2, 2), "empty"),
        ([[1.0, 1.0], [0.0, np.inf]], (2, 2), "infinite"),
        ([[1.0, 1.0], [0.0, "-inf"]], (2, 2), "infinite"),
        ([[1.0, 1.0], [0.0, 1e9]], (2, 2), "between"),
        ([[1.0, 1.0], [0.0]], (2, 2), "different lengths"),
        ([[1.0, 1.0, 2.0], [0.0, 1.0, 2.0]], (2, 2), "2 rows × 2 columns"),
        ([[True, 1.0], [0.0, 1.0]], (2, 2), "not a number"),
    ],
)
def test_to_matrix_rejects_bad_cells(data, shape, needle: str) -> None:
    with pytest.raises(StepInputError) as err:
        to_matrix(data, "K", shape)
    assert needle in str(err.value) and str(err.value).startswith("K")
    assert isinstance(err.value, engine.EngineError)
