"""An RNN encoder-decoder's trace: one additive (or dot) attention map over the source per written word."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.records import Family, Tokens
from engine.traces.attention import AttentionTrace


@dataclass(frozen=True, eq=False)
class AlignmentTrace:
    """An RNN encoder-decoder with Bahdanau (additive) or Luong (dot) attention, decoding greedily.

    Step ``i`` (one per generated target token) computes, for every source position ``j``::

        additive:  e(i, j) = vᵀ tanh(W s(i−1) + U h(j))
        dot:       e(i, j) = s(i−1) · (W_h h(j))     (Luong's "general" score)
        α(i, j)   = softmax_j e(i, j)
        c(i)      = Σ_j α(i, j) h(j)

    Attributes:
        model_id: the id the model was loaded with.
        variant: ``"additive"`` (Bahdanau et al., 2015) or ``"dot"`` (Luong et al., 2015).
        source: source tokens (columns of the alignment map).
        target: generated target tokens (rows), without ``<bos>``; ends with ``<eos>`` when the model
            wrote it (that step attends too).
        output_text: the decoded translation, for display.
        encoder_states: ``[src_pos, d_enc]`` h(j) (both directions concatenated).
        decoder_states: ``[tgt_pos, d_dec]`` s(i−1), the state each step's attention reads.
        energies: ``[tgt_pos, src_pos]`` e(i, j) (``decoder.attn.hook_energies``).
        alignment: ``[tgt_pos, src_pos]`` α(i, j); rows sum to 1 (``decoder.attn.hook_alignment``).
        contexts: ``[tgt_pos, d_enc]`` c(i).
        output_probs: ``[tgt_pos]`` probability of the chosen output word at each step.
        notices: sentences for the UI (unknown words, truncation).
        family: always ``"rnn-attention"`` (the :class:`Trace` protocol).
        device: where the forward pass ran ("cpu", "cuda").
    """

    model_id: str
    variant: str
    source: Tokens
    target: Tokens
    output_text: str
    encoder_states: np.ndarray
    decoder_states: np.ndarray
    energies: np.ndarray
    alignment: np.ndarray
    contexts: np.ndarray
    output_probs: np.ndarray
    notices: tuple[str, ...] = field(default_factory=tuple)
    family: Family = "rnn-attention"
    device: str = "cpu"

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: none. One additive score per (step, source word) has no
        queries, keys or heads, so nothing here is an :class:`AttentionTrace`; pages read
        ``alignment`` and ``energies`` instead."""
        return {}
