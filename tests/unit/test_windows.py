"""Swin's window geometry (``engine.traces.vision``) against a second, independent construction.

The reference follows the paper's own recipe: roll the grid of patch numbers with ``np.roll``, cut the rolled
grid into windows with a reshape, and label the mask's regions with the three slices per axis
(``[0, −w)``, ``[−w, −s)``, ``[−s, end)``) the original implementation writes out. A window's row laid back
on the image is then checked on hand-built blocks whose scores are known.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.records import EngineError
from engine.traces.vision import (
    MASK_VALUE,
    WindowBlock,
    WindowTrace,
    locate,
    padded,
    shift_mask,
    slot_positions,
    window_edges,
    window_row,
)


def _rolled_windows(hp: int, wp: int, w: int, s: int) -> np.ndarray:
    """``[window, N]`` patch numbers (row-major on the padded grid) in each window's slots, by np.roll."""
    numbers = np.arange(hp * wp).reshape(hp, wp)
    rolled = np.roll(numbers, shift=(-s, -s), axis=(0, 1))
    return rolled.reshape(hp // w, w, wp // w, w).transpose(0, 2, 1, 3).reshape(-1, w * w)


def _region_labels(hp: int, wp: int, w: int, s: int) -> np.ndarray:
    """``[window, N]`` region labels of the rolled grid's slots, written with slices as in the paper's code."""
    img = np.zeros((hp, wp), dtype=np.int64)
    count = 0
    for rows in (slice(0, -w), slice(-w, -s), slice(-s, None)):
        for cols in (slice(0, -w), slice(-w, -s), slice(-s, None)):
            img[rows, cols] = count
            count += 1
    return img.reshape(hp // w, w, wp // w, w).transpose(0, 2, 1, 3).reshape(-1, w * w)


@pytest.mark.parametrize(
    "grid, w, s", [((4, 4), 2, 0), ((4, 4), 2, 1), ((8, 8), 4, 2), ((6, 9), 3, 1), ((7, 5), 3, 1), ((3, 3), 2, 1)]
)
def test_slots_and_mask_match_a_rolled_grid(grid, w, s):
    hp, wp = padded(grid, w)
    assert hp % w == wp % w == 0 and hp - w < grid[0] <= hp and wp - w < grid[1] <= wp
    positions = slot_positions(grid, w, s)  # [window, N, 2]
    numbers = _rolled_windows(hp, wp, w, s)
    np.testing.assert_array_equal(positions[..., 0] * wp + positions[..., 1], numbers)
    for index, slots in enumerate(numbers):  # locate is the inverse of the slot table
        for slot, number in enumerate(slots):
            r, c = divmod(int(number), wp)
            if r < grid[0] and c < grid[1]:
                assert locate(grid, w, s, r, c) == (index, slot)
    mask = shift_mask(grid, w, s)
    if s == 0:
        assert mask is None
        return
    labels = _region_labels(hp, wp, w, s)
    expected = np.where(labels[:, :, None] == labels[:, None, :], 0.0, MASK_VALUE)
    np.testing.assert_array_equal(mask, expected)
    assert not mask.flags.writeable


def test_window_edges_move_by_the_shift():
    assert window_edges(8, 8, 4, 0) == (0, 4, 8)
    assert window_edges(8, 8, 4, 2) == (0, 2, 6, 8)
    assert window_edges(4, 4, 2, 1) == (0, 1, 3, 4)
    assert window_edges(8, 9, 3, 0) == (0, 3, 6, 8)  # padded to 9: the last window sticks out of the grid
    assert window_edges(8, 9, 3, 1) == (0, 1, 4, 7, 8)


def _block(grid, w, s, field: np.ndarray, *, stage: int = 0, block: int = 0) -> WindowBlock:
    """One head, d = 1: every query is 1 and the key of the patch at (r, c) is ``field[r, c]`` (padding: 0),
    placed into the windows by the np.roll reference, so a query's scores are the field's values."""
    hp, wp = padded(grid, w)
    full = np.zeros((hp, wp), dtype=np.float32)
    full[: grid[0], : grid[1]] = field
    keys = full.ravel()[_rolled_windows(hp, wp, w, s)][:, None, :, None]  # [window, 1, N, 1]
    return WindowBlock(
        stage=stage,
        block=block,
        grid=grid,
        window=w,
        shift=s,
        queries=np.ones_like(keys),
        keys=keys,
        scale=1.0,
        bias=np.zeros((1, w * w, w * w), np.float32),
    )


def _expected(field: np.ndarray, seen: list[tuple[int, int]]) -> np.ndarray:
    out = np.zeros(field.shape)
    e = np.exp([field[p] for p in seen])
    for p, v in zip(seen, e / e.sum()):
        out[p] = v
    return out


def test_an_unshifted_window_is_a_square_of_neighbours():
    field = np.arange(16, dtype=np.float32).reshape(4, 4) / 4
    row = window_row(_block((4, 4), 2, 0, field), 0, 6)  # patch (1, 2): window 1 = rows 0–1, cols 2–3
    seen = [(0, 2), (0, 3), (1, 2), (1, 3)]
    np.testing.assert_allclose(row.weights, _expected(field, seen), atol=1e-6)
    assert row.window.sum() == 4 and row.visible.sum() == 4 and all(row.visible[p] for p in seen)
    assert row.pieces == ((0, 2, 2, 4),) and (row.window_index, row.slot) == (1, 2) and row.padding == 0.0
    assert row.row_edges == row.col_edges == (0, 2, 4)


def test_a_shifted_window_straddles_the_old_borders():
    field = np.arange(16, dtype=np.float32).reshape(4, 4) / 4
    row = window_row(_block((4, 4), 2, 1, field), 0, 5)  # patch (1, 1): the first shifted window, rows/cols 1–2
    seen = [(1, 1), (1, 2), (2, 1), (2, 2)]
    np.testing.assert_allclose(row.weights, _expected(field, seen), atol=1e-6)
    assert row.pieces == ((1, 3, 1, 3),) and row.row_edges == row.col_edges == (0, 1, 3, 4)


def test_the_wrapped_window_is_masked_into_its_pieces():
    """Shift 1 on a 4×4 grid: the last window holds rows 3 and 0 and columns 3 and 0 (four corners). Patch (0, 1)
    sits in the window of rows {3, 0} × columns {1, 2}: it may look at row 0 only, the other row came round."""
    field = np.arange(16, dtype=np.float32).reshape(4, 4) / 4
    block = _block((4, 4), 2, 1, field)
    row = window_row(block, 0, 1)
    np.testing.assert_allclose(row.weights, _expected(field, [(0, 1), (0, 2)]), atol=1e-6)
    assert row.window[3, 1] and row.window[3, 2] and not row.visible[3, 1] and not row.visible[3, 2]
    assert sorted(row.pieces) == [(0, 1, 1, 3), (3, 4, 1, 3)]
    corner = window_row(block, 0, 0)  # patch (0, 0): each corner of the grid is alone in its region
    assert corner.weights[0, 0] == pytest.approx(1.0) and corner.visible.sum() == 1 and corner.window.sum() == 4
    assert sorted(corner.pieces) == [(0, 1, 0, 1), (0, 1, 3, 4), (3, 4, 0, 1), (3, 4, 3, 4)]
    weights = block.pattern(0)  # every window: rows sum to 1, and a hidden key gets no weight
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-6)
    assert np.all(weights[shift_mask((4, 4), 2, 1) < 0] < 1e-30)


def test_padding_takes_weight_but_is_not_on_the_map():
    """A 3×3 grid in windows of 2 is padded to 4×4; with equal scores patch (2, 2) shares its window with three
    padding tokens (transformers does not mask them in an unshifted block)."""
    row = window_row(_block((3, 3), 2, 0, np.zeros((3, 3), np.float32)), 0, 8)
    assert row.weights.shape == (3, 3) and row.weights[2, 2] == pytest.approx(0.25)
    assert row.padding == pytest.approx(0.75) and row.pieces == ((2, 3, 2, 3),)


def test_blocks_and_traces_check_their_shapes():
    field = np.zeros((4, 4), np.float32)
    good = _block((4, 4), 2, 1, field, block=1)
    with pytest.raises(ValueError, match="shift"):
        _block((4, 4), 2, 2, field)
    with pytest.raises(ValueError, match="windows"):
        WindowBlock(0, 0, (4, 4), 2, 0, good.queries[:3], good.keys[:3], 1.0, good.bias)
    with pytest.raises(ValueError, match="bias"):
        WindowBlock(0, 0, (4, 4), 2, 0, good.queries, good.keys, 1.0, good.bias[:, :2])
    trace = WindowTrace(
        model_id="m",
        image=np.zeros((8, 8, 3), np.float32),
        patch_size=2,
        blocks=(_block((4, 4), 2, 0, field), good, _block((2, 2), 2, 0, field[:2, :2], stage=1)),
        labels=("a",),
        probs=np.ones(1, np.float32),
    )
    assert trace.n_stages == 2 and trace.grid == (4, 4) and trace.cell_size(1) == 4
    assert trace.block_at(0, 1) is good and len(trace.stage_blocks(0)) == 2 and trace.attention_blocks() == {}
    with pytest.raises(EngineError, match="no block 3"):
        trace.block_at(0, 3)
