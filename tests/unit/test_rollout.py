"""Attention rollout against a direct, loop-by-loop implementation of Abnar & Zuidema (2020)."""

import numpy as np
import pytest

from engine.analysis.rollout import discard_weakest, fuse_heads, rollout


def random_attention(rng, layers=3, heads=4, n=5):
    logits = rng.normal(size=(layers, heads, n, n))
    e = np.exp(logits)
    return e / e.sum(-1, keepdims=True)


def direct_rollout(att, fusion="mean"):
    """Written out with loops: fuse, add I/2, renormalise, multiply layer by layer."""
    n_layers, _, n, _ = att.shape
    joint = np.eye(n)
    out = []
    for layer in range(n_layers):
        fused = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                column = att[layer, :, i, j]
                fused[i, j] = {"mean": column.mean(), "max": column.max(), "min": column.min()}[fusion]
        a = np.zeros((n, n))
        for i in range(n):
            row = [0.5 * fused[i, j] + (0.5 if i == j else 0.0) for j in range(n)]
            total = sum(row)
            for j in range(n):
                a[i, j] = row[j] / total
        new = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                new[i, j] = sum(a[i, m] * joint[m, j] for m in range(n))
        joint = new
        out.append(joint)
    return np.stack(out)


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
def test_rollout_matches_direct_implementation(fusion):
    att = random_attention(np.random.default_rng(0))
    got = rollout(list(att), head_fusion=fusion)
    np.testing.assert_allclose(got, direct_rollout(att, fusion), atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)


def test_first_layer_is_half_attention_plus_half_identity_for_mean():
    att = random_attention(np.random.default_rng(1), layers=1)
    got = rollout(list(att))[0]
    np.testing.assert_allclose(got, 0.5 * att[0].mean(0) + 0.5 * np.eye(5), atol=1e-6)


def test_identity_attention_rolls_out_to_identity():
    eye = np.broadcast_to(np.eye(4), (2, 3, 4, 4))
    np.testing.assert_allclose(rollout(list(eye))[-1], np.eye(4), atol=1e-7)


def test_discard_drops_weakest_off_diagonal_and_keeps_diagonal():
    a = np.array([[0.1, 0.2, 0.7], [0.05, 0.9, 0.05], [0.3, 0.3, 0.4]])
    out = discard_weakest(a, 0.5)  # 6 off-diagonal entries → the 3 smallest go
    np.testing.assert_array_equal(np.diag(out), np.diag(a))
    assert (out == 0).sum() == 3
    expected = np.array([[0.1, 0.0, 0.7], [0.0, 0.9, 0.0], [0.3, 0.3, 0.4]])  # 0.05, 0.05, 0.2 dropped
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError):
        discard_weakest(a, 1.0)


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        rollout([])
    with pytest.raises(ValueError):
        fuse_heads(np.ones((2, 2, 2)), "median")
    with pytest.raises(ValueError):
        rollout([np.ones((2, 3, 4)) / 4])
