"""Positional encodings as pure functions: sinusoidal, rotary (RoPE) and ALiBi.

Nothing here holds state or parameters; the models in this package call these functions and the
positional page can call them directly to draw the encodings.

Sinusoidal (Vaswani et al., 2017, §3.5), added to the token embeddings::

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Rotary (Su et al., 2021, RoFormer §3.4.2), applied to queries and keys, never to values. Each pair
of coordinates ``(x[2i], x[2i+1])`` is rotated by the angle ``pos · θ_i``, ``θ_i = base^(−2i / d_head)``::

    x'[2i]   = x[2i] · cos(pos θ_i) − x[2i+1] · sin(pos θ_i)
    x'[2i+1] = x[2i] · sin(pos θ_i) + x[2i+1] · cos(pos θ_i)

so that ``q'(m) · k'(n)`` depends on ``m − n`` only. We use the paper's **interleaved pairs**
``(2i, 2i+1)``; GPT-NeoX / Llama code rotates halves ``(i, i + d/2)`` instead, which is the same
rotation on permuted coordinates.

ALiBi (Press et al., 2022, §3), a per-head bias added to the scaled scores, no embedding at all::

    scores[h, i, j] += −m_h · |i − j|

with slopes ``m_h`` a geometric sequence that starts at ``2^(−8/n)`` with that same ratio.
"""

from __future__ import annotations

import math

import torch


def sinusoidal(n_pos: int, d_model: int) -> torch.Tensor:
    """The sinusoidal position table of "Attention Is All You Need".

    Args:
        n_pos: number of positions (rows), positions ``0 … n_pos − 1``.
        d_model: width of each vector; odd widths are fine (the last column is a sine).

    Returns:
        float32 tensor ``[n_pos, d_model]`` with ``PE[pos, 2i] = sin(pos / 10000^(2i/d))`` and
        ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d))``.

    Example:
        >>> sinusoidal(4, 6)[1, 0]  # sin(1)
        tensor(0.8415)
    """
    if n_pos < 0 or d_model <= 0:
        raise ValueError(f"sinusoidal: need n_pos >= 0 and d_model > 0, got {n_pos}, {d_model}")
    pos = torch.arange(n_pos, dtype=torch.float64)[:, None]  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),) the even indices 2i
    angle = pos / (10000.0 ** (two_i / d_model))  # (P, ceil(D/2))
    pe = torch.zeros(n_pos, d_model, dtype=torch.float64)  # (P, D)
    pe[:, 0::2] = torch.sin(angle)  # (P, ceil(D/2))
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # (P, floor(D/2))
    return pe.to(torch.float32)


def rope_cos_sin(n_pos: int, d_head: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosines and sines of the rotary angles ``pos · θ_i``, one per coordinate pair.

    Args:
        n_pos: number of positions.
        d_head: head width; must be even (coordinates are rotated in pairs).
        base: the ``base`` of ``θ_i = base^(−2i / d_head)`` (10000 in the paper).

    Returns:
        ``(cos, sin)``, each float32 ``[n_pos, d_head // 2]``; column ``i`` belongs to the pair
        ``(2i, 2i+1)``.
    """
    if d_head <= 0 or d_head % 2:
        raise ValueError(f"RoPE rotates coordinate pairs: d_head must be even and > 0, got {d_head}")
    theta = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (dh/2,)
    angle = torch.arange(n_pos, dtype=torch.float64)[:, None] * theta[None, :]  # (P, dh/2)
    return torch.cos(angle).to(torch.float32), torch.sin(angle).to(torch.float32)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each interleaved pair ``(x[..., 2i], x[..., 2i+1])`` by the angle whose cos/sin are given.

    Args:
        x: ``[..., d_head]`` queries or keys (d_head even).
        cos, sin: from :func:`rope_cos_sin`, sliced to the positions of ``x`` and shaped to
            broadcast against ``x[..., ::2]``; e.g. for ``x`` of shape ``(B, T, H, dh)`` pass
            ``cos[:T, None, :]`` of shape ``(T, 1, dh/2)``.

    Returns:
        A tensor shaped like ``x``: ``x'[2i] = x[2i]·cos − x[2i+1]·sin``,
        ``x'[2i+1] = x[2i]·sin + x[2i+1]·cos``.
    """
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., dh/2) each
    rot_even = x_even * cos - x_odd * sin  # (..., dh/2)
    rot_odd = x_even * sin + x_odd * cos  # (..., dh/2)
    return torch.stack((rot_even, rot_odd), dim=-1).flatten(-2)  # (..., dh/2, 2) -> (..., dh)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The ALiBi head slopes, exactly as the paper's reference code computes them.

    For ``n`` a power of two: ``2^(−8/n), 2^(−16/n), …, 2^(−8)``. Otherwise, with ``p`` the largest
    power of two below ``n``: the ``p`` slopes for ``p`` heads, then every other slope of the
    ``2p``-head list (``[0::2]``), as many as needed.

    Args:
        n_heads: number of heads (> 0).

    Returns:
        float32 tensor ``[n_heads]``.

    Example:
        >>> alibi_slopes(8)  # 1/2, 1/4, …, 1/256
    """
    if n_heads <= 0:
        raise ValueError(f"alibi_slopes: n_heads must be > 0, got {n_heads}")
    return torch.tensor(_alibi_slope_list(n_heads), dtype=torch.float32)


def _alibi_slope_list(n: int) -> list[float]:
    def power_of_2(n: int) -> list[float]:
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))  # = 2^(-8/n)
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _alibi_slope_list(2 * closest)[0::2][: n - closest]


def alibi_bias(slopes: torch.Tensor, n_q: int, n_k: int) -> torch.Tensor:
    """The ALiBi bias ``−slope_h · |i − j|`` for every head, query ``i`` and key ``j``.

    Queries are aligned with the *last* ``n_q`` keys (query ``i`` sits at key position
    ``i + n_k − n_q``), the same convention as ``AttentionTrace.bias``. The bias is symmetric, so the
    same function serves causal models (where only ``j ≤ i`` survives the mask) and encoders.

    Args:
        slopes: ``[n_heads]`` from :func:`alibi_slopes`.
        n_q: number of query positions.
        n_k: number of key positions.

    Returns:
        float32 tensor ``[n_heads, n_q, n_k]``, 0 on the (aligned) diagonal.
    """
    q_pos = torch.arange(n_q, device=slopes.device)[:, None] + (n_k - n_q)  # (Tq, 1)
    k_pos = torch.arange(n_k, device=slopes.device)[None, :]  # (1, Tk)
    distance = -(q_pos - k_pos).abs().to(torch.float32)  # (Tq, Tk)
    return slopes.to(torch.float32)[:, None, None] * distance[None]  # (H, Tq, Tk)
