r"""One decoding step of the RNN translator, recomputed in numpy from its parameters and captured states.

For step ``i`` (row ``i`` of an :class:`~engine.traces.alignment.AlignmentTrace`, the step that writes
``target[i]``) the decoder reads its previous state ``s(i−1)`` and every encoder state ``h(j)``::

    additive (Bahdanau):  W s(i−1)          [d_attn]      the query part, one vector per step
                          U h(j)            [S, d_attn]   the key part, one vector per source word
                          a(i, j) = tanh(W s(i−1) + U h(j))
                          e(i, j) = vᵀ a(i, j)
    dot (Luong "general"): W_h h(j)         [S, d_dec]
                          e(i, j) = s(i−1) · W_h h(j)
    both:                 α(i, j) = softmax_j e(i, j)
                          c(i)    = Σ_j α(i, j) h(j)

:func:`attention_parameters` copies ``W, U, v`` (or ``W_h``) out of a loaded model once;
:func:`step_breakdown` rebuilds every piece of one step from them, so a page can show the numbers
and a test can check them against the model's own hooks (``decoder.attn.hook_energies`` …).

Attention weights are not word alignments: :func:`gold_alignment` reads the toy grammar's gold
alignment for a translated sentence, :func:`alignment_agreement` scores the attention against it
(share of target words whose most-attended source word is the gold one), and
:func:`find_disagreement` searches generated sentences for one where the model's attention and the
gold alignment differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

import engine
from engine.corpora import translation as grammar
from engine.traces.alignment import AlignmentTrace

if TYPE_CHECKING:
    from engine.model import Model


@dataclass(frozen=True)
class AttentionParameters:
    """The attention's weights as float64 numpy arrays (``nn.Linear`` layout: ``[out, in]``).

    Attributes:
        variant: ``"additive"`` or ``"dot"``.
        w: additive ``W`` ``[d_attn, d_dec]``; None for dot.
        u: additive ``U`` ``[d_attn, 2·d_enc]``; None for dot.
        v: additive ``v`` ``[d_attn]``; None for dot.
        w_h: dot ``W_h`` ``[d_dec, 2·d_enc]``; None for additive.
    """

    variant: str
    w: np.ndarray | None = None
    u: np.ndarray | None = None
    v: np.ndarray | None = None
    w_h: np.ndarray | None = None


@dataclass(frozen=True)
class StepBreakdown:
    """Every number of one attention step (float64 numpy arrays; ``S`` source words).

    Attributes:
        step: row index in the trace (0 = the step that writes the first target word).
        variant: ``"additive"`` or ``"dot"``.
        target_word: the word this step wrote; ``probability`` its softmax probability.
        source: the source tokens (columns).
        s_prev: ``s(i−1)`` ``[d_dec]``.
        query: additive ``W s(i−1)`` ``[d_attn]``; dot ``s(i−1)`` itself ``[d_dec]``.
        keys: additive ``U h(j)`` ``[S, d_attn]``; dot ``W_h h(j)`` ``[S, d_dec]``.
        hidden: additive ``tanh(W s(i−1) + U h(j))`` ``[S, d_attn]``; dot: the elementwise products
            ``s(i−1) ⊙ W_h h(j)`` ``[S, d_dec]`` (their row sums are the energies).
        v: additive ``v`` ``[d_attn]``; None for dot.
        energies: ``e(i, j)`` ``[S]``; ``alignment``: ``α(i, j)`` ``[S]``.
        encoder_states: ``h(j)`` ``[S, 2·d_enc]``; ``context``: ``c(i) = Σ_j α(i, j) h(j)``.
    """

    step: int
    variant: str
    target_word: str
    probability: float
    source: tuple[str, ...]
    s_prev: np.ndarray
    query: np.ndarray
    keys: np.ndarray
    hidden: np.ndarray
    v: np.ndarray | None
    energies: np.ndarray
    alignment: np.ndarray
    encoder_states: np.ndarray
    context: np.ndarray


def attention_parameters(model: "Model") -> AttentionParameters:
    """Copy the attention weights of a loaded RNN translator (read only; nothing on the model changes).

    Args:
        model: from ``engine.load("bahdanau-translator")`` or ``"luong-translator"``.

    Returns:
        The weights as float64 arrays.

    Raises:
        ValueError: the model is not an RNN translator with attention.
    """
    attn = getattr(getattr(model.module, "decoder", None), "attn", None)
    variant = getattr(attn, "variant", None)
    if variant not in ("additive", "dot"):
        raise ValueError(f"{model.spec.id!r} is not an RNN translator with additive or dot attention")

    def arr(linear) -> np.ndarray:
        return linear.weight.detach().to("cpu").double().numpy().copy()

    if variant == "additive":
        return AttentionParameters("additive", w=arr(attn.w), u=arr(attn.u), v=arr(attn.v)[0])
    return AttentionParameters("dot", w_h=arr(attn.w_h))


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax of a vector (−∞ entries get exactly 0)."""
    z = np.exp(x - np.max(x))
    return z / z.sum()


def step_breakdown(params: AttentionParameters, trace: AlignmentTrace, step: int) -> StepBreakdown:
    """Recompute step ``step`` of ``trace`` from the parameters and the captured states.

    Args:
        params: from :func:`attention_parameters` of the model that made ``trace``.
        trace: an :class:`AlignmentTrace` of that model.
        step: row index, ``0 ≤ step < len(trace.target)`` (negative counts from the end).

    Returns:
        A :class:`StepBreakdown`; its energies equal ``trace.energies[step]`` up to float32 rounding.
    """
    n = len(trace.target)
    if not -n <= int(step) < n:
        raise IndexError(f"step {step} out of range: this translation has {n} steps (0–{n - 1})")
    step = int(step) % n
    if params.variant != trace.variant:
        raise ValueError(f"parameters of a {params.variant!r} model for a {trace.variant!r} trace")
    s_prev = trace.decoder_states[step].astype(np.float64)  # (d_dec,)
    h = trace.encoder_states.astype(np.float64)  # (S, 2·d_enc)
    if params.variant == "additive":
        query = params.w @ s_prev  # (d_attn,)
        keys = h @ params.u.T  # (S, d_attn)
        hidden = np.tanh(query[None, :] + keys)  # (S, d_attn)
        energies = hidden @ params.v  # (S,)
        v = params.v
    else:
        query = s_prev  # (d_dec,)
        keys = h @ params.w_h.T  # (S, d_dec)
        hidden = keys * s_prev[None, :]  # (S, d_dec): the products summed by the dot product
        energies = hidden.sum(axis=1)  # (S,)
        v = None
    alignment = softmax(energies)  # (S,)
    context = alignment @ h  # (2·d_enc,)
    return StepBreakdown(
        step=step,
        variant=params.variant,
        target_word=trace.target.strings[step],
        probability=float(trace.output_probs[step]),
        source=tuple(trace.source.strings),
        s_prev=s_prev,
        query=query,
        keys=keys,
        hidden=hidden,
        v=v,
        energies=energies,
        alignment=alignment,
        encoder_states=h,
        context=context,
    )


# ---- attention vs the gold word alignment ----------------------------------------------------------


@dataclass(frozen=True)
class RowCheck:
    """One target word: the source word it attends to most vs the gold-aligned one."""

    target_index: int
    target_word: str
    argmax_index: int
    argmax_word: str
    gold_index: int
    gold_word: str
    weight_on_gold: float

    @property
    def agrees(self) -> bool:
        return self.argmax_index == self.gold_index


@dataclass(frozen=True)
class Agreement:
    """``score`` = share of gold-aligned target words whose argmax source word is the gold one."""

    score: float
    rows: tuple[RowCheck, ...]

    @property
    def differing(self) -> tuple[RowCheck, ...]:
        return tuple(r for r in self.rows if not r.agrees)


def alignment_agreement(
    alignment: np.ndarray, gold: list[tuple[int, int]], source: list[str], target: list[str]
) -> Agreement:
    """Compare an attention map with a gold word alignment.

    Args:
        alignment: ``[tgt_pos, src_pos]`` weights (extra rows, e.g. ``<eos>``, without a gold link are skipped).
        gold: ``[(source_index, target_index), ...]`` links (the grammar's ``alignment``).
        source, target: display words of the columns and rows.

    Returns:
        An :class:`Agreement`; ``score`` is NaN when no row has a gold link.
    """
    rows = []
    for src_i, tgt_i in sorted(gold, key=lambda p: p[1]):
        if not (0 <= tgt_i < alignment.shape[0] and 0 <= src_i < alignment.shape[1]):
            raise IndexError(f"gold link ({src_i}, {tgt_i}) outside the {alignment.shape} map")
        j = int(np.argmax(alignment[tgt_i]))
        rows.append(RowCheck(tgt_i, target[tgt_i], j, source[j], src_i, source[src_i], float(alignment[tgt_i, src_i])))
    score = float(np.mean([r.agrees for r in rows])) if rows else float("nan")
    return Agreement(score, tuple(rows))


def gold_alignment(trace: AlignmentTrace) -> tuple[list[tuple[int, int]] | None, str]:
    """The grammar's gold alignment for the trace's sentence, when it applies.

    It applies when the source is a sentence of the toy grammar (every word known, in an order the
    grammar makes) and the model wrote exactly the reference translation.

    Returns:
        ``(links, "")`` or ``(None, why not)``.
    """

    source = " ".join(trace.source.strings)
    try:
        reference = grammar.tokenize(grammar.translate(source))
        links = grammar.alignment(source)
    except ValueError as err:
        return None, f"the sentence is not in the toy grammar ({err})"
    written = [t for t in trace.target.strings if t != "<eos>"]
    if written != reference:
        return None, "the model's translation differs from the reference, so the gold links do not fit its words"
    return links, ""


def trace_agreement(trace: AlignmentTrace) -> tuple[Agreement | None, str]:
    """:func:`alignment_agreement` of a trace with its :func:`gold_alignment` (or None and why not)."""
    gold, why = gold_alignment(trace)
    if gold is None:
        return None, why
    return alignment_agreement(trace.alignment, gold, list(trace.source.strings), list(trace.target.strings)), ""


@dataclass(frozen=True)
class Disagreement:
    """A grammar sentence whose attention disagrees with the gold alignment (found by :func:`find_disagreement`)."""

    sentence: str
    agreement: Agreement
    searched: int


def find_disagreement(model: "Model", n: int = 60, seed: int = 7) -> Disagreement | None:
    """Search ``n`` generated grammar sentences for the one whose attention agrees least with the gold links.

    Only sentences the model translates exactly are considered (so the gold links fit). Ties go to the
    shorter sentence, then to the earlier one.

    Args:
        model: a loaded RNN translator.
        n: how many sentences to try (:func:`~engine.corpora.translation.generate_pairs`).
        seed: the generator's seed (the same ``(n, seed)`` always gives the same search).

    Returns:
        The sentence (without its final " .") or None when every sentence agrees fully.
    """

    best: tuple[float, int, int, str, Agreement] | None = None
    for k, (english, _french) in enumerate(grammar.generate_pairs(n, seed)):
        sentence = english.removesuffix(" .")
        agreement, _ = trace_agreement(engine.trace(model, sentence))
        if agreement is None or agreement.score >= 1.0:
            continue
        key = (agreement.score, len(sentence.split()), k, sentence, agreement)
        if best is None or key[:3] < best[:3]:
            best = key
    if best is None:
        return None
    return Disagreement(best[3], best[4], n)
