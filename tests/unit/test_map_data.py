"""The figure layer's data: exact maps, pooled head maps, hidden sink columns, CSV downloads.

References are the trace's own full ``pattern()`` (small inputs), pooled or sliced by hand.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from app.ui.map_data import CSV_MAX_SIDE, MapView, csv_region, exact_map, head_csv, head_map, hidden_keys
from engine.traces.overview import overview_edges
from tests.trace_helpers import random_trace


def test_short_input_is_exact_with_token_labels():
    tr = random_trace(12)
    data = head_map(tr, MapView(0, 1))
    np.testing.assert_allclose(data.values, tr.pattern(0, 1), rtol=1e-5, atol=1e-7)
    assert not data.pooled and data.reduce == ""
    assert data.q_labels[0] == "0 [CLS]" and data.k_labels[5] == "5 w5"


def test_causal_cells_are_nan_exactly_where_blocked():
    tr = random_trace(10, causal=True)
    data = head_map(tr, MapView(0, 0))
    blocked = np.triu(np.ones((10, 10), dtype=bool), k=1)
    assert np.isnan(data.values[blocked]).all() and np.isfinite(data.values[~blocked]).all()
    np.testing.assert_allclose(data.values[~blocked], tr.pattern(0, 0)[~blocked], rtol=1e-5)


@pytest.mark.parametrize("causal", [True, False])
def test_sliding_window_cells_are_nan_exactly_where_blocked(causal: bool):
    tr = random_trace(12, causal=causal, window=(3,))
    data = head_map(tr, MapView(0, 1))
    blocked = ~np.isfinite(tr.mask(0))
    assert blocked.any() and (~blocked).any()
    assert np.isnan(data.values[blocked]).all() and np.isfinite(data.values[~blocked]).all()
    np.testing.assert_allclose(data.values[~blocked], tr.pattern(0, 1)[~blocked], rtol=1e-5)
    pooled = head_map(tr, MapView(0, 1, size=4))  # 3 × 3 tokens a cell: a cell is grey only when all 9 are blocked
    e = overview_edges(12, 4)
    whole = np.array([[blocked[a:b, c:d].all() for c, d in zip(e, e[1:])] for a, b in zip(e, e[1:])])
    np.testing.assert_array_equal(np.isnan(pooled.values), whole)


def test_long_input_is_block_maxima_of_the_full_pattern():
    tr = random_trace(300, causal=True)
    data = head_map(tr, MapView(0, 1, size=64))
    full = tr.pattern(0, 1)
    edges = overview_edges(300, 64)
    by_hand = np.maximum.reduceat(np.maximum.reduceat(full, edges[:-1], axis=0), edges[:-1], axis=1)
    # a block wholly above the diagonal is blocked (NaN); every other block is the max of its cells
    above = edges[:-1][None, :] > (edges[1:] - 1)[:, None]
    assert np.isnan(data.values[above]).all()
    np.testing.assert_allclose(data.values[~above], by_hand[~above], rtol=1e-5, atol=1e-8)
    assert data.pooled and data.reduce == "max"
    assert data.q_labels[1] == f"{edges[1]}–{edges[2] - 1}"


def test_hidden_sinks_drop_columns_without_renormalising():
    tr = random_trace(12)
    assert hidden_keys(tr).tolist() == [0, 11]  # [CLS] (also the first token) and [SEP]
    data = head_map(tr, MapView(0, 0, hide_sinks=True))
    np.testing.assert_allclose(data.values, tr.pattern(0, 0)[:, 1:11], rtol=1e-5)
    assert data.k_pos.tolist() == list(range(1, 11)) and data.k_labels[0] == "1 w1"
    assert (data.values.sum(axis=1) < 1).all()  # the hidden weight is not spread over the rest


def test_hiding_sinks_keeps_an_unknown_word(minilm):
    """MiniLM reads the emoji as [UNK]: its column is the user's word, so "hide sinks" keeps it."""
    import engine

    tr = engine.trace(minilm, "I love 🙂 pizza")
    assert list(tr.tokens.strings) == ["[CLS]", "i", "love", "[UNK]", "pizza", "[SEP]"]
    assert hidden_keys(tr).tolist() == [0, 5]
    data = head_map(tr, MapView(0, 0, hide_sinks=True))
    assert data.k_pos.tolist() == [1, 2, 3, 4] and data.k_labels[2] == "3 [UNK]"


def test_row_scale_divides_each_row_by_its_largest_shown_weight():
    tr = random_trace(12)
    data = head_map(tr, MapView(0, 0, scale="row"))
    full = tr.pattern(0, 0)
    np.testing.assert_allclose(data.values, full / full.max(axis=1, keepdims=True), rtol=1e-5)
    assert data.value_name == "share of row max"


def test_value_weighting_multiplies_each_column_by_its_value_norm():
    tr = random_trace(12)
    norms = np.linalg.norm(tr.v(0)[1], axis=-1)
    data = head_map(tr, MapView(0, 1, weighting="value"))
    np.testing.assert_allclose(data.values, tr.pattern(0, 1) * norms[None, :], rtol=1e-5, atol=1e-7)
    assert data.value_name == "α·‖v‖"
    hidden = head_map(tr, MapView(0, 1, weighting="value", hide_sinks=True, scale="row"))
    want = (tr.pattern(0, 1) * norms[None, :])[:, 1:-1]
    np.testing.assert_allclose(hidden.values, want / want.max(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert hidden.value_name == "share of row max of α·‖v‖"
    long = random_trace(300, causal=True)
    pooled = head_map(long, MapView(0, 0, weighting="value", size=64))
    full = long.pattern(0, 0) * np.linalg.norm(long.v(0)[0], axis=-1)[None, :]
    edges = overview_edges(300, 64)
    by_hand = np.maximum.reduceat(np.maximum.reduceat(full, edges[:-1], axis=0), edges[:-1], axis=1)
    blocked = np.isnan(pooled.values)
    np.testing.assert_allclose(pooled.values[~blocked], by_hand[~blocked], rtol=1e-5, atol=1e-7)


def test_zoom_region_is_exact_once_it_fits():
    tr = random_trace(300)
    data = head_map(tr, MapView(0, 1, q_range=(40, 90), k_range=(100, 160), size=64))
    np.testing.assert_allclose(data.values, tr.pattern(0, 1)[40:90, 100:160], rtol=1e-5, atol=1e-8)
    assert not data.pooled and data.q_labels[0] == "40 w40" and data.k_labels[0] == "100 w100"


def test_exact_map_checks_labels_and_marks_blocked_cells():
    values = np.array([[1.0, 0.0], [0.25, 0.75]], dtype=np.float32)
    data = exact_map(values, ["a", "b"], ["c", "d"], blocked=np.array([[False, True], [False, False]]))
    assert np.isnan(data.values[0, 1]) and data.values[1, 1] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="2×2"):
        exact_map(values, ["a"], ["c", "d"])


def _read(csv_bytes: bytes) -> tuple[list[str], list[str], np.ndarray]:
    rows = list(csv.reader(io.StringIO(csv_bytes.decode("utf-8"))))
    return rows[0][1:], [r[0] for r in rows[1:]], np.array([[float(x) for x in r[1:]] for r in rows[1:]])


def test_csv_holds_the_exact_weights_of_the_whole_head_or_a_region():
    tr = random_trace(40)
    keys, queries, weights = _read(head_csv(tr, 0, 1, block_rows=7))  # several row blocks
    assert keys[0] == "0 [CLS]" and queries[-1] == "39 [SEP]"
    np.testing.assert_allclose(weights, tr.pattern(0, 1), atol=1e-6)
    keys, queries, weights = _read(head_csv(tr, 0, 1, (10, 20), (5, 30)))
    assert queries == [f"{i} w{i}" for i in range(10, 20)] and keys[0] == "5 w5" and len(keys) == 25
    np.testing.assert_allclose(weights, tr.pattern(0, 1)[10:20, 5:30], atol=1e-6)


def test_csv_region_is_refused_past_the_cap():
    tr = random_trace(8)
    assert csv_region(tr, None, None) == ((0, 8), (0, 8))
    big = random_trace(CSV_MAX_SIDE + 1, special_ends=False)
    assert csv_region(big, None, None) is None
    assert csv_region(big, (0, 100), (0, CSV_MAX_SIDE)) == ((0, 100), (0, CSV_MAX_SIDE))
