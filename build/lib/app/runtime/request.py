"""The one request a page run makes: which model reads which text, how, and which attention block it shows.

A page reads its controls into one immutable :class:`TraceRequest` and hands it whole to the runtime; a section
derives what it needs with ``with_*`` and never rebuilds it from loose values. Plain, hashable, no Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.generation import DecodeSettings


@dataclass(frozen=True)
class TraceRequest:
    """What one page run asks the engine for. ``causal`` None: the model's own mask; ``decode``: how an
    encoder-decoder or "Write more" picks each written token (None: greedy / no writing); ``block``: the attention
    block drawn (``"self"``, or ``"encoder" | "decoder" | "cross"``; a trace holds them all)."""

    model_id: str
    text: str
    causal: bool | None = None
    max_tokens: int = 512
    decode: DecodeSettings | None = None
    block: str = "self"

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_tokens", int(self.max_tokens))

    def with_block(self, block: str) -> TraceRequest:
        """The same trace, another attention block."""
        return self if block == self.block else replace(self, block=block)

    def with_causal(self, causal: bool | None) -> TraceRequest:
        """The same text through the same model with the causal mask ``causal``."""
        return self if causal == self.causal else replace(self, causal=causal)

    def with_text(self, text: str) -> TraceRequest:
        """Another text through the same model, mask and block."""
        return replace(self, text=text)

    def with_decode(self, decode: DecodeSettings) -> TraceRequest:
        """The model writes after the text with ``decode``, under its own mask (as it was trained)."""
        return replace(self, causal=None, decode=decode, block="self")


@dataclass(frozen=True)
class ExplainRequest:
    """What the "Is attention the explanation?" page asks for: one prediction (``reference``: the sentence MiniLM's
    embedding is compared with) and how its importances are made (integrated gradients' ``steps`` and
    ``baseline``, leave-one-out's ``loo``)."""

    model_id: str
    text: str
    reference: str = ""
    max_tokens: int = 64
    steps: int = 32
    baseline: str = "zero"
    loo: str = "remove"

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_tokens", int(self.max_tokens))
        object.__setattr__(self, "steps", int(self.steps))

    @property
    def prediction_key(self) -> tuple:
        """The part that decides the prediction (the methods' settings do not)."""
        return (self.model_id, self.text, self.reference, self.max_tokens)

    def trace_request(self) -> TraceRequest:
        """The trace of the same input (the model's own mask), shared with the other pages' trace cache."""
        return TraceRequest(self.model_id, self.text, None, self.max_tokens)
