"""The in-browser view's bytes (engine/views/layer_view.py), read back here as layer_view.js reads them: the
header, then uint16 counts of ``step`` that give back every weight to the printed decimals, blocked cells marked."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

import engine
from engine.views.layer_view import BLOCKED, Choice, LayerData, encode, from_trace


def decode(raw: bytes) -> tuple[dict, np.ndarray]:
    size = int.from_bytes(raw[:4], "little")
    header = json.loads(raw[4 : 4 + size])
    start = 4 + size + (-(4 + size) % 8)
    assert start % 8 == 0 and set(raw[4 + size : start]) <= {0}
    shape = (len(header["layers"]), header["n_heads"], header["rows"], header["cols"])
    assert header["deflate"]
    return header, np.frombuffer(zlib.decompress(raw[start:]), dtype="<u2").reshape(shape)


def weights(header: dict, cells: np.ndarray) -> np.ndarray:
    """As layer_view.js reads them: counts of ``step``, from 0xF000 64 codes a decade of −log10, 0xFFFF blocked."""
    tiny = 10.0 ** (-(cells.astype(float) - 0xF000) / 64)
    return np.where(cells == 0xFFFF, np.nan, np.where(cells >= 0xF000, tiny, cells * header["step"]))


def test_weights_come_back_to_three_decimals_and_blocked_cells_are_marked():
    values = np.random.default_rng(1).random((2, 3, 5, 5)).astype(np.float32)
    values[0, 1, 0, 4] = np.nan
    data = LayerData(values, (4, 5), tuple("abcde"), tuple("abcde"))
    header, cells = decode(encode(data, Choice(layer=5, head=9, focus=7)))
    assert (header["layer"], header["head"], header["focus"], header["digits"]) == (5, 2, None, 3)
    assert cells[0, 1, 0, 4] == BLOCKED and (cells != BLOCKED).sum() == values.size - 1
    shown = weights(header, cells)
    assert [f"{v:.3f}" for v in shown.ravel()] == [f"{v:.3f}" for v in values.ravel()]
    assert header["grid"] is False  # one layer's heads in a row (Explore, a notebook)
    grid, cells = decode(encode(data, Choice(layer=4, head=1, grid=True)))  # Heads' model view: every layer × head
    assert grid["grid"] is True and grid["layers"] == [4, 5] and (grid["layer"], grid["head"]) == (4, 1)
    assert [f"{v:.3f}" for v in weights(grid, cells).ravel()] == [f"{v:.3f}" for v in values.ravel()]


def test_weights_under_half_a_thousandth_keep_their_size_on_a_log_scale():
    """A long input's weights (~1/n: 6e-5 at 16k tokens) would all read 0 in thousandths: they keep two digits."""
    values = np.array([[[[1.0, 6.1e-5, 3e-7, 0.0], [0.0004, 0.0005, 2e-3, np.nan]]]], dtype=np.float32)
    header, cells = decode(encode(LayerData(values, (0,), ("a", "b"), tuple("abcd"), square=False), Choice()))
    shown = weights(header, cells)
    assert shown[0, 0, 0, 3] == 0 and np.isnan(shown[0, 0, 1, 3])
    tiny = np.array([6.1e-5, 3e-7, 0.0004])
    got = np.array([shown[0, 0, 0, 1], shown[0, 0, 0, 2], shown[0, 0, 1, 0]])
    np.testing.assert_allclose(got, tiny, rtol=0.019)  # half of 10**(1/64) − 1
    assert shown[0, 0, 1, 1] == pytest.approx(0.001) and shown[0, 0, 1, 2] == pytest.approx(0.002)


def test_large_values_keep_fewer_decimals_but_fit():
    values = np.array([[[[0.0, 120.4567], [7.25, 1.0]]]], dtype=np.float32)  # α·‖v‖ can pass 65.5
    header, cells = decode(encode(LayerData(values, (0,), ("a", "b"), ("a", "b")), Choice()))
    assert header["digits"] == 2 and np.allclose(weights(header, cells), values, atol=0.005)


@pytest.fixture(scope="module")
def trace():
    return engine.trace(engine.load("tiny-gpt-stories"), "Lily found a red ball. She gave the ball to Tom.")


def test_a_trace_is_sent_exact_with_its_mask(trace):
    data = from_trace(trace)
    assert data.values.shape == (trace.n_layers, trace.n_heads, trace.n_queries, trace.n_keys)
    blocked = np.isinf(trace.mask(1))
    assert np.array_equal(np.isnan(data.values[1, 0]), blocked) and blocked.any()  # a decoder: causal
    assert np.allclose(data.values[1, 2][~blocked], trace.pattern(1, 2)[~blocked])


def test_a_trace_too_large_for_the_budget_is_pooled_to_block_maxima(trace):
    n = trace.n_queries
    data = from_trace(trace, layers=(0,), budget=trace.n_heads * 8 * 8 * 2)
    assert data.values.shape[-2:] == (8, 8) and len(data.q_labels) == 8
    assert np.allclose(data.values[0, 3], trace.overview(0, 3, size=8))
    assert n > 8 and data.q_labels[-1].endswith(f"–{n - 1}")  # a block's first–last positions


def test_a_layer_at_512_tokens_fits_the_first_draw():
    """Issue 41's wire budget: at 512 MiniLM tokens a layer's 12 heads (256² block maxima, as the page pools them)
    take under 1 MB, every head exactly (512²) under 4 MB; the cells read back are the counts sent."""
    text = " ".join(["The animal did not cross the street because it was too tired and the road was wide."] * 30)
    trace = engine.trace(engine.load("minilm"), text, max_tokens=512)
    assert trace.n_queries == 512
    pooled = from_trace(trace, layers=(3,), budget=12 * 256 * 256 * 2)
    exact = from_trace(trace, layers=(3,))
    assert pooled.values.shape == (1, 12, 256, 256) and exact.values.shape == (1, 12, 512, 512)
    for data, limit in ((pooled, 1 << 20), (exact, 4 << 20)):
        raw = encode(data, Choice(layer=3))
        header, cells = decode(raw)
        assert len(raw) < limit and np.allclose(weights(header, cells), np.nan_to_num(data.values), atol=6e-4)
