"""``layer_tiles``: a short input is the layer's exact pattern for all heads at once, the same numbers as one
pooled overview per head (blocks of one cell), masked cells included."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from app.ui.map_data import layer_tiles


@pytest.mark.parametrize("model_id, causal", [("minilm", False), ("minilm", True), ("tiny-gpt-stories", None)])
def test_short_input_tiles_equal_one_overview_per_head(model_id, causal):
    trace = engine.trace(engine.load(model_id), "lily saw the cat because it was tired", causal=causal)
    for layer in range(trace.n_layers):
        fast = layer_tiles(trace, layer, cells=48)
        slow = np.stack([trace.overview(layer, h, size=48, reduce="max") for h in range(trace.n_heads)])
        assert fast.dtype == np.float32 and fast.shape == slow.shape
        np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))
        np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-7)


def test_long_input_tiles_are_pooled_to_the_cell_budget():
    trace = engine.trace(engine.load("minilm"), " ".join(["word"] * 80))
    tiles = layer_tiles(trace, 0, cells=16)
    assert tiles.shape == (trace.n_heads, 16, 16)
    full = trace.pattern(0)
    assert np.allclose(tiles.max(axis=(1, 2)), full.max(axis=(1, 2)))  # block maxima keep each head's peak
