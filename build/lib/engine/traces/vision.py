"""The image models' traces: a ViT's attention over its patches (:class:`VisionTrace`), and a Swin's
(:class:`WindowTrace`) inside windows of the patch grid, with the windows' geometry: which patch sits in which
window, the shifted-window mask, one query's row laid on the image.

Swin (Liu et al. 2021, "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows")
computes self-attention inside non-overlapping w×w windows of a stage's patch grid instead of over the
whole image. Even blocks cut the grid as it is; odd blocks first roll it by s = w // 2 patches up and
to the left (a cyclic shift), so their windows straddle the previous block's window borders::

    shifted[i, j] = x[(i + s) mod H, (j + s) mod W]       # H, W: the grid padded to a multiple of w

The shifted grid is cut into windows numbered row-major; slot t = a·w + b of window (R, C) holds the
patch at shifted (R·w + a, C·w + b), that is at image position ((R·w + a + s) mod H, (C·w + b + s) mod W).
The roll carries the top rows and left columns round to the bottom and right, so a window on the last
row or column of the shifted grid joins patches that are not neighbours on the image. A mask keeps them
apart: each shifted row index i gets a label, 0 (i < H − w), 1 (H − w ≤ i < H − s) or 2 (i ≥ H − s),
likewise each column, and a query and a key in one window see each other only where both labels agree
(transformers adds −100 to the score otherwise: exp(−100) ≈ 4·10⁻⁴⁴, a weight of 0 in float32).

Inside a window, per head::

    pattern = softmax(Q Kᵀ · scale + B + M)      # B: learned relative position bias [head, N, N]; M: the mask

(N = w² tokens per window, row-major inside the window.) Pure numpy; tested against transformers'
``SwinLayer.get_attn_mask``, hand-built grids, and the eager attention of a tiny Swin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from engine.records import EngineError, Family
from engine.traces.attention import AttentionTrace

#: what transformers adds to the score of a key the shifted-window mask hides
MASK_VALUE = -100.0


@dataclass(frozen=True, eq=False)
class VisionTrace:
    """A Vision Transformer classifying one image, with its patch attention.

    Attributes:
        model_id: the id the model was loaded with.
        image: ``[H, W]`` or ``[H, W, 3]`` float32 in 0–1, as the model saw it (after resizing).
        patch_size: pixels per patch side.
        grid: ``(rows, cols)`` of patches.
        attention: self-attention over ``[CLS] + patches`` (row-major patch order); ``tokens``
            are ``"[CLS]", "p0", "p1", …``.
        labels: class names.
        probs: ``[n_classes]`` softmax of the logits.
        notices: sentences for the UI (resized, converted, not a digit, …).
    """

    model_id: str
    image: np.ndarray
    patch_size: int
    grid: tuple[int, int]
    attention: AttentionTrace
    labels: tuple[str, ...]
    probs: np.ndarray
    notices: tuple[str, ...] = field(default_factory=tuple)

    @property
    def prediction(self) -> str:
        return self.labels[int(np.argmax(self.probs))]

    @property
    def family(self) -> Family:
        """The :class:`Trace` protocol; read from ``attention``, so the two cannot disagree."""
        return self.attention.family

    @property
    def device(self) -> str:
        """Where the forward pass ran; read from ``attention`` (the adapters set it there)."""
        return self.attention.device

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: self-attention over ``[CLS]`` + patches."""
        return {"self": self.attention}


@dataclass(frozen=True, eq=False)
class WindowBlock:
    """One Swin block: self-attention inside w×w windows of its stage's patch grid, shifted in odd blocks.

    The geometry (which patch sits in which window and slot, the shifted-window mask) is below; the
    lazy pattern, per window and head::

        pattern = softmax(Q Kᵀ · scale + bias + shift mask)

    Attributes:
        stage: the stage it belongs to (Swin merges 2×2 patches between stages).
        block: its place in the stage, from 0; odd blocks shift their windows.
        grid: ``(rows, cols)`` of the stage's patch grid (before padding to a multiple of ``window``).
        window: w, the window's side in patches (N = w² tokens per window).
        shift: s, how far the grid is rolled up and left before it is cut (0, or w // 2 in odd blocks).
        queries, keys: ``[window, head, N, d_head]`` float32; windows row-major over the padded, shifted
            grid, tokens row-major inside a window.
        scale: the factor applied to QKᵀ.
        bias: ``[head, N, N]`` float32, the learned relative position bias added to every window's scores.
    """

    stage: int
    block: int
    grid: tuple[int, int]
    window: int
    shift: int
    queries: np.ndarray
    keys: np.ndarray
    scale: float
    bias: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "grid", (int(self.grid[0]), int(self.grid[1])))  # hashable, for the mask cache
        w, n = self.window, self.window * self.window
        hp, wp = padded(self.grid, w) if w > 0 else (0, 0)
        if w < 1 or not 0 <= self.shift < w:
            raise ValueError(
                f"stage {self.stage} block {self.block}: window {w} and shift {self.shift} need 0 ≤ shift < window"
            )
        if self.queries.ndim != 4 or self.keys.shape != self.queries.shape:
            raise ValueError(
                f"queries and keys must both be [window, head, N, d_head], got {self.queries.shape}, {self.keys.shape}"
            )
        if self.queries.shape[0] != (hp // w) * (wp // w) or self.queries.shape[2] != n:
            raise ValueError(
                f"a {self.grid} grid in windows of {w}×{w} has {(hp // w) * (wp // w)} windows of {n} "
                f"tokens, got queries {self.queries.shape}"
            )
        if self.bias.shape != (self.queries.shape[1], n, n):
            raise ValueError(f"bias must be [head, N, N] = {(self.queries.shape[1], n, n)}, got {self.bias.shape}")

    @property
    def n_heads(self) -> int:
        return int(self.queries.shape[1])

    @property
    def n_windows(self) -> int:
        return int(self.queries.shape[0])

    @property
    def shifted(self) -> bool:
        return self.shift > 0

    def pattern(self, head: int | None = None) -> np.ndarray:
        """``[window, head, N, N]`` (or ``[window, N, N]`` for one head), rows summing to 1."""
        return block_pattern(self, head)


@dataclass(frozen=True, eq=False)
class WindowTrace:
    """A Swin Transformer classifying one image: attention inside local windows that shift between blocks.

    Attributes:
        model_id: the id the model was loaded with.
        image: ``[H, W, 3]`` float32 in 0–1, as the model saw it (after resizing).
        patch_size: pixels per patch side at stage 0 (a stage-k patch covers ``patch_size · 2^k`` pixels).
        blocks: every block in forward order (stage by stage).
        labels: class names (empty without a classification head).
        probs: ``[n_classes]`` softmax of the logits.
        notices: sentences for the UI.
        device: where the forward pass ran ("cpu", "cuda").
        family: always ``"vit"`` (the catalog family of image models; the :class:`Trace` protocol).
    """

    model_id: str
    image: np.ndarray
    patch_size: int
    blocks: tuple[WindowBlock, ...]
    labels: tuple[str, ...]
    probs: np.ndarray
    notices: tuple[str, ...] = field(default_factory=tuple)
    device: str = "cpu"
    family: Family = "vit"

    def __post_init__(self) -> None:
        if not self.blocks:
            raise ValueError("WindowTrace needs at least one block")

    @property
    def grid(self) -> tuple[int, int]:
        """The patch grid of the first stage (what the image is cut into)."""
        return self.blocks[0].grid

    @property
    def n_stages(self) -> int:
        return max(b.stage for b in self.blocks) + 1

    def stage_blocks(self, stage: int) -> tuple[WindowBlock, ...]:
        return tuple(b for b in self.blocks if b.stage == stage)

    def block_at(self, stage: int, block: int) -> WindowBlock:
        """The ``block``-th block of ``stage``."""
        found = [b for b in self.blocks if b.stage == stage and b.block == block]
        if not found:
            raise EngineError(f"This Swin has no block {block} in stage {stage}.")
        return found[0]

    def cell_size(self, stage: int) -> int:
        """Pixels per patch side in ``stage``."""
        return self.patch_size * 2**stage

    @property
    def prediction(self) -> str:
        return self.labels[int(np.argmax(self.probs))]

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: none. Each block's attention is a set of small windows, not one
        sequence of tokens; pages read ``blocks`` instead."""
        return {}


def padded(grid: tuple[int, int], window: int) -> tuple[int, int]:
    """The grid ``(rows, cols)`` padded up to a multiple of the window (transformers pads with zeros)."""
    return -(-grid[0] // window) * window, -(-grid[1] // window) * window


def _labels(size: int, window: int, shift: int) -> np.ndarray:
    """``[size]`` the mask label of each index of a shifted (padded) axis: 0, 1 or 2 (see the module docstring)."""
    i = np.arange(size)
    return (i >= size - window).astype(np.int64) + (i >= size - shift)


def slot_positions(grid: tuple[int, int], window: int, shift: int) -> np.ndarray:
    """``[window, N, 2]``: the (row, col) on the padded grid of the patch each slot of each window holds."""
    hp, wp = padded(grid, window)
    rows = (np.arange(hp).reshape(hp // window, window) + shift) % hp  # [windows down, w]
    cols = (np.arange(wp).reshape(wp // window, window) + shift) % wp  # [windows across, w]
    out = np.empty((hp // window, wp // window, window, window, 2), dtype=np.int64)
    out[..., 0] = rows[:, None, :, None]
    out[..., 1] = cols[None, :, None, :]
    return out.reshape(-1, window * window, 2)


@lru_cache(maxsize=64)
def shift_mask(grid: tuple[int, int], window: int, shift: int) -> np.ndarray | None:
    """``[window, N, N]`` float32: 0 where a query (row) may see a key (column) of its window, −100 where the
    shifted-window mask hides it; None without a shift (every key of the window is visible). Read-only."""
    if shift <= 0:
        return None
    hp, wp = padded(grid, window)
    down = _labels(hp, window, shift).reshape(hp // window, window)
    across = _labels(wp, window, shift).reshape(wp // window, window)
    labels = (down[:, None, :, None] * 3 + across[None, :, None, :]).reshape(-1, window * window)  # [window, N]
    mask = np.where(labels[:, :, None] == labels[:, None, :], 0.0, MASK_VALUE).astype(np.float32)
    mask.flags.writeable = False
    return mask


def locate(grid: tuple[int, int], window: int, shift: int, row: int, col: int) -> tuple[int, int]:
    """``(window index, slot)`` of the patch at ``(row, col)`` of the stage's grid."""
    hp, wp = padded(grid, window)
    r, c = (row - shift) % hp, (col - shift) % wp  # where the roll put it
    return (r // window) * (wp // window) + c // window, (r % window) * window + c % window


def window_edges(size: int, padded_size: int, window: int, shift: int) -> tuple[int, ...]:
    """Where window borders cross one axis of the grid, in patches from 0 to ``size`` (the grid's edges
    included): multiples of w, moved on by s in a shifted block."""
    starts = {(k * window + shift) % padded_size for k in range(padded_size // window)}
    return tuple(sorted(e for e in starts | {0, size} if e <= size))


def block_pattern(block: WindowBlock, head: int | None = None, windows: int | slice | None = None) -> np.ndarray:
    """Attention weights of ``block``: ``[window, head, N, N]``, or ``[window, N, N]`` for one head;
    ``windows`` picks some windows (an index keeps the axis). float32, rows sum to 1."""
    pick = slice(None) if windows is None else (slice(windows, windows + 1) if isinstance(windows, int) else windows)
    heads = slice(None) if head is None else slice(head, head + 1)
    q = block.queries[pick, heads]  # [W, H, N, d]
    k = block.keys[pick, heads]  # [W, H, N, d]
    scores = np.matmul(q, k.transpose(0, 1, 3, 2)) * np.float32(block.scale)  # [W, H, N, N]
    scores = scores + block.bias[None, heads]
    mask = shift_mask(block.grid, block.window, block.shift)
    if mask is not None:
        scores = scores + mask[pick][:, None]
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores, dtype=np.float32)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights if head is None else weights[:, 0]


def _runs(values: np.ndarray) -> list[tuple[int, int]]:
    """Sorted distinct integers → ``[(start, stop), …]`` of their consecutive runs (stop exclusive)."""
    v = np.unique(values)
    breaks = np.flatnonzero(np.diff(v) != 1) + 1
    return [(int(run[0]), int(run[-1]) + 1) for run in np.split(v, breaks)]


@dataclass(frozen=True)
class WindowRow:
    """One query patch's attention in one block and head, laid back on its stage's patch grid.

    Attributes:
        weights: ``[rows, cols]`` float64: the weight the query gives each patch; 0 outside its window.
        window: ``[rows, cols]`` bool: the patches of the query's window (on the image, a shifted window
            at the bottom or right edge comes in pieces from opposite edges).
        visible: ``[rows, cols]`` bool: those it may attend to (its window less what the mask hides).
        pieces: ``(row0, row1, col0, col1)`` rectangles (ends exclusive) that make up the window on the grid.
        window_index, slot: where the query sits in the block's ``queries`` (``[window, head, slot]``).
        padding: the weight on padding tokens (a grid that is not a multiple of w): real, but not on the map.
        row_edges, col_edges: where this block's window borders cross the grid (:func:`window_edges`).
    """

    weights: np.ndarray
    window: np.ndarray
    visible: np.ndarray
    pieces: tuple[tuple[int, int, int, int], ...]
    window_index: int
    slot: int
    padding: float
    row_edges: tuple[int, ...]
    col_edges: tuple[int, ...]


def window_row(block: WindowBlock, head: int, patch: int) -> WindowRow:
    """Patch ``patch`` (row-major on the stage's grid) as the query of ``head`` in ``block``: its row of the
    pattern put back where each key patch lies on the image (computed for its window only)."""
    rows, cols = block.grid
    if not 0 <= patch < rows * cols:
        raise ValueError(f"patch {patch} is outside the {rows}×{cols} grid")
    w, s = block.window, block.shift
    index, slot = locate(block.grid, w, s, *divmod(patch, cols))
    row = block_pattern(block, head, index)[0, slot]  # [N]
    where = slot_positions(block.grid, w, s)[index]  # [N, 2] on the padded grid
    hp, wp = padded(block.grid, w)
    full, member = np.zeros((hp, wp)), np.zeros((hp, wp), dtype=bool)
    full[where[:, 0], where[:, 1]] = row
    member[where[:, 0], where[:, 1]] = True
    mask = shift_mask(block.grid, w, s)
    seen = np.zeros((hp, wp), dtype=bool)
    seen[where[:, 0], where[:, 1]] = True if mask is None else mask[index, slot] == 0
    outside = (where[:, 0] >= rows) | (where[:, 1] >= cols)
    pieces = tuple(
        (r0, min(r1, rows), c0, min(c1, cols))
        for r0, r1 in _runs(where[:, 0])
        if r0 < rows
        for c0, c1 in _runs(where[:, 1])
        if c0 < cols
    )
    return WindowRow(
        weights=full[:rows, :cols],
        window=member[:rows, :cols],
        visible=seen[:rows, :cols],
        pieces=pieces,
        window_index=int(index),
        slot=int(slot),
        padding=float(row[outside].sum()),
        row_edges=window_edges(rows, hp, w, s),
        col_edges=window_edges(cols, wp, w, s),
    )
