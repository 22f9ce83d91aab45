"""The one request a page run makes: which model reads which text, how, and which attention block it shows.

A page reads its controls into one immutable :class:`TraceRequest` and hands it whole to the runtime
(``get_trace(request)``, ``head_view(request, view)``, ``layer_grid(request, layer)``); a section derives what
it needs from it (``with_block``, ``with_causal``, ``with_text``, ``with_decode``) and never rebuilds it from loose values.
``traces.request_key(request)`` is the one cache key of everything computed from it. Plain, hashable, no Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.generation import DecodeSettings


@dataclass(frozen=True)
class TraceRequest:
    """What one page run asks the engine for.

    Attributes:
        model_id: a catalog id, a session's trained model, or a Hub id / folder the server allows.
        text: the input, as typed.
        causal: the causal mask (None: the model's own default; encoder-decoders ignore it).
        max_tokens: the longest input read (longer text is cut, with a notice).
        decode: how an encoder-decoder or "Write more" picks each written token (checked when made);
            None: no decoding asked (an encoder-decoder then writes greedily).
        block: the attention block drawn (``"self"``; ``"encoder" | "decoder" | "cross"`` for an
            encoder-decoder). A trace holds every block: the trace cache keys the request with ``"self"``.
    """

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
