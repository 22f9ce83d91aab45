"""ViT analysis wiring (``engine.analysis.vision``) on the shipped ``tiny-vit-digits``: maps read the
right row and patches of the trace, the rollout map is ``engine.analysis.rollout`` over the trace's
patterns, and the occlusion check re-classifies exactly what the trace saw."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine
from engine import samples
from engine.analysis.rollout import rollout
from engine.analysis.vision import cls_map, hide_patches, occlusion_check, patch_map, rollout_map


@pytest.fixture(scope="module")
def vit():
    torch.set_num_threads(1)
    return engine.load("tiny-vit-digits")


@pytest.fixture(scope="module")
def digit_trace(vit):
    image, label = samples.digit(1500)
    return engine.trace(vit, image), label


def test_cls_and_patch_maps_read_the_pattern(digit_trace):
    tr, _ = digit_trace
    assert tr.grid == (4, 4)
    for layer in range(tr.attention.n_layers):
        full = tr.attention.pattern(layer)  # [head, 17, 17]
        all_heads = cls_map(tr, layer)
        for head in range(tr.attention.n_heads):
            # loop reference: patch (r, c) is token 1 + 4r + c
            expected = np.array([[full[head, 0, 1 + 4 * r + c] for c in range(4)] for r in range(4)])
            np.testing.assert_allclose(cls_map(tr, layer, head), expected, atol=1e-7)
            np.testing.assert_allclose(all_heads[head], expected, atol=1e-7)
            np.testing.assert_allclose(patch_map(tr, layer, head, 6), full[head, 7, 1:].reshape(4, 4), atol=1e-7)
    with pytest.raises(IndexError, match="16 patches"):
        patch_map(tr, 0, 0, 16)


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("discard", [0.0, 0.5])
def test_rollout_map_is_engine_rollout_over_trace_patterns(digit_trace, fusion, discard):
    tr, _ = digit_trace
    layers = [tr.attention.pattern(layer) for layer in range(tr.attention.n_layers)]
    joint = rollout(layers, head_fusion=fusion, discard_ratio=discard)[-1]
    np.testing.assert_allclose(
        rollout_map(tr, head_fusion=fusion, discard_ratio=discard), joint[0, 1:].reshape(4, 4), atol=1e-7
    )


@pytest.mark.parametrize("rule", ["all-off-diagonal", "keep-class-token"])
def test_rollout_map_follows_the_discard_rule(digit_trace, rule):
    from engine.analysis.rollout import discard_weakest, fuse_heads

    tr, _ = digit_trace
    layers = [tr.attention.pattern(layer) for layer in range(tr.attention.n_layers)]
    joint = rollout(layers, discard_ratio=0.9, discard_rule=rule)[-1]
    np.testing.assert_allclose(
        rollout_map(tr, discard_ratio=0.9, discard_rule=rule), joint[0, 1:].reshape(4, 4), atol=1e-7
    )
    # at 0.9 the whole-map rule strips [CLS]'s column (15–16 of its 16 off-diagonal cells per layer here)
    for pattern in layers:
        fused = fuse_heads(pattern)
        kept = discard_weakest(fused, 0.9, rule)
        gone = int((kept[1:, 0] == 0).sum())
        if rule == "keep-class-token":
            assert gone == 0
            np.testing.assert_array_equal(kept[:, 0], fused[:, 0])
        else:
            assert gone >= 15


def test_occlusion_k0_is_the_plain_prediction(vit, digit_trace):
    tr, label = digit_trace
    result = occlusion_check(vit, tr, rollout_map(tr), k=0)
    assert result.original == tr.prediction == str(label)
    np.testing.assert_allclose(result.probs, tr.probs, atol=1e-6)
    for row in result.rows:
        assert row.patches == ()
        np.testing.assert_allclose(row.probs, tr.probs, atol=1e-6)


def test_occlusion_hides_the_ranked_patches(vit, digit_trace):
    tr, _ = digit_trace
    ranking = np.arange(16, dtype=float).reshape(4, 4)  # patch 15 ranks highest
    result = occlusion_check(vit, tr, ranking, k=3, seed=1)
    most, rand, least = result.rows
    assert most.patches == (13, 14, 15) and least.patches == (0, 1, 2)
    assert len(set(rand.patches)) == 3
    # independent reference: hide the same pixels by hand and run the engine's own trace on them
    hidden = tr.image.copy()
    hidden[6:8, 2:8] = 0.0  # patches 13, 14, 15 = bottom row, columns 1–3
    np.testing.assert_array_equal(hide_patches(tr.image, (4, 4), 2, [13, 14, 15], 0.0), hidden)
    np.testing.assert_allclose(most.probs, engine.trace(vit, hidden).probs, atol=1e-5)
    with pytest.raises(ValueError, match="between 0 and 16"):
        occlusion_check(vit, tr, ranking, k=17)


def test_samples_load_offline():
    image, label = samples.digit(0)
    assert image.shape == (8, 8) and label == 0 and image.max() <= 16
    for name in samples.SHAPES:
        s = samples.shape(name)
        assert s.shape == (64, 64) and s.dtype == np.uint8 and 0 < (s > 0).mean() < 0.6, name
    for name in samples.PHOTOS:
        p = samples.photo(name)
        assert p.shape == (427, 640, 3) and p.dtype == np.uint8
    with pytest.raises(ValueError):
        samples.shape("hexagon")
