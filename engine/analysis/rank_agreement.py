"""Do two importance scores put the tokens in the same order? Spearman's ρ and Kendall's τ_b, in numpy.

Both compare *orders*, not sizes, so methods on different scales (attention weights, log-probability
changes, gradients) can be compared::

    Spearman  ρ = Pearson correlation of the ranks (ties get the mean of the ranks they span)
    Kendall   τ_b = (C − D) / √((n₀ − T_a)(n₀ − T_b))

over the n(n−1)/2 pairs of tokens: C pairs both scores order the same way (concordant), D the opposite
way, n₀ = n(n−1)/2, T_a / T_b the pairs tied in the first / second score (τ_b, the variant with ties, as
``scipy.stats.kendalltau``'s default). Both are 1 for the same order, −1 for the reversed one, and NaN
when a score gives every token the same value (no order to compare), holds a NaN, or fewer than two
tokens are kept.
Written here so the engine needs no SciPy; tested against hand-worked examples.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1 … n of ``x`` (smallest first), tied values sharing the mean of their ranks (float64)."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    out = np.empty(len(x), dtype=np.float64)
    sorted_x = x[order]
    start = 0
    while start < len(x):
        stop = start + 1
        while stop < len(x) and sorted_x[stop] == sorted_x[start]:
            stop += 1
        out[order[start:stop]] = (start + 1 + stop) / 2.0  # mean of the ranks start+1 … stop
        start = stop
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's ρ of two scores of the same tokens (NaN: fewer than two tokens, a constant score, or a NaN)."""
    ra, rb = ranks(a), ranks(b)
    if len(ra) != len(rb):
        raise ValueError(f"scores of {len(ra)} and {len(rb)} tokens")
    if len(ra) < 2 or np.isnan(a).any() or np.isnan(b).any():  # a NaN has no rank (argsort would put it last)
        return float("nan")
    da, db = ra - ra.mean(), rb - rb.mean()
    denominator = np.sqrt((da * da).sum() * (db * db).sum())
    return float((da * db).sum() / denominator) if denominator > 0 else float("nan")


def kendall(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's τ_b of two scores of the same tokens (NaN: fewer than two tokens, or a constant score).
    O(n²) pairs: meant for a sentence, not a book."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) != len(b):
        raise ValueError(f"scores of {len(a)} and {len(b)} tokens")
    n = len(a)
    if n < 2:
        return float("nan")
    i, j = np.triu_indices(n, k=1)  # every pair once
    sa, sb = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    n0 = n * (n - 1) / 2
    untied_a, untied_b = n0 - np.sum(sa == 0), n0 - np.sum(sb == 0)
    if untied_a == 0 or untied_b == 0:
        return float("nan")
    return float(np.sum(sa * sb) / np.sqrt(untied_a * untied_b))  # C − D: +1 per concordant, −1 per discordant


def agreement(scores: Mapping[str, np.ndarray], keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Spearman and Kendall matrices ``[method, method]`` of ``scores`` (in its order) over the tokens ``keep``.

    Args:
        scores: method name → one score per token (already turned into what is ranked, e.g. absolute values).
        keep: bool per token, the tokens compared (default: all).

    Returns:
        ``(spearman [m, m], kendall [m, m])`` float64, symmetric, 1 on the diagonal where defined.
    """
    names = list(scores)
    rows = [np.asarray(scores[name], dtype=np.float64) for name in names]
    if keep is not None:
        rows = [row[np.asarray(keep, dtype=bool)] for row in rows]
    m = len(names)
    rho, tau = np.full((m, m), np.nan), np.full((m, m), np.nan)
    for p in range(m):
        for q in range(p, m):
            rho[p, q] = rho[q, p] = spearman(rows[p], rows[q])
            tau[p, q] = tau[q, p] = kendall(rows[p], rows[q])
    return rho, tau
