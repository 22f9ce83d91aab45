"""Hugging Face Swin through the engine's capture path, against the model's own eager attention.

A tiny random Swin (``tests/swin_helpers.py``) is loaded through ``engine.load(folder)`` (``ap_capture``: SDPA
that records each block's Q and K for every window; patterns recomputed lazily with the block's relative
position bias and the shifted-window mask rebuilt in numpy) and compared with a *separate* copy loaded by
transformers with ``attn_implementation="eager"``: its ``output_attentions`` (the last block of each stage)
and, through forward hooks, the weights every block's attention module returns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.records import ModelUnavailableError
from engine.traces.vision import WindowTrace, shift_mask, slot_positions, window_row
from tests.hf_helpers import photo, traced_photo
from tests.swin_helpers import LABELS, save_tiny_swin

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ATOL = 1e-5
#: (stage, block, window, shift) transformers runs for each window size of the tiny Swin (8×8, then 4×4 patches)
GEOMETRY = {
    2: [(0, 0, 2, 0), (0, 1, 2, 1), (1, 0, 2, 0), (1, 1, 2, 1)],
    3: [(0, 0, 3, 0), (0, 1, 3, 1), (1, 0, 3, 0), (1, 1, 3, 1)],  # both grids padded (9×9, 6×6)
    4: [(0, 0, 4, 0), (0, 1, 4, 2), (1, 0, 4, 0), (1, 1, 4, 0)],  # stage 1 is one window: no shift
}


@pytest.fixture(scope="module", params=sorted(GEOMETRY))
def saved(request, tmp_path_factory) -> tuple[int, Path]:
    return request.param, save_tiny_swin(tmp_path_factory.mktemp(f"swin{request.param}"), window=request.param)


def _photo(seed: int = 0) -> np.ndarray:
    return photo(27, 41, seed)


def _eager(folder: Path, image: np.ndarray):
    """The eager model's ``output_attentions``, every block's weights (hooks), its logits and its blocks."""
    from transformers import AutoImageProcessor, SwinForImageClassification

    model = SwinForImageClassification.from_pretrained(folder, attn_implementation="eager").eval()
    pixels = AutoImageProcessor.from_pretrained(folder)(images=image, return_tensors="pt")["pixel_values"]
    blocks = [layer for stage in model.swin.encoder.layers for layer in stage.blocks]
    weights: list[np.ndarray] = []
    hooks = [
        b.attention.register_forward_hook(lambda _m, _i, out: weights.append(out[1].detach().numpy())) for b in blocks
    ]
    try:
        with torch.no_grad():
            out = model(pixel_values=pixels, output_attentions=True)
    finally:
        for hook in hooks:
            hook.remove()
    return out, weights, blocks


def test_window_patterns_equal_eager_attentions(saved):
    window, folder = saved
    _, image, tr = traced_photo(folder, 27, 41)
    assert isinstance(tr, WindowTrace) and tr.family == "vit" and tr.attention_blocks() == {}
    assert [(b.stage, b.block, b.window, b.shift) for b in tr.blocks] == GEOMETRY[window]
    assert tr.grid == (8, 8) and tr.stage_blocks(1)[0].grid == (4, 4) and tr.patch_size == 4
    out, every_block, _ = _eager(folder, image)
    assert len(out.attentions) == tr.n_stages == 2 and len(every_block) == len(tr.blocks) == 4
    for stage, expected in enumerate(out.attentions):  # output_attentions: each stage's last block
        np.testing.assert_allclose(tr.stage_blocks(stage)[-1].pattern(), expected.numpy(), atol=ATOL)
    for block, expected in zip(tr.blocks, every_block):
        assert block.pattern().shape == expected.shape == (block.n_windows, block.n_heads, window**2, window**2)
        assert expected.max() > 0.5, "patterns far from uniform: a wrong scale or bias would show"
        np.testing.assert_allclose(block.pattern(), expected, atol=ATOL)
        np.testing.assert_allclose(block.pattern(1), expected[:, 1], atol=ATOL)
        if block.shift:  # the mask really hides keys, and the engine hides the same ones
            hidden = shift_mask(block.grid, block.window, block.shift) < 0
            assert hidden.any() and np.all(expected.transpose(1, 0, 2, 3)[:, hidden] < 1e-30)
    np.testing.assert_allclose(tr.probs, torch.softmax(out.logits[0], -1).numpy(), atol=1e-6)
    assert tr.labels == tuple(LABELS.values())


def test_the_mask_is_transformers_own(saved):
    """``shift_mask`` equals ``SwinLayer.get_attn_mask`` for the window and shift each block ran with."""
    window, folder = saved
    _, _, blocks = _eager(folder, _photo(1))
    grids = [(8, 8), (8, 8), (4, 4), (4, 4)]
    for layer, grid, (_, _, w, s) in zip(blocks, grids, GEOMETRY[window]):
        assert (layer.window_size, layer.shift_size) == (w, s)
        hp = -(-grid[0] // w) * w
        theirs = layer.get_attn_mask(hp, hp, dtype=torch.float32, device=torch.device("cpu"))
        ours = shift_mask(grid, w, s)
        assert (theirs is None) == (ours is None)
        if ours is not None:
            np.testing.assert_array_equal(ours, theirs.numpy())


def test_a_window_row_is_the_eager_row_put_back_on_the_image(saved):
    """The map a page draws for a query patch: its window's row of the eager weights, each key at its patch
    (``slot_positions`` is checked against an ``np.roll`` of the grid in tests/unit/test_windows.py)."""
    _, folder = saved
    tr = engine.trace(engine.load(str(folder)), _photo(2))
    _, every_block, _ = _eager(folder, _photo(2))
    block, expected = tr.blocks[1], every_block[1]  # stage 0's shifted block
    rows, cols = block.grid
    for patch in (0, cols - 1, rows * cols - 1, (rows // 2) * cols + cols // 2):
        row = window_row(block, 1, patch)
        eager_row = expected[row.window_index, 1, row.slot]  # [N]
        where = slot_positions(block.grid, block.window, block.shift)[row.window_index]
        inside = (where[:, 0] < rows) & (where[:, 1] < cols)
        drawn = np.zeros((rows, cols))
        drawn[where[inside, 0], where[inside, 1]] = eager_row[inside]
        np.testing.assert_allclose(row.weights, drawn, atol=ATOL)
        assert row.padding == pytest.approx(float(eager_row[~inside].sum()), abs=ATOL)
        assert row.visible[divmod(patch, cols)] and np.all(row.weights[~row.visible] < 1e-30)


def test_a_swin_without_a_head_traces_attention_only(tmp_path):
    folder = save_tiny_swin(tmp_path / "base", window=2, classifier=False)
    tr = engine.trace(engine.load(str(folder)), _photo(3))
    assert tr.labels == () and tr.probs.shape == (0,)
    assert any("no classification head" in n for n in tr.notices)
    assert len(tr.blocks) == 4


def test_hooks_are_removed_after_a_trace(saved):
    _, folder = saved
    model = engine.load(str(folder))
    engine.trace(model, _photo(4))
    assert not [m for m in model.module.modules() if m._forward_hooks]


def test_an_offline_swin_hub_id_is_a_clear_message(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError, match="not downloaded on this machine and the Hub is switched off"):
        engine.load("microsoft/swin-not-a-real-model-xyz")
