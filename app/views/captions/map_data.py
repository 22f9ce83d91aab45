"""What the Captions page draws from a captioner's trace: one map per written word (α over the L×L grid, or a
pretrained captioner's cross-attention on the patches), β, peaks, and the lesson's nine regions (a 3×3 split: a cell
belongs to the third its centre falls in; on 8×8: cells 0–2, 3–4, 5–7). Pure numpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: the nine regions of a picture, row-major (top row first)
REGIONS = ("top left", "top", "top right", "left", "middle", "right", "bottom left", "bottom", "bottom right")


@dataclass(frozen=True, eq=False)
class CaptionView:
    """One caption's attention, ready to draw (read-only float32 arrays)."""

    words: tuple[str, ...]  # as written, ``<eos>`` included when the model wrote it (that step looks too)
    alphas: np.ndarray  # [word, L, L]: α of the step that wrote each word; row 0 is the top of the picture
    betas: np.ndarray | None  # [word]: β of that step (0–1); None for a pretrained captioner (no gate)
    cell_px: int  # pixels per cell side
    peaks: tuple[int, ...]  # each word's largest-α cell, row-major
    rest: np.ndarray | None = None  # [word]: weight on [CLS], so a map sums to 1 − rest; None for our captioner

    @property
    def grid(self) -> int:
        """L, the side of the grid."""
        return int(self.alphas.shape[-1])

    @property
    def labels(self) -> tuple[str, ...]:
        """``"3 · red"``: a word's place in the caption and the word (one label per step, repeated words apart)."""
        return tuple(f"{t} · {w}" for t, w in enumerate(self.words))

    @property
    def nbytes(self) -> int:
        return int(self.alphas.nbytes + sum(a.nbytes for a in (self.betas, self.rest) if a is not None))

    @property
    def gate(self) -> tuple[str, np.ndarray]:
        """The number shown beside each word's map: β (our captioner's gate) or the weight on [CLS] (a pretrained
        captioner's, what its row leaves off the patches)."""
        return ("β", self.betas) if self.betas is not None else ("α on [CLS]", self.rest)

    def cell(self, index: int) -> tuple[int, int]:
        """``(row, column)`` of cell ``index`` (row-major)."""
        return divmod(int(index), self.grid)

    def at_cell(self, index: int) -> np.ndarray:
        """``[word]``: how much every word's step looks at cell ``index``."""
        r, c = self.cell(index)
        return self.alphas[:, r, c]

    def region(self, word: int) -> int:
        """The region (index into :data:`REGIONS`) of word ``word``'s peak cell."""
        r, c = self.cell(self.peaks[word])
        return region_of(r, c, self.grid)


def caption_view(
    words: tuple[str, ...] | list[str],
    alphas: np.ndarray,
    betas: np.ndarray | None,
    image_size: int,
    rest: np.ndarray | None = None,
) -> CaptionView:
    """A :class:`CaptionView` of the model's own ``alphas``, ``betas`` and ``rest`` over an ``image_size`` picture;
    ``ValueError`` when the arrays do not fit the words or the grid does not divide the picture."""
    a = np.ascontiguousarray(alphas, dtype=np.float32)
    b, r = (None if x is None else np.ascontiguousarray(x, dtype=np.float32) for x in (betas, rest))
    words, (b_shape, r_shape) = tuple(str(w) for w in words), (None if x is None else x.shape for x in (b, r))
    square = a.ndim == 3 and a.shape[1] == a.shape[2]
    if not square or a.shape[0] != len(words) or {b_shape, r_shape} - {None, (len(words),)}:
        need = f"{len(words)} words need alphas [words, L, L] and betas/rest [words]"
        raise ValueError(f"{need}; got {a.shape}, {b_shape} and {r_shape}")
    if image_size % a.shape[1]:
        raise ValueError(f"a {a.shape[1]}×{a.shape[1]} grid does not divide a {image_size}-pixel picture")
    peaks = tuple(int(np.argmax(m)) for m in a.reshape(len(words), -1))
    for x in (a, b, r):
        if x is not None:
            x.flags.writeable = False  # shared by every session that asks for this caption
    return CaptionView(words=words, alphas=a, betas=b, cell_px=image_size // a.shape[1], peaks=peaks, rest=r)


def region_bounds(grid: int) -> list[tuple[int, int]]:
    """``[(start, stop)]`` of cells in each third of a side of ``grid`` cells: those whose centre lies in it."""
    thirds = np.minimum((3 * (np.arange(grid) + 0.5) / grid).astype(int), 2)  # (L,): the third of each cell
    return [(int(np.argmax(thirds == k)), int(grid - np.argmax(thirds[::-1] == k))) for k in range(3)]


def region_of(row: int, col: int, grid: int) -> int:
    """The region (index into :data:`REGIONS`) holding cell ``(row, col)`` of a ``grid``×``grid`` map."""
    third = [next(k for k, (start, stop) in enumerate(region_bounds(grid)) if start <= i < stop) for i in (row, col)]
    return 3 * third[0] + third[1]
