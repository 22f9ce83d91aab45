"""How alike are two heads? Jensen–Shannon divergence between their attention patterns.

For two rows (distributions over keys) ``p`` and ``q`` with ``m = (p + q) / 2``::

    JS(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m) = H(m) − ½ (H(p) + H(q))      natural log, 0 ≤ JS ≤ ln 2

Two heads' divergence is the mean of JS over the query rows they share. The heads are then put in
an order where similar heads sit together: hierarchical clustering with average linkage and the
optimal leaf ordering (scipy). Long inputs can be coarsened first (:func:`coarsen`): a sample of
query rows, and keys summed into bins (each row stays a distribution).
"""

from __future__ import annotations

import numpy as np

LN2 = float(np.log(2.0))


def _plogp(x: np.ndarray) -> np.ndarray:
    return x * np.log(np.where(x > 0, x, 1.0))


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen–Shannon divergence (natural log) along the last axis; rows must sum to 1.

    Returns:
        ``[...]``: 0 for equal rows, at most ln 2 (rows with disjoint support).
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    m = 0.5 * (p + q)
    js = -_plogp(m).sum(-1) + 0.5 * (_plogp(p).sum(-1) + _plogp(q).sum(-1))
    return np.clip(js, 0.0, LN2)


def head_divergence(patterns: np.ndarray) -> np.ndarray:
    """Pairwise mean-row JS divergence between heads.

    Args:
        patterns: ``[n_heads, q, k]`` (e.g. every layer's heads flattened layer-major).

    Returns:
        ``[n_heads, n_heads]`` symmetric, 0 on the diagonal. Rows that are all zero (fully blocked)
        in either head are left out of the mean.
    """
    p = np.asarray(patterns, dtype=np.float64)
    if p.ndim != 3:
        raise ValueError(f"expected [n_heads, q, k], got shape {p.shape}")
    n = p.shape[0]
    neg_h = _plogp(p).sum(-1)  # [n, q]: −H of every row
    live = p.sum(-1) > 0.5  # [n, q]
    out = np.zeros((n, n))
    for a in range(n):
        m = 0.5 * (p[a][None] + p[a:])  # [n − a, q, k]
        js = -_plogp(m).sum(-1) + 0.5 * (neg_h[a][None] + neg_h[a:])  # [n − a, q]
        both = live[a][None] & live[a:]
        count = both.sum(-1)
        mean = np.where(count > 0, np.where(both, js, 0.0).sum(-1) / np.maximum(count, 1), 0.0)
        out[a, a:] = mean
        out[a:, a] = mean
    np.fill_diagonal(out, 0.0)
    return np.clip(out, 0.0, LN2)


def coarsen(patterns: np.ndarray, max_rows: int = 64, max_keys: int = 64) -> tuple[np.ndarray, bool]:
    """Shrink ``[..., q, k]`` patterns for a cheaper comparison.

    Keeps at most ``max_rows`` evenly spaced query rows and sums keys into at most ``max_keys``
    contiguous bins, so every row still sums to 1.

    Returns:
        ``(smaller, changed)``.
    """
    p = np.asarray(patterns)
    n_q, n_k = p.shape[-2:]
    changed = False
    if n_q > max_rows:
        rows = np.unique(np.linspace(0, n_q - 1, max_rows).round().astype(int))
        p = p[..., rows, :]
        changed = True
    if n_k > max_keys:
        edges = np.linspace(0, n_k, max_keys + 1).astype(int)[:-1]
        p = np.add.reduceat(p, edges, axis=-1)
        changed = True
    return p, changed


def cluster_order(distance: np.ndarray) -> np.ndarray:
    """An order of the items that puts similar ones next to each other.

    Args:
        distance: ``[n, n]`` symmetric, non-negative, 0 on the diagonal.

    Returns:
        A permutation of ``range(n)``: the leaves of an average-linkage dendrogram with the
        optimal leaf ordering.
    """
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    d = np.asarray(distance, dtype=np.float64)
    n = d.shape[0]
    if d.shape != (n, n):
        raise ValueError(f"distance must be square, got {d.shape}")
    if n < 3:
        return np.arange(n)
    d = np.clip(0.5 * (d + d.T), 0.0, None)
    np.fill_diagonal(d, 0.0)
    tree = linkage(squareform(d, checks=False), method="average", optimal_ordering=True)
    return leaves_list(tree).astype(int)
