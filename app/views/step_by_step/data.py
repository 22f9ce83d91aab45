"""The Step by step page's calls: one query's attention steps and the calculator's own Q, K, V.

One query row of one head is O(n · d_head) on top of the cached trace, and the calculator's
tables are at most 5 × 4: neither is worth a cache entry (pickling would cost more than the math).
"""

from __future__ import annotations

from engine import AttentionTrace


def query_steps(trace: AttentionTrace, layer: int, head: int, query: int):
    """Every step of attention for one query token of one head (``engine.analysis.stepwise``)."""
    from engine.analysis import stepwise

    return stepwise.query_steps(trace, layer, head, query)


def calculator_example(n_tokens: int, width: int):
    """Default tokens, Q, K, V for the calculator: ``(tokens, Q, K, V)``."""
    from engine.analysis import stepwise

    return stepwise.calculator_example(n_tokens, width)


def calculator_matrix(data, name: str, shape: tuple[int, int]):
    """A typed table as a validated float matrix; raises ``EngineError`` with a message for the user."""
    from engine.analysis import stepwise

    return stepwise.to_matrix(data, name, shape)


def calculator_steps(q, k, v, scale: float, causal: bool):
    """Attention on the calculator's own Q, K, V with every step kept."""
    from engine.analysis import stepwise

    return stepwise.attention_steps(q, k, v, scale, causal)
