"""Attention of a Vision Transformer laid back onto its patch grid, rollout maps, and an occlusion check.

A ViT's sequence is ``[prefix tokens] + patches`` (prefix = [CLS], plus a distillation token for
distilled DeiT), patches in row-major order. Any attention row ``a`` over that sequence becomes a map::

    map[r, c] = a[n_prefix + r · cols + c]          # [rows, cols], what an overlay draws

Occlusion check (a faithfulness test of an explanation): hide the k patches a map ranks highest,
re-classify, and compare with hiding k random patches or the k lowest-ranked ones. If the map
points at what the model uses, hiding its top patches should hurt the prediction most::

    drop = p(original class | image) − p(original class | image with k patches hidden)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.analysis.rollout import DiscardRule, HeadFusion, rollout
from engine.traces.vision import VisionTrace


def n_prefix(trace: VisionTrace) -> int:
    """Tokens before the first patch (1 for [CLS]; 2 for distilled DeiT's [CLS] + [DIST])."""
    rows, cols = trace.grid
    return len(trace.attention.tokens) - rows * cols


def to_grid(trace: VisionTrace, row: np.ndarray) -> np.ndarray:
    """An attention row over the whole sequence → ``[rows, cols]`` over the patches only."""
    rows, cols = trace.grid
    return np.asarray(row, dtype=np.float64)[n_prefix(trace) :].reshape(rows, cols)


def cls_map(trace: VisionTrace, layer: int, head: int | None = None) -> np.ndarray:
    """How much [CLS] attends to each patch: ``[rows, cols]`` (one head) or ``[head, rows, cols]`` (all)."""
    pattern = trace.attention.pattern(layer, head)  # [q, k] or [head, q, k]
    if head is not None:
        return to_grid(trace, pattern[0])
    return np.stack([to_grid(trace, p[0]) for p in pattern])


def patch_map(trace: VisionTrace, layer: int, head: int, patch: int) -> np.ndarray:
    """How much patch ``patch`` (row-major index) attends to every patch: ``[rows, cols]``."""
    rows, cols = trace.grid
    if not 0 <= int(patch) < rows * cols:
        raise IndexError(f"patch {patch} out of range: the image has {rows * cols} patches (0–{rows * cols - 1})")
    return to_grid(trace, trace.attention.pattern(layer, head)[n_prefix(trace) + int(patch)])


def rollout_map(
    trace: VisionTrace,
    *,
    head_fusion: HeadFusion = "mean",
    discard_ratio: float = 0.0,
    discard_rule: DiscardRule = "all-off-diagonal",
) -> np.ndarray:
    """[CLS]'s row of the full attention rollout (all layers), on the patch grid ``[rows, cols]``.

    The prefix tokens' own share is left out, so the map sums to less than 1. ``discard_rule`` is
    :func:`engine.analysis.rollout.rollout`'s (``"keep-class-token"`` keeps attention to [CLS]).
    """
    maps = [trace.attention.pattern(layer) for layer in range(trace.attention.n_layers)]
    joint = rollout(maps, head_fusion=head_fusion, discard_ratio=discard_ratio, discard_rule=discard_rule)[-1]  # [n, n]
    return to_grid(trace, joint[0])


def hide_patches(image: np.ndarray, grid: tuple[int, int], patch_size: int, patches, fill) -> np.ndarray:
    """A copy of ``image`` (``[H, W]`` or ``[H, W, C]``) with the listed patches set to ``fill``."""
    out = np.array(image, dtype=np.float32, copy=True)
    _, cols = grid
    for p in patches:
        r, c = divmod(int(p), cols)
        out[r * patch_size : (r + 1) * patch_size, c * patch_size : (c + 1) * patch_size] = fill
    return out


@dataclass(frozen=True)
class OcclusionRow:
    """One way of choosing k patches to hide, and what the model said afterwards."""

    strategy: str  # "most attended", "random", "least attended"
    patches: tuple[int, ...]  # row-major patch indices hidden
    probs: np.ndarray  # [n_classes] after hiding
    prediction: str  # top class after hiding
    p_original: float  # probability left for the originally predicted class


@dataclass(frozen=True)
class OcclusionResult:
    """Plain data for a table: the unhidden prediction and one row per strategy."""

    k: int
    original: str  # class predicted with nothing hidden
    p_original: float  # its probability
    probs: np.ndarray  # [n_classes] with nothing hidden
    rows: tuple[OcclusionRow, ...]


def occlusion_check(model, trace: VisionTrace, ranking: np.ndarray, k: int, *, seed: int = 0) -> OcclusionResult:
    """Hide the k top-ranked, k random and k lowest-ranked patches and re-classify each time.

    Args:
        model: the loaded model the trace came from (its adapter has ``classify`` and ``occlusion_fill``).
        trace: the image's trace (``trace.image`` is what the model saw; it is not preprocessed again).
        ranking: ``[rows, cols]`` scores, e.g. :func:`rollout_map`; higher = hidden first.
        k: how many patches to hide (0 … number of patches).
        seed: for the random choice.

    Returns:
        An :class:`OcclusionResult`; with ``k = 0`` every row's probabilities are the plain prediction.

    Raises:
        ValueError: k out of range or a ranking of the wrong shape.
    """
    rows, cols = trace.grid
    n = rows * cols
    scores = np.asarray(ranking, dtype=np.float64)
    if scores.shape != (rows, cols):
        raise ValueError(f"ranking must be [{rows}, {cols}], got {scores.shape}")
    if not 0 <= int(k) <= n:
        raise ValueError(f"k must be between 0 and {n} (the number of patches), got {k}")
    k = int(k)
    order = np.argsort(-scores.ravel(), kind="stable")  # highest first
    choices = {
        "most attended": order[:k],
        "random": np.random.default_rng(seed).permutation(n)[:k],
        "least attended": order[::-1][:k],
    }
    fill = model.adapter.occlusion_fill(model)
    base = np.asarray(model.adapter.classify(model, trace.image), dtype=np.float64)
    top = int(np.argmax(base))
    result = []
    for strategy, patches in choices.items():
        hidden = hide_patches(trace.image, trace.grid, trace.patch_size, patches, fill)
        probs = base if k == 0 else np.asarray(model.adapter.classify(model, hidden), dtype=np.float64)
        result.append(
            OcclusionRow(
                strategy,
                tuple(int(p) for p in sorted(patches)),
                probs,
                trace.labels[int(np.argmax(probs))],
                float(probs[top]),
            )
        )
    return OcclusionResult(k=k, original=trace.labels[top], p_original=float(base[top]), probs=base, rows=tuple(result))
