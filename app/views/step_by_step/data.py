"""The Step by step page's numbers (``engine.analysis.stepwise``, numpy on the cached trace): one query's attention
steps and the calculator's own Q, K, V. One query row of one head is O(n · d_head) and the calculator's tables are
at most 5 × 4: neither is worth a cache entry."""

from engine.analysis.stepwise import attention_steps as calculator_steps
from engine.analysis.stepwise import calculator_example, query_steps
from engine.analysis.stepwise import to_matrix as calculator_matrix

__all__ = ["calculator_example", "calculator_matrix", "calculator_steps", "query_steps"]
