"""Attention Playground's engine: load models, trace attention, read every stage lazily.

Public API::

    import engine
    engine.list_models()                       # catalog, no torch import
    model = engine.load("minilm")              # read-only, CUDA when present
    tr = engine.trace(model, "The cat sat.")   # AttentionTrace
    tr.pattern(layer=0, head=3)                # [q_pos, k_pos], rows sum to 1
    tr.scores(0, 3, stage="scaled")
    tr = engine.generate(model, "Lily found a", DecodeSettings(max_new_tokens=20))  # decoders only
    tr.generated_from                          # index of the first generated token

The engine never imports streamlit; the app wraps ``load`` in ``st.cache_resource`` and keeps traces in a
per-process :class:`engine.cache.TraceCache`. The trace types are :mod:`engine.traces`, the model families
:mod:`engine.families`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, overload

import numpy as np

from engine.decoding import NEEDS_DECODER
from engine.generation import DecodeSettings
from engine.records import CheckpointError, EmptyInputError, EngineError, ModelSpec, ModelUnavailableError, Tokens
from engine.registry import list_models, load
from engine.traces import Trace, TrainingSnapshot
from engine.traces.alignment import AlignmentTrace
from engine.traces.attention import STAGES, AttentionTrace
from engine.traces.seq2seq import Seq2SeqTrace
from engine.traces.vision import VisionTrace, WindowTrace

if TYPE_CHECKING:
    from engine.model import Model

DEFAULT_MAX_TOKENS = 512

__all__ = [
    "STAGES",
    "AlignmentTrace",
    "AttentionTrace",
    "CheckpointError",
    "DecodeSettings",
    "Seq2SeqTrace",
    "TrainingSnapshot",
    "VisionTrace",
    "WindowTrace",
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
    "limit_numpy_threads",
    "set_threads",
    "trace",
    "trace_many",
]


@overload
def trace(
    model: "Model", text: str, *, causal: bool | None = None, max_tokens: int = DEFAULT_MAX_TOKENS
) -> AttentionTrace | Seq2SeqTrace | AlignmentTrace: ...
@overload
def trace(
    model: "Model", text: np.ndarray, *, causal: bool | None = None, max_tokens: int = DEFAULT_MAX_TOKENS
) -> VisionTrace: ...
@overload
def trace(
    model: "Model", text: object, *, causal: bool | None = None, max_tokens: int = DEFAULT_MAX_TOKENS
) -> Trace: ...


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
        :class:`AlignmentTrace` for the RNN + Bahdanau models, a :class:`VisionTrace` for ViTs, a
        :class:`WindowTrace` for Swin. Every
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


def trace_many(
    model: "Model",
    texts: Sequence[str],
    *,
    causal: bool | None = None,
    max_tokens: int | Sequence[int] = DEFAULT_MAX_TOKENS,
) -> list[Trace | Exception]:
    """:func:`trace` for several texts at once: one forward pass over all of them where the model's family
    allows it (Hugging Face BERT-likes, DistilBERT and GPT-2: the texts right-padded to the longest and the
    padding masked out), else one pass each.

    Args:
        model: from :func:`load`.
        texts: the sentences.
        causal: as for :func:`trace`, the same for every text.
        max_tokens: one limit for all, or one per text.

    Returns:
        One item per text, in order: its trace (equal to ``trace(model, text, ...)`` up to float rounding),
        or the exception tracing it raised, so that one bad text fails only itself.

    Example:
        >>> a, b = trace_many(load("minilm"), ["The cat sat.", "A dog ran to the park."])
        >>> a.tokens.strings == trace(load("minilm"), "The cat sat.").tokens.strings
    """
    texts = list(texts)
    limits = [int(max_tokens)] * len(texts) if isinstance(max_tokens, int) else [int(m) for m in max_tokens]
    if len(limits) != len(texts):
        raise EngineError(f"{len(limits)} token limits for {len(texts)} texts")
    batch = getattr(model.adapter, "trace_batch", None)
    if batch is not None:
        return batch(model, texts, causal=causal, max_tokens=limits)
    out: list[Trace | Exception] = []
    for text, limit in zip(texts, limits):
        try:
            out.append(trace(model, text, causal=causal, max_tokens=limit))
        except Exception as err:  # noqa: BLE001 — the item's own error, handed back in its place
            out.append(err)
    return out


def generate(
    model: "Model", prompt: str, settings: DecodeSettings | None = None, *, max_tokens: int = DEFAULT_MAX_TOKENS
) -> "AttentionTrace | Seq2SeqTrace":
    """Let a decoder write after ``prompt`` (or an encoder-decoder write from it), then trace it in one pass.

    Args:
        model: from :func:`load`; a decoder (our ``tiny-gpt-stories``, GPT-2 family, Llama, Qwen, …) or an
            encoder-decoder (our ``tiny-translator``, T5, BART, Marian).
        prompt: the text to continue or to translate (cut to ``max_tokens`` tokens, as :func:`trace` does).
        settings: greedy or sampled and how many tokens (default: greedy, 20 tokens). The end-of-text
            token stops earlier, and so does the model's own position limit.
        max_tokens: the prompt's token limit.

    Returns:
        For a decoder, an :class:`AttentionTrace` over prompt + generated tokens with ``generated_from`` =
        the number of prompt tokens and a notice that says how the tokens were picked; for an
        encoder-decoder, a :class:`Seq2SeqTrace` whose target is the decoded output.

    Raises:
        EngineError: the model is not a decoder, a setting is out of range, or the prompt leaves no room.
        EmptyInputError: the prompt is empty.

    Example:
        >>> tr = generate(load("tiny-gpt-stories"), "lily found a", DecodeSettings(max_new_tokens=10))
        >>> tr.tokens.strings[tr.generated_from:]  # the words the model wrote
    """

    settings = DecodeSettings() if settings is None else settings
    if not isinstance(settings, DecodeSettings):
        raise EngineError("settings must be a DecodeSettings.")
    write = getattr(model.adapter, "generate", None)
    if write is None:
        raise EngineError(NEEDS_DECODER)
    return write(model, prompt, settings, max_tokens=max_tokens)


def device_name() -> str:
    """ "cuda (<GPU name>)" when a GPU is used, else "cpu"."""
    import torch

    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return "cpu"


def set_threads(n: int) -> None:
    """Bound torch's intra-op threads (several users on a 2-core server: 1 is best)."""
    import torch

    torch.set_num_threads(max(1, int(n)))


def limit_numpy_threads(n: int = 1) -> bool:
    """Bound the BLAS thread pool numpy's matrix products use (process-wide: OpenBLAS keeps one pool).

    A server runs the engine's numpy work (the trace's output-projection norms, the overview's pattern
    rows) in many script threads at once, next to torch's own threads; BLAS's pool, sized to every
    core and waiting busily between calls, takes cores from them. Call it once, before the work: a
    notebook that wants numpy's every core simply does not. Returns False where no BLAS pool
    was found to bound."""
    import numpy  # noqa: F401 — its BLAS library must be loaded to be found
    from threadpoolctl import threadpool_limits

    return threadpool_limits(max(1, int(n)), user_api="blas").get_original_num_threads().get("blas") is not None
