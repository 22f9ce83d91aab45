"""Positional encodings against the formulas of their papers, computed independently here."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.families.transformer.positional import alibi_bias, alibi_slopes, apply_rope, rope_cos_sin, sinusoidal
from engine.records import Tokens
from engine.traces.attention import AttentionTrace

# ---- sinusoidal ---------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [8, 7])
def test_sinusoidal_values_match_the_formula(d_model: int) -> None:
    pe = sinusoidal(50, d_model)
    assert pe.shape == (50, d_model) and pe.dtype == torch.float32
    for pos in (0, 1, 2, 13, 49):
        for i in range((d_model + 1) // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            if 2 * i + 1 < d_model:
                assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_hand_values() -> None:
    pe = sinusoidal(3, 4)
    # d=4: frequencies 1 and 1/100
    expected = [
        [0.0, 1.0, 0.0, 1.0],
        [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
        [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)],
    ]
    assert torch.allclose(pe, torch.tensor(expected), atol=1e-7)


@pytest.mark.parametrize("d_model", [8, 7])
def test_sinusoidal_shift_is_a_fixed_rotation(d_model: int) -> None:
    """PE(pos + k) = M_k · PE(pos), M_k block-diagonal with one 2×2 rotation per frequency.

    [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a], with a = pos·ω_i and
    b = k·ω_i. For odd d_model the last column (a sine without its cosine) is left out.
    """
    k, n_pairs = 5, d_model // 2
    m = np.zeros((2 * n_pairs, 2 * n_pairs))
    for i in range(n_pairs):
        w = 1.0 / 10000 ** (2 * i / d_model)
        c, s = math.cos(k * w), math.sin(k * w)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    pe = sinusoidal(60, d_model).double().numpy()[:, : 2 * n_pairs]
    for pos in (0, 3, 11, 40, 54):
        np.testing.assert_allclose(m @ pe[pos], pe[pos + k], atol=1e-5)


# ---- RoPE ---------------------------------------------------------------------------------------


def test_rope_cos_sin_match_the_formula() -> None:
    cos, sin = rope_cos_sin(20, 8, base=10000.0)
    assert cos.shape == sin.shape == (20, 4)
    for pos in (0, 1, 7, 19):
        for i in range(4):
            theta = 10000 ** (-2 * i / 8)
            assert cos[pos, i].item() == pytest.approx(math.cos(pos * theta), abs=1e-6)
            assert sin[pos, i].item() == pytest.approx(math.sin(pos * theta), abs=1e-6)


def test_rope_rotates_interleaved_pairs() -> None:
    """d_head=4, position 1: pair (0, 1) turns by 1 radian, pair (2, 3) by 1/100."""
    cos, sin = rope_cos_sin(2, 4)
    x = torch.tensor([1.0, 0.0, 0.0, 1.0])
    out = apply_rope(x, cos[1], sin[1])
    expected = [math.cos(1), math.sin(1), -math.sin(0.01), math.cos(0.01)]
    assert torch.allclose(out, torch.tensor(expected), atol=1e-7)
    assert torch.equal(apply_rope(x, cos[0], sin[0]), x)  # position 0 is the identity


def test_rope_scores_depend_only_on_relative_position() -> None:
    torch.manual_seed(0)
    d_head, offset = 8, 3
    cos, sin = rope_cos_sin(64, d_head)
    q, k = torch.randn(d_head), torch.randn(d_head)
    dots = [
        torch.dot(apply_rope(q, cos[p], sin[p]), apply_rope(k, cos[p + offset], sin[p + offset])).item()
        for p in (0, 5, 17, 40, 60)
    ]
    assert np.allclose(dots, dots[0], atol=1e-5)
    # and it is not trivially constant: another offset gives another score
    other = torch.dot(apply_rope(q, cos[0], sin[0]), apply_rope(k, cos[1], sin[1])).item()
    assert abs(other - dots[0]) > 1e-3
    # rotations keep lengths
    rotated = apply_rope(q, cos[9], sin[9])
    assert torch.linalg.norm(rotated).item() == pytest.approx(torch.linalg.norm(q).item())


def test_rope_rejects_odd_head_width() -> None:
    with pytest.raises(ValueError, match="even"):
        rope_cos_sin(4, 5)


# ---- ALiBi --------------------------------------------------------------------------------------


def test_alibi_slopes_8_heads() -> None:
    expected = [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]
    assert alibi_slopes(8).tolist() == pytest.approx(expected, rel=1e-7)


def test_alibi_slopes_4_and_16_heads() -> None:
    # start 2^(-8/n), ratio 2^(-8/n)
    assert alibi_slopes(4).tolist() == pytest.approx([1 / 4, 1 / 16, 1 / 64, 1 / 256], rel=1e-7)
    assert alibi_slopes(16).tolist() == pytest.approx([2 ** (-0.5 * (h + 1)) for h in range(16)], rel=1e-6)


def test_alibi_slopes_12_heads_follow_the_papers_interpolation() -> None:
    # the 8 slopes of 8 heads, then every other slope of the 16-head list
    # (2^-0.5, 2^-1, 2^-1.5, ... ; [0::2] -> 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5, ...), the first 12 - 8 = 4
    expected = [
        0.5,
        0.25,
        0.125,
        0.0625,
        0.03125,
        0.015625,
        0.0078125,
        0.00390625,
        0.7071067811865476,
        0.3535533905932738,
        0.1767766952966369,
        0.08838834764831845,
    ]
    assert alibi_slopes(12).tolist() == pytest.approx(expected, rel=1e-6)


def test_alibi_bias_hand_values() -> None:
    bias = alibi_bias(torch.tensor([0.5, 0.25]), 3, 3)
    expected_head0 = [[0.0, -0.5, -1.0], [-0.5, 0.0, -0.5], [-1.0, -0.5, 0.0]]
    assert bias.shape == (2, 3, 3)
    assert torch.equal(bias[0], torch.tensor(expected_head0))
    assert torch.equal(bias[1], torch.tensor(expected_head0) / 2)


@pytest.mark.parametrize(("n_q", "n_k"), [(5, 5), (2, 6), (1, 4)])
def test_alibi_bias_equals_attention_trace_bias(n_q: int, n_k: int) -> None:
    slopes = alibi_slopes(6)
    rng = np.random.default_rng(0)

    def toks(n: int) -> Tokens:
        return Tokens(tuple(f"t{i}" for i in range(n)), tuple(range(n)), (False,) * n)

    trace = AttentionTrace(
        model_id="test",
        family="decoder",
        tokens=toks(n_q),
        key_tokens=toks(n_k),
        queries=(rng.normal(size=(6, n_q, 4)).astype(np.float32),),
        keys=(rng.normal(size=(6, n_k, 4)).astype(np.float32),),
        values=(rng.normal(size=(6, n_k, 4)).astype(np.float32),),
        scales=(0.5,),
        causal=True,
        alibi_slopes=slopes.numpy(),
    )
    np.testing.assert_array_equal(alibi_bias(slopes, n_q, n_k).numpy(), trace.bias(0))
