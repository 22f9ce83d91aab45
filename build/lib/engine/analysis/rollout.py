"""Attention rollout (Abnar & Zuidema, 2020, "Quantifying Attention Flow in Transformers").

Raw attention of one layer says where a token looks *in the layer's input*; after a few layers
those inputs are already mixtures of tokens. Rollout follows the mixing through the stack:

    Â(l) = normalise_rows(0.5 · A(l) + 0.5 · I)         # the residual connection as identity
    R(l) = Â(l) · Â(l−1) · … · Â(0)

``A(l)`` is the layer's attention with its heads fused (mean, max or min). Optionally the weakest
``discard_ratio`` of each layer's weights are set to 0 before the residual is added (the "discard"
knob popularised for ViT explanations), which sharpens the map. Which weights may go is the
*discard rule* (:data:`DISCARD_RULES`); the diagonal (a token's weight on itself) always stays:

    all-off-diagonal    candidates: every off-diagonal cell of the map. Attention *to* the class
                        token is discarded like any other weight, so at high ratios most of its
                        column can go (tiny-vit-digits at 0.9: 15 or all 16 of its off-diagonal
                        cells, in every layer).
    keep-class-token    candidates: the off-diagonal cells outside the class token's column
                        (position 0: [CLS] in BERT and ViT; the first token in other models). Every
                        token's weight on the class token is kept; the class token's own row can
                        still lose its weakest weights. vit-explain's rollout states this aim
                        (keep the class token), but its code exempts only the single cell [0, 0]
                        and lets diagonal cells go too.

Either way the discarded count is ``int(ratio · candidates)`` and the weakest candidates go first
(ties broken in row-major order).
"""

from __future__ import annotations

from typing import Literal, Sequence

import numpy as np

HeadFusion = Literal["mean", "max", "min"]
FUSIONS: tuple[str, ...] = ("mean", "max", "min")
DiscardRule = Literal["all-off-diagonal", "keep-class-token"]
#: discard rule → what it may drop (one sentence each, for the UI)
DISCARD_RULES: dict[str, str] = {
    "all-off-diagonal": "drops the weakest share of all off-diagonal weights, attention to the class token included",
    "keep-class-token": "drops the weakest share of the off-diagonal weights outside the class token's column: "
    "every token's attention to the class token (position 0) is kept",
}


def fuse_heads(pattern: np.ndarray, how: HeadFusion = "mean") -> np.ndarray:
    """One layer's ``[head, q, k]`` attention fused over heads into ``[q, k]`` (a 2-D input is returned as is)."""
    pattern = np.asarray(pattern, dtype=np.float64)
    if pattern.ndim == 2:
        return pattern
    if pattern.ndim != 3:
        raise ValueError(f"expected [head, q, k] or [q, k], got shape {pattern.shape}")
    if how == "mean":
        return pattern.mean(axis=0)
    if how == "max":
        return pattern.max(axis=0)
    if how == "min":
        return pattern.min(axis=0)
    raise ValueError(f"head fusion must be one of {FUSIONS}, got {how!r}")


def discard_candidates(n: int, rule: DiscardRule = "all-off-diagonal") -> np.ndarray:
    """Bool ``[n, n]``: the cells ``rule`` may discard (see :data:`DISCARD_RULES`)."""
    if rule not in DISCARD_RULES:
        raise ValueError(f"discard rule must be one of {tuple(DISCARD_RULES)}, got {rule!r}")
    candidates = ~np.eye(n, dtype=bool)
    if rule == "keep-class-token" and n > 0:
        candidates[:, 0] = False
    return candidates


def discard_weakest(attention: np.ndarray, ratio: float, rule: DiscardRule = "all-off-diagonal") -> np.ndarray:
    """Zero the smallest ``ratio`` fraction of the cells ``rule`` may discard in a ``[n, n]`` map (a copy).

    Args:
        attention: one fused layer ``[n, n]``.
        ratio: share of the candidate cells set to 0, in [0, 1).
        rule: ``"all-off-diagonal"`` or ``"keep-class-token"`` (:data:`DISCARD_RULES`).
    """
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"discard ratio must be in [0, 1), got {ratio}")
    out = np.array(attention, dtype=np.float64, copy=True)
    candidates = discard_candidates(out.shape[0], rule)
    count = int(candidates.sum() * ratio)
    if count == 0:
        return out
    values = out[candidates]  # row-major order
    weakest = np.argsort(values, kind="stable")[:count]
    values[weakest] = 0.0
    out[candidates] = values
    return out


def rollout(
    layers: Sequence[np.ndarray],
    *,
    head_fusion: HeadFusion = "mean",
    discard_ratio: float = 0.0,
    discard_rule: DiscardRule = "all-off-diagonal",
) -> np.ndarray:
    """Attention rollout through every layer.

    Args:
        layers: one attention map per layer, first layer first: ``[head, n, n]`` or ``[n, n]``,
            rows summing to 1 (square: self-attention).
        head_fusion: how heads become one map per layer: ``"mean"`` (the paper), ``"max"`` or ``"min"``.
        discard_ratio: share of each fused layer's candidate weights set to 0 before the
            residual is added (0 keeps everything, as in the paper).
        discard_rule: which weights are candidates: ``"all-off-diagonal"`` or ``"keep-class-token"``
            (:data:`DISCARD_RULES`; the module docstring says how they differ).

    Returns:
        ``[n_layers, n, n]``: entry ``l`` is the rollout up to and including layer ``l``; the last is
        the full rollout. Every row sums to 1.

    Example:
        >>> maps = [trace.pattern(layer) for layer in range(trace.n_layers)]
        >>> r = rollout(maps)[-1]       # [n, n]
        >>> r[0, 1:]                     # how much [CLS] draws from each patch/token
    """
    if len(layers) == 0:
        raise ValueError("rollout needs at least one layer")
    result = []
    joint: np.ndarray | None = None
    for attention in layers:
        fused = discard_weakest(fuse_heads(attention, head_fusion), discard_ratio, discard_rule)
        if fused.shape[0] != fused.shape[1]:
            raise ValueError(f"rollout needs square self-attention maps, got {fused.shape}")
        step = 0.5 * fused + 0.5 * np.eye(fused.shape[0])
        step = step / step.sum(axis=-1, keepdims=True)
        joint = step if joint is None else step @ joint
        result.append(joint)
    return np.stack(result).astype(np.float32)
