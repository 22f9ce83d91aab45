"""The one request a page run makes: which model reads which text, how, and which attention block it shows.

A page reads its controls into ONE immutable :class:`TraceRequest` and hands it whole to the
services (``services.get_trace(request)``, ``services.head_view(request, layer, head, ...)``,
``services.layer_grid(request, layer)``): the arguments that travel together are one object, and
that object is also the cache key of everything computed from it (``request.trace_key`` for the
trace, the whole request for what is drawn from one attention block). Plain, hashable, no Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TraceRequest:
    """What one page run asks the engine for.

    Attributes:
        model_id: a catalog id, a session's trained model, or a Hub id / folder the server allows.
        text: the input, as typed.
        causal: the causal mask (None: the model's own default; encoder-decoders ignore it).
        max_tokens: the longest input read (longer text is cut, with a notice).
        decode: an encoder-decoder's or "Write more"'s decoding settings, as plain values
            (``engine.generation.DecodeSettings`` fields in order); None: no decoding asked.
        block: the attention block drawn (``"self"``; ``"encoder" | "decoder" | "cross"`` for an
            encoder-decoder). It does not change the trace, only what is drawn from it.
    """

    model_id: str
    text: str
    causal: bool | None = None
    max_tokens: int = 512
    decode: tuple | None = None
    block: str = "self"

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_tokens", int(self.max_tokens))
        if self.decode is not None:
            object.__setattr__(self, "decode", tuple(self.decode))

    @property
    def trace_key(self) -> tuple:
        """The part that decides the trace (the block does not): the trace cache's key."""
        return (self.model_id, self.text, self.causal, self.max_tokens) + (
            () if self.decode is None else ("decode", self.decode)
        )

    def with_block(self, block: str) -> TraceRequest:
        """The same trace, another attention block."""
        return self if block == self.block else replace(self, block=block)

    def with_causal(self, causal: bool | None) -> TraceRequest:
        """The same text through the same model with the causal mask ``causal``."""
        return self if causal == self.causal else replace(self, causal=causal)


@dataclass(frozen=True)
class ExplainRequest:
    """What the "Is attention the explanation?" page asks for: one prediction and how its importances are made.

    Attributes:
        model_id: the model (``services.EXPLAIN_MODELS``).
        text: the input (with a [MASK] for the masked-LM model).
        reference: the sentence the embedding is compared with (MiniLM), else "".
        max_tokens: the longest input read.
        steps: integrated gradients' steps; baseline: its baseline (``"zero"`` / ``"pad"``).
        loo: leave-one-out's ``"remove"`` or ``"replace"``.
    """

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
