"""Attention rollout (Abnar & Zuidema, 2020, "Quantifying Attention Flow in Transformers").

Raw attention of one layer says where a token looks *in the layer's input*; after a few layers
those inputs are already mixtures of tokens. Rollout follows the mixing through the stack:

    Â(l) = normalise_rows(0.5 · A(l) + 0.5 · I)         # the residual connection as identity
    R(l) = Â(l) · Â(l−1) · … · Â(0)

``A(l)`` is the layer's attention with its heads fused (mean, max or min). Optionally the weakest
``discard_ratio`` of each layer's off-diagonal weights are dropped before the residual is added
(the "discard" knob popularised for ViT explanations), which sharpens the map.
"""

from __future__ import annotations

from typing import Literal, Sequence

import numpy as np

HeadFusion = Literal["mean", "max", "min"]
FUSIONS: tuple[str, ...] = ("mean", "max", "min")


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


def discard_weakest(attention: np.ndarray, ratio: float) -> np.ndarray:
    """Zero the smallest ``ratio`` fraction of off-diagonal weights of a ``[n, n]`` map (a copy)."""
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"discard ratio must be in [0, 1), got {ratio}")
    out = np.array(attention, dtype=np.float64, copy=True)
    n = out.shape[0]
    off = ~np.eye(n, dtype=bool)
    count = int(off.sum() * ratio)
    if count == 0:
        return out
    values = out[off]
    weakest = np.argsort(values, kind="stable")[:count]
    values[weakest] = 0.0
    out[off] = values
    return out


def rollout(
    layers: Sequence[np.ndarray],
    *,
    head_fusion: HeadFusion = "mean",
    discard_ratio: float = 0.0,
) -> np.ndarray:
    """Attention rollout through every layer.

    Args:
        layers: one attention map per layer, first layer first: ``[head, n, n]`` or ``[n, n]``,
            rows summing to 1 (square: self-attention).
        head_fusion: how heads become one map per layer: ``"mean"`` (the paper), ``"max"`` or ``"min"``.
        discard_ratio: share of each fused layer's off-diagonal weights set to 0 before the
            residual is added (0 keeps everything, as in the paper).

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
        fused = discard_weakest(fuse_heads(attention, head_fusion), discard_ratio)
        if fused.shape[0] != fused.shape[1]:
            raise ValueError(f"rollout needs square self-attention maps, got {fused.shape}")
        step = 0.5 * fused + 0.5 * np.eye(fused.shape[0])
        step = step / step.sum(axis=-1, keepdims=True)
        joint = step if joint is None else step @ joint
        result.append(joint)
    return np.stack(result).astype(np.float32)
