"""Fill in the blank: what a masked-LM encoder predicts at each ``[MASK]``, and where that position looks.

For an encoder trained with BERT's objective (our ``tiny-bert-stories``), the output at a masked
position ``i`` is a distribution over the vocabulary::

    p(w | text) = softmax(z_i)_w        z_i: the model's scores at position i (its unembedding)

computed in one forward pass with no causal mask (the blank sees both sides). The attention of that
position, layer by layer, comes from the same model's trace of the same ids (``engine.trace``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import engine
from engine.records import EngineError, Tokens
from engine.traces.attention import AttentionTrace
from engine.vocab import MASK, decoder_input

TOP_K = 10
NEEDS_MLM = "Fill-in-the-blank needs a model trained with the masked-LM objective: pick tiny-bert-stories."


@dataclass(frozen=True, eq=False)
class Blank:
    """One ``[MASK]`` position and the model's best guesses for it (most likely first)."""

    position: int
    words: tuple[str, ...]
    probs: np.ndarray  # [top_k] float64, from the softmax over the whole vocabulary


@dataclass(frozen=True, eq=False)
class FillMask:
    """The blanks of one input, and the trace of the same ids (its attention)."""

    model_id: str
    tokens: Tokens
    blanks: tuple[Blank, ...]
    trace: AttentionTrace
    notices: tuple[str, ...] = ()


def softmax(z: np.ndarray) -> np.ndarray:
    """Numerically stable softmax in float64."""
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    return e / e.sum()


def fill_mask(model, text: str, *, top_k: int = TOP_K, max_tokens: int = 128) -> FillMask:
    """Predict every ``[MASK]`` (or ``<mask>``) of ``text`` with a masked-LM encoder of ours.

    Args:
        model: from :func:`engine.load`: an own encoder whose vocabulary has ``<mask>``.
        text: a sentence with at least one ``[MASK]``.
        top_k: how many guesses per blank (1–100).
        max_tokens: longer input is cut (a notice says so).

    Returns:
        A :class:`FillMask` (the guesses and the trace, bidirectional).

    Raises:
        EngineError: not a masked-LM model, no blank in the (possibly cut) text, or a bad ``top_k``.
    """
    import torch

    from engine.families.transformer.adapter import words_of

    vocab = model.tokenizer
    if model.spec.family != "encoder" or not hasattr(vocab, "tokens") or MASK not in vocab:
        raise EngineError(NEEDS_MLM)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 100:
        raise EngineError(f"top_k must be a whole number from 1 to 100, got {top_k!r}.")
    inp = decoder_input(text, vocab, max_tokens, model.max_positions, split=words_of(model))
    mask_id = vocab.encode([MASK])[0]
    positions = [i for i, t in enumerate(inp.ids) if t == mask_id]
    if not positions:
        raise EngineError("Put [MASK] where a word should be guessed, e.g. 'lily found a [MASK] ball.'")

    def run(module, device):
        x = torch.tensor([list(inp.ids)], dtype=torch.long, device=device)  # (1, T)
        return module(x, causal=False, attn_impl="sdpa")[0, positions].float().cpu().numpy()  # (blanks, V)

    logits, _device, notice = model.run(run)
    blanks = []
    for pos, z in zip(positions, logits):
        p = softmax(z)
        best = np.argsort(-p, kind="stable")[:top_k]
        blanks.append(Blank(position=pos, words=tuple(vocab.decode([int(i)])[0] for i in best), probs=p[best]))

    trace = engine.trace(model, text, causal=False, max_tokens=max_tokens)
    return FillMask(
        model_id=model.spec.id,
        tokens=inp.tokens,
        blanks=tuple(blanks),
        trace=trace,
        notices=inp.notices + ((notice,) if notice else ()),
    )


def attention_of(trace: AttentionTrace, position: int) -> np.ndarray:
    """Where ``position`` looks in every layer and head: ``[layer, head, k_pos]`` (rows of the patterns)."""
    return np.stack(
        [
            np.stack([trace.pattern_rows(layer, head, position, position + 1)[0] for head in range(trace.n_heads)])
            for layer in range(trace.n_layers)
        ]
    )
