"""What every section of the Heads page receives: the chosen model, text, block, layer and head."""

from __future__ import annotations

from dataclasses import dataclass

from app import services
from engine import AttentionTrace


@dataclass(frozen=True)
class HeadsContext:
    """The Heads page's shared choices and the attention block they select.

    Attributes:
        model_id, text, causal, max_tokens: the trace's arguments (``services.get_trace``).
        block: ``"self"`` for encoders/decoders; ``"encoder" | "decoder" | "cross"`` for a translator.
        family: the model family (encoder, decoder, encoder-decoder).
        attention: the block's AttentionTrace (from the cached trace).
        layer, head: the chosen head.
    """

    model_id: str
    text: str
    causal: bool | None
    max_tokens: int
    block: str
    family: str
    attention: AttentionTrace
    layer: int
    head: int

    @property
    def args(self) -> tuple:
        """The hashable arguments of the Heads service functions."""
        return (self.model_id, self.text, self.causal, self.max_tokens, self.block)

    @property
    def square(self) -> bool:
        """True for self-attention (queries and keys are the same tokens)."""
        return services.block_is_square(self.block)

    @property
    def block_label(self) -> str:
        return services.HEAD_BLOCKS.get(self.block, "")
