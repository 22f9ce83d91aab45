"""Per-head attention metrics: which kind of pattern does a head draw?

For one head's pattern ``w`` ``[q, k]`` (rows sum to 1, blocked cells 0), each metric is a per-row
quantity averaged over the query rows ``i`` (rows whose keys are all blocked are skipped)::

    entropy         H(i) = −Σ_j w(i,j) ln w(i,j)           nats (bits = nats / ln 2)
    mean distance   D(i) = Σ_j w(i,j) · |i − j|            tokens
    sink share      S(i) = Σ_{j ∈ sinks} w(i,j)            sinks: marker tokens and the first token
    previous token  P(i) = w(i, i−1)                       rows i ≥ 1
    duplicate token U(i) = Σ_{j < i, t_j = t_i} w(i,j)       rows whose token t_i occurred before
    self            w(i, i)
    next token      N(i) = w(i, i+1)                       rows i ≤ n−2
    broadness       B(i) = H(i) / ln k(i)                  k(i): keys row i may see (rows with k(i) ≥ 2)
    alignment       A = 1 − B                              cross-attention only

Distance, previous, self and next need positions that line up (square self-attention); for
cross-attention they are NaN ("n/a"), and alignment (sharp attention from each target token to a
few source tokens, as in word alignment) is measured instead; for self-attention alignment is NaN.
A head is labelled with the pattern whose score is largest: previous-token (P), first-token/sink
(S), broad (B), self, next-token (N), alignment (A); ties go to the earlier one in that list.

Every function takes ``patterns`` of shape ``[..., q, k]`` (one head, a layer, or all layers at
once) and returns the metric with the last two axes reduced. Pure numpy.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

LN2 = float(np.log(2.0))

#: label → the metric whose value is that label's score
LABELS: dict[str, str] = {
    "previous-token": "previous",
    "first-token/sink": "sink",
    "broad": "broad",
    "self": "self",
    "next-token": "next",
    "alignment": "alignment",
}
SQUARE_ONLY: tuple[str, ...] = ("mean_distance", "previous", "self", "next")
CROSS_ONLY: tuple[str, ...] = ("alignment",)


def sink_positions(special: Sequence[bool]) -> tuple[int, ...]:
    """Key positions that count as "sinks": every marker token ([CLS], [SEP], <s>, <bos>, …) and position 0.

    Unknown-word tokens ([UNK], <unk>) are not sinks: they stand for words of the user's text, and
    ``Tokens.special`` does not flag them (:func:`engine.text.special_flags`).

    Args:
        special: one flag per key token (``Tokens.special``).

    Returns:
        Sorted positions; empty only when there are no tokens.
    """
    if len(special) == 0:
        return ()
    return tuple(sorted({0} | {i for i, flag in enumerate(special) if flag}))


def _as_array(patterns: np.ndarray) -> np.ndarray:
    p = np.asarray(patterns, dtype=np.float64)
    if p.ndim < 2:
        raise ValueError(f"expected [..., q, k] attention patterns, got shape {p.shape}")
    return p


def _row_mean(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Mean over the last axis of ``values`` where ``valid`` (broadcast) is True; NaN when no row is valid."""
    valid = np.broadcast_to(valid, values.shape)
    count = valid.sum(axis=-1)
    total = np.where(valid, values, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _live_rows(p: np.ndarray) -> np.ndarray:
    """``[..., q]`` True for rows that carry weight (a fully blocked row is all zeros)."""
    return p.sum(axis=-1) > 0.5


def row_entropy(patterns: np.ndarray) -> np.ndarray:
    """Entropy of every row in nats, ``[..., q]`` (0 · ln 0 = 0)."""
    p = _as_array(patterns)
    return -np.einsum("...ij,...ij->...i", p, np.log(np.where(p > 0, p, 1.0)))


def entropy(patterns: np.ndarray, *, bits: bool = False) -> np.ndarray:
    """Mean row entropy, in nats (or bits with ``bits=True``): 0 for one-hot rows, ln k for uniform rows."""
    p = _as_array(patterns)
    h = _row_mean(row_entropy(p), _live_rows(p))
    return h / LN2 if bits else h


def _require_square(p: np.ndarray, name: str) -> None:
    if p.shape[-1] != p.shape[-2]:
        raise ValueError(f"{name} needs square self-attention [n, n], got {p.shape[-2:]}")


def mean_distance(patterns: np.ndarray) -> np.ndarray:
    """Mean attention distance Σ_j w(i,j)|i−j| averaged over query rows, in tokens (square only)."""
    p = _as_array(patterns)
    _require_square(p, "mean distance")
    n = p.shape[-1]
    idx = np.arange(n)
    dist = np.abs(idx[:, None] - idx[None, :]).astype(np.float64)
    return _row_mean(np.einsum("...ij,ij->...i", p, dist), _live_rows(p))


def sink_share(patterns: np.ndarray, positions: Iterable[int]) -> np.ndarray:
    """Mean share of each row's weight on the key ``positions`` (marker tokens / first token)."""
    p = _as_array(patterns)
    pos = sorted({int(j) for j in positions if 0 <= int(j) < p.shape[-1]})
    share = p[..., pos].sum(axis=-1) if pos else np.zeros(p.shape[:-1])
    return _row_mean(share, _live_rows(p))


def offset_share(patterns: np.ndarray, offset: int) -> np.ndarray:
    """Mean weight on key ``i + offset`` over the rows ``i`` that have such a key (square only).

    ``offset = -1``: previous token; ``0``: itself; ``+1``: next token.
    """
    p = _as_array(patterns)
    _require_square(p, "a diagonal share")
    n = p.shape[-1]
    rows = np.arange(max(0, -offset), min(n, n - offset))
    if rows.size == 0:
        return np.full(p.shape[:-2], np.nan)
    values = p[..., rows, rows + offset]  # [..., len(rows)]
    return _row_mean(values, _live_rows(p)[..., rows])


def duplicate_share(patterns: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """Mean weight on earlier copies of the query's own token, over the rows whose token occurred before (square only).

    Args:
        patterns: ``[..., n, n]``.
        ids: the ``n`` token ids (what makes two positions "the same token").

    Returns:
        ``[...]``; NaN when no token repeats.
    """
    p = _as_array(patterns)
    _require_square(p, "duplicate-token share")
    t = np.asarray(ids)
    if t.shape != (p.shape[-1],):
        raise ValueError(f"{t.shape[0] if t.ndim == 1 else t.shape} token ids for a pattern of {p.shape[-1]} positions")
    earlier = (t[:, None] == t[None, :]) & np.tri(t.size, k=-1, dtype=bool)  # [q, k]: key j < i holds i's token
    rows = earlier.any(axis=-1)
    return _row_mean(np.einsum("...ij,ij->...i", p, earlier.astype(np.float64)), rows & _live_rows(p))


def broadness(
    patterns: np.ndarray, blocked: np.ndarray | None = None, *, entropies: np.ndarray | None = None
) -> np.ndarray:
    """Mean normalised entropy H(i) / ln k(i) in [0, 1]: 1 when a row spreads evenly over every key it may see.

    Args:
        patterns: ``[..., q, k]``.
        blocked: bool ``[q, k]``, True where the mask blocks a key (None: nothing blocked).
        entropies: :func:`row_entropy` of ``patterns`` when already computed.
    """
    p = _as_array(patterns)
    n_q, n_k = p.shape[-2:]
    allowed = np.full(n_q, n_k) if blocked is None else (~np.asarray(blocked, dtype=bool)).sum(axis=-1)
    allowed = np.broadcast_to(allowed, p.shape[:-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (row_entropy(p) if entropies is None else entropies) / np.log(np.maximum(allowed, 2))
    return _row_mean(ratio, _live_rows(p) & (allowed >= 2))


def head_metrics(
    patterns: np.ndarray,
    sinks: Iterable[int],
    *,
    blocked: np.ndarray | None = None,
    square: bool = True,
) -> dict[str, np.ndarray]:
    """Every metric for every head at once.

    Args:
        patterns: ``[..., q, k]``, e.g. ``[layer, head, q, k]``.
        sinks: key positions of marker tokens and the first token (:func:`sink_positions`).
        blocked: bool ``[q, k]`` mask (True = blocked), for broadness.
        square: False for cross-attention (queries and keys are different sequences): the
            position-based metrics are NaN and ``alignment`` is measured.

    Returns:
        ``{"entropy", "entropy_bits", "mean_distance", "sink", "previous", "self", "next", "broad",
        "alignment"}``, each shaped like ``patterns`` without its last two axes.
    """
    p = _as_array(patterns)
    nan = np.full(p.shape[:-2], np.nan)
    rows = row_entropy(p)
    ent = _row_mean(rows, _live_rows(p))
    out = {
        "entropy": ent,
        "entropy_bits": ent / LN2,
        "mean_distance": mean_distance(p) if square else nan,
        "sink": sink_share(p, sinks),
        "previous": offset_share(p, -1) if square else nan,
        "self": offset_share(p, 0) if square else nan,
        "next": offset_share(p, 1) if square else nan,
        "broad": broadness(p, blocked, entropies=rows),
    }
    out["alignment"] = nan if square else 1.0 - out["broad"]
    return out


def label_heads(metrics: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The pattern each head matches best and its score.

    Args:
        metrics: from :func:`head_metrics`.

    Returns:
        ``(labels, scores)``: an object array of label strings (keys of :data:`LABELS`) and a float
        array of the winning scores, both shaped like one metric. NaN scores (n/a) never win.
    """
    names = list(LABELS)
    stacked = np.stack([np.asarray(metrics[LABELS[name]], dtype=np.float64) for name in names], axis=-1)
    filled = np.where(np.isfinite(stacked), stacked, -np.inf)
    best = np.argmax(filled, axis=-1)
    scores = np.take_along_axis(filled, best[..., None], axis=-1)[..., 0]
    labels = np.asarray(np.array(names, dtype=object)[best], dtype=object)
    return labels, np.asarray(np.where(np.isfinite(scores), scores, np.nan))
