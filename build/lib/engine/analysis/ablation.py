"""Head ablation: switch off chosen attention heads and compare the model's output before and after.

A head is switched off by zeroing its output ``z_h`` before the output projection (see
:mod:`engine.analysis.ablation_heads`); the rest of the network is unchanged. What is compared
depends on the model:

- decoders (our ``tiny-gpt-stories``, GPT-2 family): the next-token distribution at the last
  position, ``p = softmax(logits[-1])``, with
  ``KL(p_before ‖ p_after) = Σ_v p_b(v) · (log p_b(v) − log p_a(v))`` and the total variation
  ``TV = ½ Σ_v |p_b(v) − p_a(v)|`` (the largest change in the probability of any set of tokens);
- encoders (MiniLM, BERT family): the sentence embedding as sentence-transformers computes it for
  all-MiniLM-L6-v2, ``e = normalise(mean_t h_t)`` (mean of the last hidden states over the tokens,
  then L2 normalisation), and ``cos(e_before, e_after) = e_b · e_a``;
- the translator: the greedy translation before and after, and the mean probability the model
  gives each word of the original translation (teacher-forced), before and after.

Example:
    >>> model = engine.load("tiny-gpt-stories")
    >>> r = ablate(model, "once upon a time there was a", [(0, 1), (2, None)])  # L0 H1 and all of L2
    >>> r.top_tokens, r.top_before, r.top_after, r.kl
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from engine.analysis.ablation_heads import HeadRef, normalise_heads
from engine.analysis.ablation_runs import runner_for
from engine.records import EngineError, Tokens

DEFAULT_MAX_TOKENS = 512
TOP_K = 10
Output = Literal["next-token", "embedding", "translation"]


@dataclass(frozen=True, eq=False)
class AblationResult:
    """What switching off some heads did to one input (plain data: numpy and Python values).

    Attributes:
        model_id: the id the model was loaded with.
        output: ``"next-token"``, ``"embedding"`` or ``"translation"``: which fields below are set.
        heads_off: the heads switched off, sorted ``(block, layer, head)``.
        n_heads_total: how many heads the model has in all (every block).
        tokens: the input tokens as the model read them (the source for the translator).
        notices: sentences for the UI (unknown words, truncation, a GPU fallback).
        top_tokens, top_ids: the next tokens most likely before *or* after (up to ``top_k``, always
            including the most likely token of each side), ordered by ``max(before, after)``.
        top_before, top_after: their probabilities before and after.
        kl: ``KL(before ‖ after)`` in nats over the whole vocabulary (0 when nothing changed).
        tv: total variation distance between the two distributions (0 … 1).
        embedding_before, embedding_after: unit-length sentence embeddings ``[d_model]``.
        cosine: their cosine similarity (1 = unchanged direction).
        translation_before, translation_after: the greedy translations as text.
        target_before, target_after: the generated target tokens (``<eos>`` kept when produced).
        confidence_before, confidence_after: mean probability of each token of ``target_before``
            (teacher-forced), without and with the heads switched off.
    """

    model_id: str
    output: Output
    heads_off: tuple[HeadRef, ...]
    n_heads_total: int
    tokens: Tokens
    notices: tuple[str, ...] = ()
    top_tokens: tuple[str, ...] = ()
    top_ids: tuple[int, ...] = ()
    top_before: tuple[float, ...] = ()
    top_after: tuple[float, ...] = ()
    kl: float = 0.0
    tv: float = 0.0
    embedding_before: np.ndarray | None = None
    embedding_after: np.ndarray | None = None
    cosine: float = 1.0
    translation_before: str = ""
    translation_after: str = ""
    target_before: tuple[str, ...] = ()
    target_after: tuple[str, ...] = ()
    confidence_before: float = math.nan
    confidence_after: float = math.nan

    @property
    def changed(self) -> bool:
        """True when the output differs: another translation, or any change in the numbers."""
        if self.output == "translation":
            return self.target_before != self.target_after
        if self.output == "embedding":
            return not np.array_equal(self.embedding_before, self.embedding_after)
        return self.kl != 0.0 or self.top_before != self.top_after


def head_layout(model) -> dict[str, tuple[int, int]]:
    """``{block: (n_layers, n_heads)}`` of a model that can be ablated.

    Raises:
        EngineError: the model family has no ablation here (RNN attention, ViT).
    """
    return runner_for(model).layout


def ablate(
    model,
    text: str,
    heads: Iterable,
    *,
    causal: bool | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    keep_only: bool = False,
    top_k: int = TOP_K,
) -> AblationResult:
    """Run ``text`` with and without the chosen heads and summarise the change in the output.

    Args:
        model: from :func:`engine.load` (shared, read-only: hooks are added under ``model.lock``
            and removed before this returns, also on errors; no weight or config is edited).
        text: the input sentence.
        heads: items ``(layer, head)`` (single-stack models, whose one block is ``"self"``) or
            ``(block, layer, head)`` with block ``"encoder"``, ``"decoder"`` or ``"cross"``
            (translator); ``head=None`` switches off a whole layer. An empty selection gives
            ``after == before`` exactly.
        causal: force the causal mask on/off (text models); None keeps the model's default.
        max_tokens: longer input is cut (and a notice says so).
        keep_only: switch off every head *except* the selected ones.
        top_k: next-token rows to report (decoders).

    Returns:
        An :class:`AblationResult`.

    Raises:
        EmptyInputError: the text is empty.
        EngineError: an unsupported model, a bad head or layer index, a bad ``max_tokens``.
    """
    runner = runner_for(model)
    off = normalise_heads(heads, runner.layout, keep_only=keep_only)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
        raise EngineError(f"top_k must be a whole number from 1 to 1000, got {top_k!r}.")
    prepared = runner.prepare(model, text, causal=causal, max_tokens=max_tokens)

    def both(module, device):
        before = runner.run(module, device, prepared, (), None)
        after = before if not off else runner.run(module, device, prepared, off, before)
        return before, after

    (before, after), _device, notice = model.run(both)
    notices = prepared.notices + ((notice,) if notice else ())
    total = sum(n_l * n_h for n_l, n_h in runner.layout.values())
    fields = runner.summarise(prepared, before, after, top_k)
    return AblationResult(
        model_id=model.spec.id,
        output=runner.output,
        heads_off=off,
        n_heads_total=total,
        tokens=prepared.tokens,
        notices=notices,
        **fields,
    )
