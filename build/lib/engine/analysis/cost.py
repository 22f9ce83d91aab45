"""The cost of attention next to a recurrent and a convolutional layer, counted and measured.

Per layer, for ``n`` positions of width ``d`` (Vaswani et al., 2017, Table 1; ``k`` = kernel width)::

                      operations        sequential steps   longest path between two positions
    self-attention    O(n² · d)         O(1)               O(1)
    recurrent         O(n · d²)         O(n)               O(n)
    convolutional     O(k · n · d²)     O(1)               O(log_k n)   (dilated; n / k without dilation)

:func:`counts` gives the leading terms as numbers (multiply-adds: QKᵀ and the weighted sum of V
are ``n²·d`` each; a recurrent cell ``W h + U x`` is ``2·d²`` per step; a convolution ``k·d²`` per
position), the memory each keeps (attention's ``n²`` weights per head, the others ``n·d``), and
:func:`measure` times the three on this machine with torch: one attention head through
``scaled_dot_product_attention`` (what the engine's models run), an ``RNNCell`` loop over the
positions, and a ``Conv1d``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

#: bounds of the live measurement (a shared server: each call stays well under a second or two)
MAX_N = 4096
MAX_D = 1024
KERNEL = 3


@dataclass(frozen=True)
class LayerCost:
    """One layer kind at one (n, d): multiply-adds, values kept, sequential steps, longest path."""

    name: str
    multiply_adds: int
    memory_values: int
    sequential_steps: int
    path_length: int


def _check(n: int, d: int) -> None:
    for name, value, high in (("n", n, MAX_N), ("d", d, MAX_D)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise ValueError(f"{name} must be a whole number from 1 to {high}, got {value!r}")


def counts(n: int, d: int, k: int = KERNEL) -> tuple[LayerCost, LayerCost, LayerCost]:
    """Self-attention, recurrent and convolutional layers at ``n`` positions of width ``d``.

    Example:
        >>> attention, rnn, conv = counts(512, 64)
        >>> attention.multiply_adds, rnn.multiply_adds   # 2·n²·d vs 2·n·d²
        (33554432, 4194304)
    """
    _check(n, d)
    return (
        LayerCost("self-attention", 2 * n * n * d, n * n, 1, 1),
        LayerCost("recurrent (RNN)", 2 * n * d * d, n * d, n, n),
        LayerCost(f"convolution (k = {k})", k * n * d * d, n * d, 1, max(1, math.ceil(math.log(max(n, 2), k)))),
    )


def crossover(d: int) -> int:
    """The length where attention's ``2·n²·d`` overtakes a recurrent layer's ``2·n·d²``: ``n = d``."""
    return d


def measure(n: int, d: int, repeats: int = 3) -> dict[str, float]:
    """Median seconds per call of one attention head, an RNN cell loop and a Conv1d at (n, d), on the CPU."""
    import torch
    import torch.nn.functional as F

    _check(n, d)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, n, d, generator=gen)
    q = k = v = x[:, None]  # [1, 1, n, d]: one head
    cell = torch.nn.RNNCell(d, d)
    conv = torch.nn.Conv1d(d, d, KERNEL, padding=KERNEL // 2)

    def attention():
        F.scaled_dot_product_attention(q, k, v)

    def recurrent():
        h = torch.zeros(1, d)
        for t in range(n):
            h = cell(x[:, t], h)

    def convolution():
        conv(x.transpose(1, 2))

    out = {}
    with torch.inference_mode():
        for name, fn in (("self-attention", attention), ("recurrent (RNN)", recurrent), ("convolution", convolution)):
            fn()  # warm-up
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            out[name] = sorted(times)[len(times) // 2]
    return out
