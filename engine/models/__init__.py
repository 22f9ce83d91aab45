"""Our own models, one readable file each, with TransformerLens-style hook points.

- :mod:`engine.models.positional`: positional encodings as pure functions.
- :mod:`engine.models.transformer`: the decoder / encoder transformer and its config.
- :mod:`engine.models.trace_own`: a forward pass of our transformer as an ``AttentionTrace``.
"""

from engine.models.trace_own import trace_own
from engine.models.transformer import MLP, Attention, Block, Transformer, TransformerConfig

__all__ = ["MLP", "Attention", "Block", "Transformer", "TransformerConfig", "trace_own"]
