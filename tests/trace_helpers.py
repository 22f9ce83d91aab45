"""Small random attention traces for the map, export and presenter tests (no model: Q/K/V drawn at random)."""

from __future__ import annotations

import numpy as np

from engine.records import Tokens
from engine.traces.attention import AttentionTrace


def random_trace(
    n: int, *, causal: bool = False, special_ends: bool = True, seed: int = 0, window: tuple[int | None, ...] = ()
) -> AttentionTrace:
    """One layer of two heads (width 8) over ``n`` tokens ``w1 … w{n-2}`` between ``[CLS]`` and ``[SEP]`` (``w0 …``
    with ``special_ends`` False); Q/K/V spread wide enough that the patterns are far from uniform."""
    rng = np.random.default_rng(seed)
    strings = tuple(
        "[CLS]" if i == 0 and special_ends else "[SEP]" if i == n - 1 and special_ends else f"w{i}" for i in range(n)
    )
    toks = Tokens(strings=strings, ids=tuple(range(n)), special=tuple(s.startswith("[") for s in strings))
    q, k, v = (rng.standard_normal((2, n, 8)).astype(np.float32) * 2 for _ in range(3))
    return AttentionTrace(
        model_id="m",
        family="decoder" if causal else "encoder",
        tokens=toks,
        key_tokens=toks,
        queries=(q,),
        keys=(k,),
        values=(v,),
        scales=(8**-0.5,),
        causal=causal,
        window=window,
    )
