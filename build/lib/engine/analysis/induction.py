"""Induction heads and in-context learning, measured (Olsson et al. 2022, "In-context Learning and Induction Heads").

An induction head completes ``… A B … A → B``: at the second ``A`` it attends to the token that followed
the first ``A`` (prefix matching) and raises that token's logit (copying). In a two-layer attention-only
model it needs a previous-token head in the layer below, which writes "the token before me was A" into
each position, so that the second ``A``'s query can find the position after the first ``A``.

Four numbers, numpy in, numpy out (``pattern``: one head's ``[..., q_pos, k_pos]`` attention weights)::

    icl_score(loss_by_pos)        mean loss at LATE positions − mean loss at EARLY positions
                                  (negative: the model predicts better the more context it has read)
    previous_token_score(pattern) mean over queries i ≥ 1 of pattern[i, i − 1]
    prefix_matching_score(p, n)   on <bos> + n tokens + the same n tokens (length 2n + 1), the mean of
                                  the stripe pattern[q, q − n + 1] for q = n − 1 … 2n: TransformerLens's
                                  induction score (the diagonal at offset 1 − n, every entry of it)
    copying_score(ov)             Σ_i λ_i / Σ_i |λ_i| over the eigenvalues λ of a head's OV circuit read
                                  from tokens to logits (Elhage et al. 2021): +1 a pure copier, −1 a pure
                                  anti-copier, ≈ 0 no preference

In the stripe of ``prefix_matching_score`` the query at position ``p + n`` (the second copy of the token
at ``p``) reads key ``p + 1``, the token right after its first occurrence. As in TransformerLens, the
stripe's first two entries (``q = n − 1`` reading ``<bos>``, ``q = n`` reading position 1) are queries
of the first copy and are averaged in too: the score is the mean of all ``n + 2`` entries.
"""

from __future__ import annotations

import numpy as np

#: where the in-context-learning score reads the loss, as (first, last) positions inclusive, for a context of
#: 64 tokens: Olsson et al. compare token 500 with token 50 of 512 (≈ 98% and ≈ 10% of the context); here
#: the early window is positions 4–7 and the late one 56–62 (the last position a 64-token sequence scores)
EARLY: tuple[int, int] = (4, 7)
LATE: tuple[int, int] = (56, 62)
#: the ICL score must fall this far (nats) over a run to call it a phase change: learning which letters a run uses
#: (no induction head) takes it to about −0.5 … −0.9; an induction head to about −3.2 (ln 26 ≈ 3.26 is the most)
MIN_DROP = 1.5


def icl_score(loss_by_pos: np.ndarray, early: tuple[int, int] = EARLY, late: tuple[int, int] = LATE) -> float:
    """Mean loss at the late positions minus mean loss at the early ones (Olsson et al.'s ICL score).

    Args:
        loss_by_pos: ``[pos]`` mean loss of the prediction made at each position (a prediction at ``t``
            is of token ``t + 1``); NaN where nothing was scored.
        early, late: ``(first, last)`` positions, inclusive.

    Returns:
        A number in nats: below 0 when later tokens are predicted better than early ones.

    Raises:
        ValueError: a window outside the curve, empty, or with no finite value.
    """
    curve = np.asarray(loss_by_pos, dtype=np.float64)
    means = []
    for name, (first, last) in (("early", early), ("late", late)):
        if not 0 <= first <= last < curve.shape[-1]:
            raise ValueError(f"the {name} window {first}–{last} is outside a curve of {curve.shape[-1]} positions")
        window = curve[..., first : last + 1]
        if not np.isfinite(window).any():
            raise ValueError(f"the {name} window {first}–{last} has no scored position")
        means.append(np.nanmean(window, axis=-1))
    return float(means[1] - means[0])


def previous_token_score(pattern: np.ndarray) -> np.ndarray:
    """Mean attention from each position to the one just before it.

    Args:
        pattern: ``[..., q_pos, q_pos]`` (square) attention weights.

    Returns:
        ``[...]``: the mean over ``i = 1 … n − 1`` of ``pattern[..., i, i − 1]`` (1 = a pure previous-token head).
    """
    p = np.asarray(pattern, dtype=np.float64)
    _square(p)
    return np.diagonal(p, offset=-1, axis1=-2, axis2=-1).mean(axis=-1)


def prefix_matching_score(pattern: np.ndarray, period: int) -> np.ndarray:
    """TransformerLens's induction score: the mean of the stripe at offset ``1 − period``.

    Args:
        pattern: ``[..., 2·period + 1, 2·period + 1]`` attention on ``<bos>`` + ``period`` tokens + the same
            tokens again.
        period: the length ``n`` of the repeated run.

    Returns:
        ``[...]``: the mean of ``pattern[..., q, q − period + 1]`` for ``q = period − 1 … 2·period``.

    Raises:
        ValueError: the pattern does not have ``2·period + 1`` positions.
    """
    p = np.asarray(pattern, dtype=np.float64)
    _square(p)
    if isinstance(period, bool) or not isinstance(period, (int, np.integer)) or period < 2:
        raise ValueError(f"period must be an integer ≥ 2, got {period!r}")
    if p.shape[-1] != 2 * period + 1:
        raise ValueError(
            f"a run of {period} repeated after <bos> has {2 * period + 1} positions, the pattern has {p.shape[-1]}"
        )
    return np.diagonal(p, offset=1 - period, axis1=-2, axis2=-1).mean(axis=-1)


def copying_score(ov: np.ndarray) -> float:
    """How much a head copies what it attends to: ``Σ λ / Σ |λ|`` over the eigenvalues of its OV circuit.

    Args:
        ov: ``[tokens, tokens]``; row ``a``, column ``b``: how much attending to token ``a`` raises the
            logit of token ``b`` (e.g. ``W_E W_V^h W_O^h W_U`` restricted to the letters).

    Returns:
        A number in ``[−1, 1]``: the real parts' sum over the moduli's sum (0 for a zero matrix).
    """
    m = np.asarray(ov, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"the OV circuit must be a square matrix, got shape {m.shape}")
    eig = np.linalg.eigvals(m)
    total = np.abs(eig).sum()
    return float(eig.real.sum() / total) if total > 0 else 0.0


def phase_change_step(steps: np.ndarray, values: np.ndarray, min_drop: float = MIN_DROP) -> int | None:
    """The step where a falling curve (the ICL score) has first gone half of the way from its start to its end.

    Args:
        steps: ``[points]`` increasing training steps.
        values: ``[points]`` the curve at those steps.
        min_drop: how far the curve must fall from its first value to its last to count as a change.

    Returns:
        The first step whose value lies at least halfway from ``values[0]`` down to ``values[-1]``; None when
        the curve fell by less than ``min_drop`` (no phase change yet).
    """
    s, v = np.asarray(steps, dtype=np.float64), np.asarray(values, dtype=np.float64)
    if s.shape != v.shape or s.ndim != 1 or s.size < 2 or not np.isfinite(v).all():
        raise ValueError("phase_change_step needs two finite curves of the same length ≥ 2")
    if v[0] - v[-1] < min_drop:
        return None
    return int(s[int(np.argmax(v <= (v[0] + v[-1]) / 2))])


def _square(p: np.ndarray) -> None:
    if p.ndim < 2 or p.shape[-1] != p.shape[-2]:
        raise ValueError(f"a self-attention pattern is square [..., n, n], got shape {p.shape}")
