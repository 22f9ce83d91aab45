"""One head's attention on a long input: the exact pattern, pooled into blocks, one chunk at a time.

``AttentionTrace.pattern`` builds the whole ``[n_q, n_k]`` matrix: 1 GB per head at 16,384 tokens.
The overview never does. It walks the query rows in chunks (a chunk holds at most
:data:`CHUNK_BYTES` of scores), computes each chunk's rows exactly as ``pattern`` does, and keeps
only their pooled cells::

    s       = (Q[rows] Kᵀ) · scale              # [chunk, n_k]
    s       = tanh(s / c) · c                   # logit softcap c, when the layer has one (Gemma 2)
    s       = s − slope · |i − j|               # ALiBi, when the model has it
    s[i, j] = −∞ where blocked                  # causal: j > i + (n_k − n_q); window w: i + (n_k − n_q) − j >= w, or |…| > w without causal; padded keys
    p       = softmax(s) over ALL keys          # the model's real weights: hiding keys never renormalises
                                                # (and a sink logit, gpt-oss: then rows sum below one)
    p[i, j] = p[i, j] · ‖v_j W_O‖               # weighting="contribution": ‖α f(x_j)‖ (Kobayashi et al. 2020)
    p[i, j] = p[i, j] · ‖v_j‖                   # weighting="value": the value's length only, α·‖v‖
    p       = p / max_{j ∈ keys} p[i, j]        # row_scale only ("per-row max" colouring)
    cell(I, J) = max (or mean) of p over query block I × selected-key block J

Block boundaries come from :func:`overview_edges`; a side of the region no longer than ``size``
is not pooled (one cell per row or key). Under a causal mask a chunk computes only the keys its
rows can see: the rest of the row is 0 and costs nothing. Rows equal ``pattern``'s to float32
rounding, except that weights below ~1e-33 come out as exactly 0: they would be subnormal floats,
which the CPU computes about ten times slower (a peaked head at 16k tokens has millions).

Memory: Q and K of the head, one norm per key for weighting="value" / "contribution" (the trace keeps
‖v_j W_O‖ per head: ``AttentionTrace.value_out_norms``), one chunk of scores, the output
(O(n·d + chunk·n + size²)).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import index
from typing import Literal

import numpy as np

Reduce = Literal["max", "mean"]
REDUCES: tuple[str, ...] = ("max", "mean")
#: "attention": the weights α_ij; "contribution": ‖α_ij f_h(x_j)‖ = α_ij·‖v_j W_O^h‖, what key j adds to
#: query i's output through head h (Kobayashi et al. 2020, "Attention is Not Only a Weight: Analyzing
#: Transformers with Vector Norms"; ``AttentionTrace.contributions``); "value": α_ij·‖v_j‖, the value's
#: length only, without the output projection (not Kobayashi et al.'s measure)
Weighting = Literal["attention", "value", "contribution"]
WEIGHTINGS: tuple[str, ...] = ("attention", "value", "contribution")
#: the most bytes of scores one chunk of query rows holds (a few more arrays of this size live briefly)
CHUNK_BYTES = 4 * 2**20


def overview_edges(n: int, size: int) -> np.ndarray:
    """Boundaries of ``min(n, size)`` blocks covering ``0 … n``, as even as possible.

    Args:
        n: items to split (rows or keys), at least 1.
        size: the most blocks wanted, at least 1.

    Returns:
        int64 array of length ``min(n, size) + 1``, from 0 to ``n``, strictly increasing: block
        ``b`` is ``edges[b]:edges[b + 1]`` and holds at least one item.

    Example:
        >>> overview_edges(10, 4).tolist()
        [0, 2, 5, 7, 10]
        >>> overview_edges(3, 1024).tolist()   # n ≤ size: one block per item
        [0, 1, 2, 3]
    """
    n, size = index(n), index(size)
    if n < 1 or size < 1:
        raise ValueError(f"overview_edges needs n >= 1 and size >= 1, got n={n}, size={size}")
    m = min(n, size)
    return np.linspace(0, n, m + 1).astype(np.int64)


@dataclass(frozen=True)
class HeadRows:
    """What one head's pattern rows are computed from: Q, K, the scale and the masking rules (no n×n array);
    ``AttentionTrace.head_rows`` makes it."""

    q: np.ndarray  # [n_q, d_head] float32
    k: np.ndarray  # [n_k, d_head] float32
    scale: np.float32
    causal: bool
    padding: np.ndarray | None  # [n_k] bool, None when no key is padded
    softcap: np.float32 | None  # logit cap: s = tanh(s / cap) · cap after scaling
    window: int | None  # sliding window: row i sees keys j with 0 <= i + offset − j < w (causal), |…| <= w (not)
    slope: np.float32 | None  # ALiBi slope of this head
    relative: np.ndarray | None = (
        None  # T5's relative bias of this head, [n_q + n_k − 1]: key j of row i adds [j − i + n_q − 1]
    )
    sink: np.float32 | None = None  # a learned sink logit (gpt-oss): in each row's softmax, given to no key

    @property
    def n_q(self) -> int:
        return self.q.shape[0]

    @property
    def n_k(self) -> int:
        return self.k.shape[0]

    def visible(self, stop: int) -> int:
        """How many leading keys rows ``< stop`` may see: all of them unless causal."""
        if not self.causal:
            return self.n_k
        return int(np.clip(stop + self.n_k - self.n_q, 0, self.n_k))


def _chunk_rows(n_k: int) -> int:
    return max(1, CHUNK_BYTES // (4 * max(n_k, 1)))


def _rows(h: HeadRows, start: int, stop: int, buffer: np.ndarray | None = None) -> np.ndarray:
    """Exact pattern rows ``start:stop`` over the keys they may see: ``[stop − start, visible(stop)]``.

    Keys from ``visible(stop)`` on are blocked for every one of these rows (their weight is 0).
    The arithmetic follows ``AttentionTrace.scores`` / ``pattern`` step by step, in float32, with
    one addition: weights that would be subnormal are flushed to 0 (see the module docstring).
    """
    n_rows, n_keys = stop - start, h.visible(stop)
    if buffer is not None and buffer.size >= n_rows * n_keys:
        s = buffer[: n_rows * n_keys].reshape(n_rows, n_keys)
    else:
        s = np.empty((n_rows, n_keys), dtype=np.float32)
    if n_keys == 0:
        return s
    np.matmul(h.q[start:stop], h.k[:n_keys].T, out=s)  # [rows, keys] raw
    s *= h.scale  # scaled
    if h.softcap is not None:  # capped (Gemma 2), before bias and mask as in AttentionTrace.scores
        s /= h.softcap
        np.tanh(s, out=s)
        s *= h.softcap
    if h.slope is not None:  # + ALiBi bias −slope·|i − j|, positions aligned at the end as in bias()
        q_pos = np.arange(start, stop, dtype=np.float32) + np.float32(h.n_k - h.n_q)
        distance = np.subtract.outer(q_pos, np.arange(n_keys, dtype=np.float32))  # one chunk-sized temporary
        np.abs(distance, out=distance)
        np.negative(distance, out=distance)
        distance *= h.slope
        s += distance
        del distance
    if h.relative is not None:  # + T5's relative bias, looked up by j − i (one chunk-sized index array)
        rel = np.subtract.outer(np.arange(n_keys), np.arange(start, stop)).T + (h.n_q - 1)
        s += h.relative[rel]
        del rel
    if h.causal:  # row i sees keys j <= i + offset; only the chunk's last keys can be blocked
        first_blocked = np.arange(start, stop) + (h.n_k - h.n_q) + 1
        for r in np.flatnonzero(first_blocked < n_keys):
            s[r, max(first_blocked[r], 0) :] = -np.inf
    if h.window is not None:  # keys j <= i + offset − w (causal) or < i + offset − w (not): each row's start
        last_blocked = np.arange(start, stop) + (h.n_k - h.n_q) - h.window - (0 if h.causal else 1)
        for r in np.flatnonzero(last_blocked >= 0):
            s[r, : min(last_blocked[r] + 1, n_keys)] = -np.inf
        if not h.causal:  # and keys j > i + offset + w: each row's end
            first_blocked = np.arange(start, stop) + (h.n_k - h.n_q) + h.window + 1
            for r in np.flatnonzero(first_blocked < n_keys):
                s[r, max(first_blocked[r], 0) :] = -np.inf
    if h.padding is not None:
        s[:, h.padding[:n_keys]] = -np.inf
    row_max = s.max(axis=1, keepdims=True)
    if h.sink is not None:
        np.maximum(row_max, h.sink, out=row_max)
    row_max[~np.isfinite(row_max)] = 0.0  # a fully blocked row: exp(−∞) = 0 everywhere
    s -= row_max
    # flush what would be subnormal (x86 computes those ~10× slower): exp(s) <= exp(floor) → 0,
    # blocked cells (−∞) included; the floor keeps every weight left, divided by the row total, normal
    floor = np.float32(np.log(np.finfo(np.float32).tiny) + np.log(h.n_k) + 1.0)
    np.maximum(s, floor, out=s)
    np.exp(s, out=s)
    np.copyto(s, np.float32(0.0), where=s <= np.exp(floor))
    total = s.sum(axis=1, keepdims=True)
    if h.sink is not None:  # the sink's share is in the total: the rows keep their sum below one
        total += np.exp(h.sink - row_max)
    total[total <= 0] = 1.0
    s /= total
    return s


def _pool_rows(part: np.ndarray, bounds: np.ndarray, pool: np.ufunc) -> np.ndarray:
    """``pool`` (max or add) over the rows ``bounds[i]:bounds[i + 1]`` of ``part``: ``[len(bounds) − 1, keys]``.

    A loop of contiguous reductions: ``reduceat`` along axis 0 ran ~10× slower.
    """
    out = np.empty((len(bounds) - 1, part.shape[1]), dtype=np.float32)
    for i in range(len(bounds) - 1):
        pool.reduce(part[bounds[i] : bounds[i + 1]], axis=0, out=out[i])
    return out


def _check_range(name: str, value: tuple[int, int] | None, n: int) -> tuple[int, int]:
    if value is None:
        return 0, n
    try:
        start, stop = (index(x) for x in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a (start, stop) pair of integers, got {value!r}") from None
    if start >= stop:
        raise ValueError(f"{name} {value!r} is empty: start must be below stop")
    if start < 0 or stop > n:
        raise IndexError(f"{name} {value!r} is outside 0–{n} (this side has {n} positions)")
    return start, stop


def _check_keys(keys: np.ndarray | None, k_start: int, k_stop: int) -> np.ndarray | None:
    if keys is None:
        return None
    keys = np.asarray(keys)
    if keys.ndim != 1 or keys.size == 0 or not np.issubdtype(keys.dtype, np.integer):
        raise ValueError(f"keys must be a non-empty 1-D array of integer key positions, got {keys!r}")
    if np.any(np.diff(keys) <= 0):
        raise ValueError("keys must be sorted in increasing order, without repeats")
    if keys[0] < k_start or keys[-1] >= k_stop:
        raise ValueError(f"keys must lie in k_range [{k_start}, {k_stop}); got {keys[0]}…{keys[-1]}")
    return keys.astype(np.int64)


def overview(
    h: HeadRows,
    size: int = 1024,
    reduce: Reduce = "max",
    *,
    q_range: tuple[int, int] | None = None,
    k_range: tuple[int, int] | None = None,
    keys: np.ndarray | None = None,
    row_scale: bool = False,
    norms: np.ndarray | None = None,
) -> np.ndarray:
    """One head's exact pattern over a region, pooled to at most ``size`` × ``size`` cells
    (``AttentionTrace.overview``, which makes ``h`` and ``norms`` from the layer, head and weighting).

    Args:
        h: the head (:meth:`AttentionTrace.head_rows`).
        size: the most cells per side; a side of the region with ``size`` positions or fewer is
            not pooled.
        reduce: ``"max"`` (a sharp one-token pattern stays visible) or ``"mean"`` of each block.
        q_range: ``(start, stop)`` query rows to show; default all.
        k_range: ``(start, stop)`` keys to show; default all.
        keys: sorted key positions inside ``k_range`` to keep (e.g. without ``[CLS]``/``[SEP]``);
            the softmax still runs over every key of the row, so hidden keys keep their weight.
        row_scale: divide each exact row by its maximum over the selected keys before pooling
            (rows with no weight there stay 0), so one dominant sink column does not wash out
            every other cell.
        norms: one factor per key that each weight is multiplied by before pooling, or None (the
            weights α_ij): ``weighting="contribution"`` passes ‖v_j W_O^h‖, the length of what key ``j``
            adds to query ``i``'s output through this head (Kobayashi et al. 2020; a sink key with a large
            weight and a short value vector adds little); ``"value"`` passes ‖v_j‖ (the value's length
            only). ``row_scale`` then divides by the row's largest weighted value.

    Returns:
        float32 ``[min(n_q', size), min(n_k', size)]``, with ``n_q'`` the rows in ``q_range`` and
        ``n_k'`` the selected keys; cell ``(i, j)`` pools query block ``i`` × key block ``j``
        (boundaries: :func:`overview_edges` over the region and over the selected keys).

    Raises:
        ValueError: ``reduce`` or ``size`` invalid, an empty range, ``keys`` unsorted or outside
            ``k_range``.
        IndexError: a range out of bounds.

    Example:
        >>> grid = tr.overview(-1, 0, size=256)                     # 16,384 tokens → [256, 256]
        >>> zoom = tr.overview(-1, 0, q_range=(8000, 8100), k_range=(0, 300))  # exact [100, 300]
    """
    if reduce not in REDUCES:
        raise ValueError(f"reduce must be one of {REDUCES}, got {reduce!r}")
    try:
        size = index(size)
    except TypeError:
        raise ValueError(f"size must be a whole number of at least 1, got {size!r}") from None
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    q0, q1 = _check_range("q_range", q_range, h.n_q)
    k0, k1 = _check_range("k_range", k_range, h.n_k)
    keys = _check_keys(keys, k0, k1)
    n_sel = k1 - k0 if keys is None else keys.size
    row_edges = overview_edges(q1 - q0, size) + q0  # absolute query positions
    col_edges = overview_edges(n_sel, size)  # positions in the list of selected keys
    pool_rows = len(row_edges) - 1 < q1 - q0
    pool_cols = len(col_edges) - 1 < n_sel
    is_max = reduce == "max"
    pool, acc = (np.maximum, np.float32) if is_max else (np.add, np.float64)  # means: sums, divided at the end
    out = np.zeros((len(row_edges) - 1, len(col_edges) - 1), dtype=acc)

    chunk = _chunk_rows(h.n_k)
    buffer = np.empty(chunk * h.n_k, dtype=np.float32)
    start = q0
    while start < q1:
        # end the chunk on a block edge when a whole block fits, so most blocks come from one chunk
        limit = min(start + chunk, q1)
        edge = int(row_edges[np.searchsorted(row_edges, limit, side="right") - 1])
        stop = edge if edge > start else limit
        p = _rows(h, start, stop, buffer)  # [rows, visible keys]
        # the selected keys this chunk computed (a prefix): the others are blocked for all its rows (0)
        n_avail = int(np.clip(p.shape[1] - k0, 0, n_sel) if keys is None else np.searchsorted(keys, p.shape[1]))
        if n_avail:
            lo = k0 if keys is None else int(keys[0])
            cols = None if keys is None else keys[:n_avail] - lo  # picked from the span lo…hi below
            hi = lo + (n_avail if cols is None else int(cols[-1]) + 1)
            part = p[:, lo:hi]  # a view of the buffer
            if norms is not None:
                part *= norms[lo:hi]  # α_ij·‖v_j‖, in place
            if row_scale:
                peak = (part if cols is None else part[:, cols]).max(axis=1, keepdims=True)
                peak[peak <= 0] = 1.0
                part /= peak
            # the output blocks this chunk touches: b0 may have begun in the previous chunk
            b0 = int(np.searchsorted(row_edges, start, side="right")) - 1
            b1 = int(np.searchsorted(row_edges, stop, side="left"))
            if pool_rows:
                bounds = np.append(np.maximum(row_edges[b0:b1], start), stop) - start
                part = _pool_rows(part, bounds, pool)
            if cols is not None:
                part = part[:, cols]
            if pool_cols:
                part = pool.reduceat(part, col_edges[col_edges < n_avail], axis=1, dtype=acc)
            target = out[b0:b1, : part.shape[1]]
            if is_max:
                np.maximum(target, part, out=target)
            else:
                target += part
        start = stop

    if is_max:
        return out
    rows_per_block = np.diff(row_edges).astype(np.float64)
    keys_per_block = np.diff(col_edges).astype(np.float64)
    return (out / np.outer(rows_per_block, keys_per_block)).astype(np.float32)


def pattern_rows(h: HeadRows, start: int, stop: int, norms: np.ndarray | None = None) -> np.ndarray:
    """Exact pattern rows ``start:stop`` of one head over all keys, computed a chunk at a time.

    Args:
        h: the head (:meth:`AttentionTrace.head_rows`).
        start: first query row.
        stop: one past the last query row.
        norms: one factor per key each weight is multiplied by (see :func:`overview`), or None.

    Returns:
        float32 ``[stop − start, n_k]``: ``trace.pattern(layer, head)[start:stop]`` (to float32
        rounding; weights below ~1e-33 are 0), times ``norms``.

    Example:
        >>> row = tr.pattern_rows(-1, 0, 9000, 9001)[0]   # one query token's weights, 16,384 keys
    """
    start, stop = _check_range("rows", (start, stop), h.n_q)
    out = np.zeros((stop - start, h.n_k), dtype=np.float32)
    chunk = _chunk_rows(h.n_k)
    for r0 in range(start, stop, chunk):
        r1 = min(r0 + chunk, stop)
        p = _rows(h, r0, r1)
        if norms is not None:
            p *= norms[: p.shape[1]]
        out[r0 - start : r1 - start, : p.shape[1]] = p
    return out
