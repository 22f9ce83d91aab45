"""Scaled dot-product attention, one named step at a time (for teaching; pure numpy).

For queries Q ``[n_q, d]``, keys K ``[n_k, d]`` and values V ``[n_k, d_v]``::

    raw     = Q Kᵀ                         # q(i)·k(j): how well query i matches key j
    scaled  = raw · scale                  # scale = 1/√d_k in the paper; the model's own in a trace
    masked  = scaled + bias + mask         # bias: ALiBi's −m·|i−j| (optional); mask: 0 or −∞
    weights = softmax(masked, axis=-1)     # each row sums to 1; −∞ gives weight exactly 0
    z       = weights V                    # z(i) = Σ_j weights(i, j) · v(j)

i.e. ``softmax(QKᵀ/√d_k + M) V`` (Vaswani et al., 2017). Every intermediate is kept in an
:class:`AttentionSteps` record so a page can show each one. :func:`query_steps` reads one query
row's steps from an :class:`~engine.traces.attention.AttentionTrace` (its Q, K, V, scale, mask and bias), and
must agree with ``trace.scores()`` and ``trace.pattern()``. :func:`to_matrix` validates numbers a
person typed (the Step-by-step calculator) and :func:`calculator_example` gives its default tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.records import EngineError
from engine.traces.attention import AttentionTrace
from engine.traces.kinds import check_pattern

#: largest absolute value the calculator accepts (exp() of bigger scores overflows nothing here,
#: but such numbers teach nothing and make every weight 0 or 1)
CALC_LIMIT = 1000.0


class StepInputError(EngineError, ValueError):
    """Numbers typed into the calculator are missing, not finite, out of range or of the wrong size."""


@dataclass(frozen=True, eq=False)
class AttentionSteps:
    """Every intermediate of ``softmax(Q Kᵀ · scale + bias + mask) V``, as float64 arrays.

    Attributes:
        q: ``[n_q, d]`` queries (one row when read for one query of a trace).
        k: ``[n_k, d]`` keys.
        v: ``[n_k, d_v]`` values.
        scale: the factor applied to ``Q Kᵀ``.
        raw: ``[n_q, n_k]`` dot products ``q(i)·k(j)``.
        scaled: ``[n_q, n_k]`` ``raw · scale``.
        bias: ``[n_q, n_k]`` additive position bias (ALiBi), or None.
        mask: ``[n_q, n_k]`` additive mask: 0 where allowed, ``-inf`` where blocked.
        masked: ``[n_q, n_k]`` ``scaled + bias + mask``, the input of the softmax; with a
            ``softcap`` c, ``c · tanh(scaled / c) + bias + mask``.
        weights: ``[n_q, n_k]`` softmax of ``masked``; rows sum to 1, blocked entries are 0, and a
            row with every key blocked is all zeros (as in torch's SDPA).
        z: ``[n_q, d_v]`` ``weights V``.
        query_positions: ``[n_q]`` the position of each query row among the keys.
        softcap: the logit cap c applied to the scaled scores (Gemma 2), or None.
        sink: a learned sink logit (gpt-oss), or None: one more term in the softmax's total that no key gets, so the
            weights sum to less than one (:attr:`sink_weight` is the rest).
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scale: float
    raw: np.ndarray
    scaled: np.ndarray
    bias: np.ndarray | None
    mask: np.ndarray
    masked: np.ndarray
    weights: np.ndarray
    z: np.ndarray
    query_positions: np.ndarray
    softcap: float | None = None
    sink: float | None = None

    @property
    def blocked(self) -> np.ndarray:
        """``[n_q, n_k]`` bool, True where the mask blocks attention."""
        return np.isneginf(self.mask)

    @property
    def exp(self) -> np.ndarray:
        """``exp(masked − row max)``: the softmax numerators (0 where blocked; the max counts the sink)."""
        return np.exp(self.masked - _row_max(self.masked, self.sink))

    @property
    def sink_weight(self) -> np.ndarray:
        """``[n_q]`` the share of each row's softmax that the sink takes (0 without one)."""
        return 1.0 - self.weights.sum(axis=-1) if self.sink is not None else np.zeros(len(self.weights))


def _row_max(scores: np.ndarray, sink: float | None) -> np.ndarray:
    row_max = np.max(scores, axis=-1, keepdims=True)
    row_max = np.maximum(row_max, sink) if sink is not None else row_max
    return np.where(np.isfinite(row_max), row_max, 0.0)  # an all −∞ row: exp(−∞) = 0 everywhere


def softmax(scores: np.ndarray, sink: float | None = None) -> np.ndarray:
    """Row-wise softmax that maps ``-inf`` to exactly 0 and an all ``-inf`` row to zeros.

    Args:
        scores: ``[..., n_k]`` scores, possibly with ``-inf``.
        sink: a sink logit in every row's total (gpt-oss), given to no key: rows then sum to less than one.

    Returns:
        float64 weights of the same shape.
    """
    scores = np.asarray(scores, dtype=np.float64)
    row_max = _row_max(scores, sink)
    e = np.exp(scores - row_max)
    total = e.sum(axis=-1, keepdims=True) + (0.0 if sink is None else np.exp(sink - row_max))
    return e / np.where(total > 0, total, 1.0)


def causal_mask(n_q: int, n_k: int, query_positions: np.ndarray | None = None) -> np.ndarray:
    """Additive causal mask ``[n_q, n_k]``: query at position p sees keys j ≤ p (0), not later ones (−∞).

    Args:
        n_q, n_k: query and key counts.
        query_positions: position of each query row; defaults to the last ``n_q`` key positions.
    """
    pos = _positions(n_q, n_k, query_positions)
    blocked = np.arange(n_k)[None, :] > pos[:, None]
    return np.where(blocked, -np.inf, 0.0)


def attention_steps(
    q: Any,
    k: Any,
    v: Any,
    scale: float,
    causal: bool = False,
    bias: Any = None,
    *,
    mask: Any = None,
    query_positions: Any = None,
    softcap: float | None = None,
    sink: float | None = None,
) -> AttentionSteps:
    """Scaled dot-product attention with every step kept.

    Args:
        q: ``[n_q, d]`` queries (a 1-D ``[d]`` vector is one query).
        k: ``[n_k, d]`` keys.
        v: ``[n_k, d_v]`` values.
        scale: factor on ``Q Kᵀ`` (``1/√d`` for the usual attention).
        causal: block keys after each query's position (ignored when ``mask`` is given).
        bias: optional additive bias ``[n_q, n_k]`` (ALiBi), added before the mask.
        mask: optional additive mask ``[n_q, n_k]`` (0 / ``-inf``), used as given.
        query_positions: ``[n_q]`` positions of the query rows among the keys; defaults to the
            last ``n_q`` positions (all of them when ``n_q == n_k``).
        softcap: a logit cap c: the scaled scores become ``c · tanh(scaled / c)`` before bias and
            mask (Gemma 2); None for none.
        sink: a sink logit in the softmax's total (gpt-oss), given to no key; None for none.

    Returns:
        An :class:`AttentionSteps` (float64).

    Raises:
        ValueError: shapes that do not fit together, or a scale that is not finite.

    Example:
        >>> s = attention_steps([[1, 0]], [[1, 0], [0, 1]], [[1, 2], [3, 4]], scale=1.0)
        >>> s.weights.round(3)   # softmax([1, 0])
        array([[0.731, 0.269]])
    """
    q2 = np.atleast_2d(np.asarray(q, dtype=np.float64))
    k2 = np.asarray(k, dtype=np.float64)
    v2 = np.asarray(v, dtype=np.float64)
    if q2.ndim != 2 or k2.ndim != 2 or v2.ndim != 2:
        raise ValueError(f"q, k, v must be 2-D, got shapes {q2.shape}, {k2.shape}, {v2.shape}")
    if q2.shape[1] != k2.shape[1]:
        raise ValueError(f"q and k need the same width: {q2.shape} vs {k2.shape}")
    if k2.shape[0] != v2.shape[0]:
        raise ValueError(f"k and v need one row per key: {k2.shape} vs {v2.shape}")
    if not math.isfinite(float(scale)):
        raise ValueError(f"scale must be finite, got {scale}")
    n_q, n_k = q2.shape[0], k2.shape[0]
    pos = _positions(n_q, n_k, query_positions)

    raw = q2 @ k2.T  # [n_q, n_k]
    scaled = raw * float(scale)
    if mask is None:
        add_mask = causal_mask(n_q, n_k, pos) if causal else np.zeros((n_q, n_k))
    else:
        add_mask = np.broadcast_to(np.asarray(mask, dtype=np.float64), (n_q, n_k)).copy()
    add_bias = None
    if bias is not None:
        add_bias = np.broadcast_to(np.asarray(bias, dtype=np.float64), (n_q, n_k)).copy()
    capped = scaled if softcap is None else np.tanh(scaled / float(softcap)) * float(softcap)
    masked = capped + (add_bias if add_bias is not None else 0.0) + add_mask
    weights = softmax(masked, None if sink is None else float(sink))
    z = weights @ v2  # [n_q, d_v]
    return AttentionSteps(
        q=q2,
        k=k2,
        v=v2,
        scale=float(scale),
        raw=raw,
        scaled=scaled,
        bias=add_bias,
        mask=add_mask,
        masked=masked,
        weights=weights,
        z=z,
        query_positions=pos,
        softcap=None if softcap is None else float(softcap),
        sink=None if sink is None else float(sink),
    )


def query_steps(trace: AttentionTrace, layer: int, head: int, query: int) -> AttentionSteps:
    """One query row's attention steps, read from a trace.

    Q, K, V, the scale, the mask (causal and padding), any ALiBi bias, softcap and sink come from the trace;
    the arithmetic is :func:`attention_steps`. The result's rows equal
    ``trace.scores(layer, head, stage)[query]`` for every stage, ``trace.pattern(layer, head)[query]``
    and ``trace.z(layer, head)[query]``.

    Args:
        trace: a self- or cross-attention trace.
        layer, head: which head (negative counts from the end).
        query: the query token's index.

    Returns:
        :class:`AttentionSteps` with one query row (``q`` is ``[1, d_head]``).

    Raises:
        IndexError: layer, head or query out of range. ValueError: a layer with no softmax (``"linear"``).
    """
    n_q = trace.n_queries
    if not -n_q <= int(query) < n_q:
        raise IndexError(f"query {query} out of range: the text has {n_q} tokens (0–{n_q - 1})")
    i = int(query) % n_q
    if not -trace.n_heads <= int(head) < trace.n_heads:
        raise IndexError(f"head {head} out of range: this model has {trace.n_heads} heads")
    q = trace.q(layer)[head]  # [q_pos, d_head]
    bias, layer = trace.bias(layer), trace._layer(layer)
    check_pattern(trace.layer_kinds, layer)
    sinks = trace.sinks[layer] if trace.sinks else None
    return attention_steps(
        q[i : i + 1],
        trace.k(layer)[head],
        trace.v(layer)[head],
        trace.scales[layer],
        bias=None if bias is None else bias[head, i : i + 1],
        mask=trace.mask(layer)[i : i + 1],
        query_positions=[i + trace.n_keys - n_q],
        softcap=trace.softcap[layer] if trace.softcap else None,
        sink=None if sinks is None else float(sinks[head]),
    )


def to_matrix(data: Any, name: str, shape: tuple[int, int], limit: float = CALC_LIMIT) -> np.ndarray:
    """Typed numbers as a validated float64 matrix (server-side check of the calculator tables).

    Args:
        data: a pandas DataFrame, nested lists or an array, as a table editor returns it.
        name: the table's name for messages ("Q", "K", "V").
        shape: the expected ``(rows, columns)``.
        limit: largest absolute value accepted.

    Returns:
        ``[rows, columns]`` float64.

    Raises:
        StepInputError: wrong size, an empty or non-numeric cell, NaN/∞, or a value beyond ``limit``;
            the message names the table, row and column (1-based).
    """
    values = data.to_numpy() if hasattr(data, "to_numpy") else data
    if isinstance(values, (list, tuple)) and values and all(isinstance(r, (list, tuple)) for r in values):
        if len({len(r) for r in values}) > 1:
            raise StepInputError(f"{name}: the rows have different lengths; every row needs {shape[1]} numbers.")
    try:
        arr = np.array(values, dtype=object)
    except ValueError:  # ragged nested arrays
        raise StepInputError(f"{name}: the rows have different lengths; every row needs {shape[1]} numbers.") from None
    if arr.ndim != 2 or arr.shape != tuple(shape):
        got = " × ".join(str(s) for s in arr.shape) or "a single value"
        raise StepInputError(f"{name} must be {shape[0]} rows × {shape[1]} columns, got {got}.")
    out = np.empty(shape, dtype=np.float64)
    for (r, c), cell in np.ndenumerate(arr):
        where = f"{name}, row {r + 1}, column {c + 1}"
        number = _number(cell)
        if number is None or math.isnan(number):  # an emptied table cell arrives as NaN
            raise StepInputError(f"{where} is empty or not a number: type a number such as 0.5 or -1.")
        if math.isinf(number):
            raise StepInputError(f"{where} is infinite: type a finite number (the mask adds −∞ for you).")
        if abs(number) > limit:
            raise StepInputError(f"{where} is {number:g}: keep values between −{limit:g} and {limit:g}.")
        out[r, c] = number
    return out


#: default calculator rows (tokens × up to 4 dims), chosen so that the softmax has something to do:
#: "cat" asks for what "sat" and "mat" offer; "sat" looks back at "cat"; "on" is almost neutral.
CALC_TOKENS = ("the", "cat", "sat", "on", "mat")
_CALC_Q = np.array(
    [[0.5, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0], [2.0, 0.0, 1.0, 0.0], [0.5, 0.5, 0.0, 0.0], [1.0, 1.0, 0.0, 1.0]]
)
_CALC_K = np.array(
    [[0.0, 0.5, 0.0, 1.0], [2.0, 0.0, 0.0, 0.0], [0.0, 1.5, 1.0, 0.0], [0.5, 0.0, 0.0, 0.5], [0.0, 2.0, 0.0, 1.0]]
)
_CALC_V = np.array(
    [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.5, 0.0, 1.0, 1.0]]
)


def calculator_example(n_tokens: int, width: int) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    """Default tokens, Q, K and V for the calculator (3–5 tokens, width 2–4).

    Returns:
        ``(tokens, Q, K, V)`` with ``Q, K, V`` of shape ``[n_tokens, width]``.
    """
    if not (3 <= n_tokens <= 5 and 2 <= width <= 4):
        raise ValueError(f"the calculator takes 3–5 tokens and width 2–4, got {n_tokens} and {width}")
    return (
        CALC_TOKENS[:n_tokens],
        _CALC_Q[:n_tokens, :width].copy(),
        _CALC_K[:n_tokens, :width].copy(),
        _CALC_V[:n_tokens, :width].copy(),
    )


def _number(cell: Any) -> float | None:
    if cell is None or isinstance(cell, bool):
        return None
    if isinstance(cell, str):
        text = cell.strip().replace("−", "-").replace(",", ".")
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            return None
    try:
        return float(cell)
    except (TypeError, ValueError, OverflowError):
        return None


def _positions(n_q: int, n_k: int, query_positions: Any) -> np.ndarray:
    if query_positions is None:
        return np.arange(n_q) + max(n_k - n_q, 0)
    pos = np.asarray(query_positions, dtype=np.int64).reshape(-1)
    if pos.shape != (n_q,):
        raise ValueError(f"query_positions needs one position per query row ({n_q}), got {pos.shape}")
    return pos
