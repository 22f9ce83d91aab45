"""Attention Playground's engine: load models, trace attention, read every stage lazily.

Public API::

    import engine
    engine.list_models()                       # catalog, no torch import
    model = engine.load("minilm")              # read-only, CUDA when present
    tr = engine.trace(model, "The cat sat.")   # AttentionTrace
    tr.pattern(layer=0, head=3)                # [q_pos, k_pos], rows sum to 1
    tr.scores(0, 3, stage="scaled")

The engine never imports streamlit; the app wraps ``load`` in ``st.cache_resource`` and ``trace``
in ``st.cache_data``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from engine.registry import list_models, load
from engine.types import (
    STAGES,
    AlignmentTrace,
    AttentionTrace,
    CheckpointError,
    Seq2SeqTrace,
    TrainingSnapshot,
    VisionTrace,
    EmptyInputError,
    EngineError,
    ModelSpec,
    ModelUnavailableError,
    Tokens,
    Trace,
)

if TYPE_CHECKING:
    from engine.model import Model

DEFAULT_MAX_TOKENS = 512

__all__ = [
    "STAGES",
    "AlignmentTrace",
    "AttentionTrace",
    "CheckpointError",
    "Seq2SeqTrace",
    "TrainingSnapshot",
    "VisionTrace",
    "DEFAULT_MAX_TOKENS",
    "EmptyInputError",
    "EngineError",
    "ModelSpec",
    "ModelUnavailableError",
    "Tokens",
    "Trace",
    "device_name",
    "generate",
    "list_models",
    "load",
    "set_threads",
    "trace",
]


@overload
def trace(model: "Model", text: str, *, causal: bool | None = None,
          max_tokens: int = DEFAULT_MAX_TOKENS) -> AttentionTrace | Seq2SeqTrace | AlignmentTrace: ...
@overload
def trace(model: "Model", text: np.ndarray, *, causal: bool | None = None,
          max_tokens: int = DEFAULT_MAX_TOKENS) -> VisionTrace: ...
@overload
def trace(model: "Model", text: object, *, causal: bool | None = None, max_tokens: int = DEFAULT_MAX_TOKENS) -> Trace: ...


def trace(model: "Model", text, *, causal: bool | None = None, max_tokens: int = DEFAULT_MAX_TOKENS) -> Trace:
    """Run ``text`` through ``model`` once and capture what attention needs.

    Args:
        model: from :func:`load`.
        text: the input sentence(s); for a ViT, an image array ``[H, W]`` or ``[H, W, 3]``.
        causal: force the causal mask on (True) or off (False); None keeps the model's own setting,
            ``model.default_causal`` (on for GPT-style decoders and for a BERT-family model whose
            config says ``is_decoder=True``, off for encoders). The shared model is never modified.
        max_tokens: longer input is truncated, and the trace says so (``truncated``, ``notices``).

    Returns:
        An :class:`AttentionTrace` with per-layer Q/K/V (scores and patterns computed on demand) for
        encoders and decoders; a :class:`Seq2SeqTrace` for encoder-decoder transformers, an
        :class:`AlignmentTrace` for the RNN + Bahdanau models, a :class:`VisionTrace` for ViTs. Every
        one follows :class:`Trace` (``model_id``, ``family``, ``device``, ``notices``,
        ``attention_blocks()``), so callers need not test which it is.

    Raises:
        EmptyInputError: the text is empty.
        EngineError: a setting is out of range.

    Example:
        >>> tr = trace(load("minilm"), "The cat sat on the mat.")
        >>> tr.pattern(0, 0).sum(axis=-1)  # all ones
    """
    return model.adapter.trace(model, text, causal=causal, max_tokens=max_tokens)


def generate(model: "Model", prompt, settings=None, *, max_tokens: int = DEFAULT_MAX_TOKENS):
    """Let ``model`` write after (a decoder) or from (an encoder-decoder) ``prompt``, then trace it.

    Args:
        model: from :func:`load`, a decoder or an encoder-decoder.
        prompt: the text to continue or to translate.
        settings: an :class:`engine.generation.DecodeSettings` (greedy, 20 tokens when None).
        max_tokens: the prompt is cut to this many tokens.

    Returns:
        For a decoder, an :class:`AttentionTrace` over prompt + generated tokens with
        ``generated_from`` set; for an encoder-decoder, a :class:`Seq2SeqTrace` whose target is the
        decoded output.

    Raises:
        EngineError: the model does not write text, or a setting is out of range.
    """
    from engine.generation import DecodeSettings

    writer = getattr(model.adapter, "generate", None)
    if writer is None:
        raise EngineError("Generating text needs a decoder (GPT-style) or an encoder-decoder (translator) model.")
    return writer(model, prompt, settings or DecodeSettings(), max_tokens=max_tokens)


def device_name() -> str:
    """"cuda (<GPU name>)" when a GPU is used, else "cpu"."""
    import torch

    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return "cpu"


def set_threads(n: int) -> None:
    """Bound torch's intra-op threads (several users on a 2-core server: 1 is best)."""
    import torch

    torch.set_num_threads(max(1, int(n)))
