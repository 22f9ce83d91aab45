"""Which input tokens mattered for one prediction? Six answers side by side (issue 23, item 2).

The prediction (:func:`predict`) is one number f the model computes from its input:

    next-token   a decoder (our tiny-gpt-stories, GPT-2):   f = log p(w* | text), w* the most likely next token
    masked-word  a masked-LM encoder (tiny-bert-stories):   f = log p(w* at the first [MASK] | text)
    embedding    a sentence encoder (MiniLM):               f = cos(e(text), e(reference)), with
                 e = normalise(mean_t h_t), all-MiniLM-L6-v2's sentence embedding (as the ablation panel)

and each method gives every input token i a score (:func:`importance`):

    attention            the last layer's weights, mean over heads, in the row of the position that predicts
                         (the last token; the [MASK]), or the mean of all rows for the embedding, which
                         mean-pools every position
    rollout              the same row of attention rollout through every layer (Abnar & Zuidema 2020, mean
                         over heads, residual as ½·I: :mod:`engine.analysis.rollout`)
    contributions        the same row of Kobayashi et al.'s ‖α_ij f_h(x_j)‖ (``AttentionTrace.contributions``),
                         last layer, mean over heads
    leave-one-out        f(text) − f(text without token i): the token removed, or replaced by [MASK] / <unk>
    gradient×input       ∂f/∂e_i · e_i, e_i the token's word embedding (positions are added inside the
                         model), summed over the embedding's dimensions
    integrated gradients (e_i − e'_i) · ∫₀¹ ∂f/∂e_i(e' + α(e − e')) dα (Sundararajan et al. 2017), the
                         integral by the trapezoid rule in n steps; baseline e' all zeros, or the padding
                         token's embedding at every position. Completeness: Σ_i IG_i = f(e) − f(e'); the gap
                         n steps leave is reported.

Running the model from its input embeddings is :mod:`engine.analysis.embedding_runs`.
The first three read a trace (:func:`engine.trace`) and are ≥ 0; the other three run the model and are
signed (a token can push f down). Gradient runs hold the model's lock with autograd on (the shared
module's weights keep ``requires_grad=False``: only the input embeddings get gradients).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import engine
from engine.analysis.embedding_runs import (
    Task,
    baseline_id,
    embed,
    outputs,
    read_text,
    replacement_id,
    task_of,
    token_label,
    with_grad,
)
from engine.analysis.rollout import rollout
from engine.records import EngineError, Tokens
from engine.traces.attention import AttentionTrace
from engine.traces.kinds import every_pattern
from engine.vocab import MASK

#: method id → label for people, in the order pages show them
METHODS: dict[str, str] = {
    "attention": "raw attention",
    "rollout": "attention rollout",
    "contributions": "contributions ‖α·f(x)‖",
    "leave_one_out": "leave-one-out",
    "grad_input": "gradient × input",
    "integrated_gradients": "integrated gradients",
}
FROM_TRACE = ("attention", "rollout", "contributions")
SIGNED = ("leave_one_out", "grad_input", "integrated_gradients")
BASELINES = ("zero", "pad")
LOO_MODES = ("remove", "replace")
DEFAULT_MAX_TOKENS = 64
MAX_STEPS = 256
NEEDS_MASK = "Put [MASK] where a word should be guessed, e.g. 'lily found a [MASK] ball.'"


@dataclass(frozen=True, eq=False)
class Prediction:
    """The one output being explained, and the input as the model read it (plain data).

    Attributes:
        model_id, task: the model and what it predicts (:data:`Task`).
        text, max_tokens, causal: the input as asked, its token limit and the mask the model uses.
        tokens: the input tokens (``tokens.ids`` are what the model read).
        position: the position whose output is explained (the last token; the first [MASK]); None for the
            embedding (every position, mean-pooled).
        target_id, target: the predicted token's id and text (next-token / masked-word); -1 and the
            reference sentence for the embedding.
        value: f, the number explained: log p(target) or cos(e, e_reference).
        probability: p(target), or the cosine again for the embedding.
        reference: the reference sentence (embedding), else "".
        reference_embedding: its unit embedding ``[d]`` float64 (embedding), else None.
        excluded: positions that are not evidence (the [MASK] being filled): left out of rankings.
        notices: sentences for the UI (unknown words, a cut, a second [MASK]).
    """

    model_id: str
    task: Task
    text: str
    max_tokens: int
    causal: bool
    tokens: Tokens
    position: int | None
    target_id: int
    target: str
    value: float
    probability: float
    reference: str = ""
    reference_embedding: np.ndarray | None = None
    excluded: tuple[int, ...] = ()
    notices: tuple[str, ...] = ()

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(self.tokens.ids)

    @property
    def value_label(self) -> str:
        """What f is, in words."""
        if self.task == "embedding":
            return "cosine similarity to the reference sentence"
        return f"log-probability of “{self.target}”"


@dataclass(frozen=True, eq=False)
class Importance:
    """One method's score per input token.

    Attributes:
        method: a key of :data:`METHODS`.
        scores: ``[tokens]`` float64; NaN where a token is not scored (the [MASK] being filled, leave-one-out).
        signed: True when a score may be negative (the token pushes f down).
        f_input, f_baseline, gap: integrated gradients only: f at the input and at the baseline, and
            ``f_input − f_baseline − Σ scores`` (completeness: → 0 as the steps grow); NaN otherwise.
        steps: integrated gradients' number of steps (0 otherwise).
    """

    method: str
    scores: np.ndarray
    signed: bool
    f_input: float = float("nan")
    f_baseline: float = float("nan")
    gap: float = float("nan")
    steps: int = 0


def value_of(pred: Prediction, out) -> Any:
    """f from :func:`outputs`: ``(B,)`` log p(target), or the cosine with the reference embedding."""
    import torch

    if pred.task == "embedding":
        ref = torch.tensor(np.array(pred.reference_embedding), dtype=out.dtype, device=out.device)
        return out @ ref  # (B,)
    return out[:, pred.target_id]  # (B,)


# ---- the prediction ----------------------------------------------------------------------------------------
def predict(model, text: str, *, reference: str = "", max_tokens: int = DEFAULT_MAX_TOKENS) -> Prediction:
    """What ``model`` predicts from ``text``: the number the methods explain (module docstring).

    Args:
        model: from :func:`engine.load` (shared, read-only).
        text: the input; a masked-LM model needs a [MASK] in it.
        reference: the embedding task's sentence to compare with (required there, ignored otherwise).
        max_tokens: longer input is cut (a notice says so).

    Raises:
        EngineError: an unsupported model, no [MASK], an empty reference, an empty text.
    """
    task = task_of(model)
    tokens, notices = read_text(model, task, text, max_tokens)
    ids, n = list(tokens.ids), len(tokens)
    position: int | None = n - 1
    excluded: tuple[int, ...] = ()
    if task == "masked-word":
        mask_id = model.tokenizer.encode([MASK])[0]
        blanks = [i for i, t in enumerate(ids) if t == mask_id]
        if not blanks:
            raise EngineError(NEEDS_MASK)
        position, excluded = blanks[0], tuple(blanks)
        if len(blanks) > 1:
            notices.append(
                f"The text has {len(blanks)} blanks: the first (position {blanks[0]}) is explained; the "
                "others stay blanks and are left out of the rankings."
            )
    elif task == "embedding":
        position = None
        if not reference.strip():
            raise EngineError("Type a reference sentence: the embedding is explained by its cosine similarity to it.")
    causal = bool(model.default_causal)
    ref_tokens = read_text(model, task, reference, max_tokens)[0] if task == "embedding" else None

    def run(module, device):
        out = outputs(model, module, task, causal, ids, embed(model, module, ids, device)[None], position)[0]
        if ref_tokens is None:
            return out.double().cpu().numpy(), None
        r_ids = list(ref_tokens.ids)
        ref = outputs(model, module, task, causal, r_ids, embed(model, module, r_ids, device)[None], None)[0]
        return out.double().cpu().numpy(), ref.double().cpu().numpy()

    (out, ref), _device, notice = model.run(run)
    notices += [notice] if notice else []
    common = dict(
        model_id=model.spec.id,
        task=task,
        text=text,
        max_tokens=int(max_tokens),
        causal=causal,
        tokens=tokens,
        position=position,
        excluded=excluded,
        notices=tuple(notices),
    )
    if ref is not None:
        cos = float(out @ ref)
        return Prediction(
            **common,
            target_id=-1,
            target=reference,
            value=cos,
            probability=cos,
            reference=reference,
            reference_embedding=ref,
        )
    target = int(np.argmax(out))
    return Prediction(
        **common,
        target_id=target,
        target=token_label(model, target),
        value=float(out[target]),
        probability=float(np.exp(out[target])),
    )


# ---- the three readings of attention ---------------------------------------------------------------------
def _check_trace(trace: AttentionTrace, pred: Prediction) -> None:
    if tuple(trace.tokens.ids) != pred.ids:
        raise EngineError("The trace is of another input than the prediction: trace the same text and token limit.")


def _row(pred: Prediction, matrix: np.ndarray) -> np.ndarray:
    """The predicting position's row of ``[q, k]``, or the mean of all rows (the embedding mean-pools)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    return matrix[pred.position] if pred.position is not None else matrix.mean(axis=0)


def attention_scores(trace: AttentionTrace, pred: Prediction) -> np.ndarray:
    """Raw attention: the last layer's pattern, mean over heads, the predicting row ``[tokens]``."""
    _check_trace(trace, pred)
    return _row(pred, trace.pattern(trace.n_layers - 1).mean(axis=0))


def rollout_scores(trace: AttentionTrace, pred: Prediction) -> np.ndarray:
    """Attention rollout through every layer (mean over heads), the predicting row ``[tokens]``."""

    _check_trace(trace, pred)
    every_pattern(trace.layer_kinds, "Attention rollout")
    return _row(pred, rollout([trace.pattern(layer) for layer in range(trace.n_layers)])[-1])


def contribution_scores(trace: AttentionTrace, pred: Prediction) -> np.ndarray:
    """Kobayashi's ‖α_ij f_h(x_j)‖ in the last layer, mean over heads, the predicting row ``[tokens]``."""
    _check_trace(trace, pred)
    last = trace.n_layers - 1
    return _row(pred, np.mean([trace.contributions(last, h) for h in range(trace.n_heads)], axis=0))


# ---- the three that run the model ----------------------------------------------------------------------
def leave_one_out(model, pred: Prediction, mode: str = "remove") -> np.ndarray:
    """``f(text) − f(text without token i)`` for every i ``[tokens]`` (NaN at excluded positions).

    ``mode="remove"``: the token is deleted (later positions move up one; the predicting position follows
    its token); ``"replace"``: it becomes :func:`replacement_id`. f is recomputed, under the same mask,
    from the changed ids with nothing else changed, so a score is a real re-run of the model."""
    if mode not in LOO_MODES:
        raise EngineError(f"Leave-one-out removes or replaces a token, got {mode!r}.")
    ids = list(pred.ids)
    fill = replacement_id(model) if mode == "replace" else None

    def variant(i: int) -> tuple[list[int], int | None]:
        if fill is not None:
            return ids[:i] + [fill] + ids[i + 1 :], pred.position
        changed = ids[:i] + ids[i + 1 :]
        if pred.position is None:
            return changed, None
        if pred.task == "next-token":
            return changed, len(changed) - 1
        return changed, pred.position - (i < pred.position)

    def run(module, device):
        scores = np.full(len(ids), np.nan)
        for i in range(len(ids)):
            if i in pred.excluded or (fill is None and len(ids) == 1):
                continue
            changed, position = variant(i)
            out = outputs(
                model, module, pred.task, pred.causal, changed, embed(model, module, changed, device)[None], position
            )
            scores[i] = pred.value - float(value_of(pred, out)[0])
        return scores

    return model.run(run)[0]


def gradient_x_input(model, pred: Prediction) -> np.ndarray:
    """``∂f/∂e_i · e_i`` summed over the embedding's dimensions, ``[tokens]`` float64."""
    import torch

    def run(module, device):
        e = embed(model, module, pred.ids, device).detach()[None].requires_grad_(True)  # (1, T, D)
        f = value_of(pred, outputs(model, module, pred.task, pred.causal, pred.ids, e, pred.position))
        (grad,) = torch.autograd.grad(f.sum(), e)
        return (grad * e).sum(dim=-1)[0].detach().double().cpu().numpy()

    return with_grad(model, run)


def trapezoid_weights(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``(alphas, weights)``: the n + 1 points 0, 1/n, …, 1 and the trapezoid rule's weights (sum 1)."""
    alphas = np.linspace(0.0, 1.0, steps + 1)
    weights = np.full(steps + 1, 1.0 / steps)
    weights[[0, -1]] /= 2
    return alphas, weights


def integrated_gradients(
    model,
    pred: Prediction,
    *,
    steps: int = 32,
    baseline: str = "zero",
    chunk: int = 16,
    progress: Callable[[float], None] | None = None,
) -> Importance:
    """Integrated gradients of f along the straight line from the baseline to the input embeddings.

    Args:
        steps: n intervals of the trapezoid rule (n + 1 gradient evaluations), 1 … :data:`MAX_STEPS`.
        baseline: ``"zero"`` (all-zero word embeddings) or ``"pad"`` (the padding token's at every position).
        chunk: points run in one batch.
        progress: called with the share done (0 … 1) after each batch.

    Returns:
        :class:`Importance` with ``f_input``, ``f_baseline`` and the completeness ``gap``.
    """
    import torch

    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise EngineError(f"Integrated gradients takes 1 to {MAX_STEPS} steps, got {steps!r}.")
    if baseline not in BASELINES:
        raise EngineError(f"The baseline is one of {', '.join(BASELINES)}, got {baseline!r}.")
    alphas, weights = trapezoid_weights(steps)
    pad = baseline_id(model) if baseline == "pad" else None

    def run(module, device):
        e = embed(model, module, pred.ids, device).detach()  # (T, D)
        base = torch.zeros_like(e) if pad is None else embed(model, module, [pad], device).detach().expand_as(e)
        total = torch.zeros_like(e)  # Σ_k w_k ∂f/∂e(point_k)
        ends = {}
        for start in range(0, len(alphas), chunk):
            a = torch.as_tensor(alphas[start : start + chunk], dtype=e.dtype, device=device)  # (b,)
            w = torch.as_tensor(weights[start : start + chunk], dtype=e.dtype, device=device)  # (b,)
            points = (base + a[:, None, None] * (e - base)).requires_grad_(True)  # (b, T, D)
            f = value_of(pred, outputs(model, module, pred.task, pred.causal, pred.ids, points, pred.position))
            (grad,) = torch.autograd.grad(f.sum(), points)  # (b, T, D): each point's own gradient
            total += (w[:, None, None] * grad).sum(dim=0)
            for k in range(len(a)):
                if start + k in (0, len(alphas) - 1):
                    ends[start + k] = float(f[k].detach())
            if progress is not None:
                progress(min(1.0, (start + len(a)) / len(alphas)))
        return ((e - base) * total).sum(dim=-1).detach().double().cpu().numpy(), ends[len(alphas) - 1], ends[0]

    scores, f_input, f_base = with_grad(model, run)
    return Importance(
        "integrated_gradients",
        scores,
        True,
        f_input=f_input,
        f_baseline=f_base,
        gap=f_input - f_base - float(scores.sum()),
        steps=steps,
    )


def importance(
    model,
    pred: Prediction,
    method: str,
    *,
    trace: AttentionTrace | None = None,
    steps: int = 32,
    baseline: str = "zero",
    loo: str = "remove",
    progress: Callable[[float], None] | None = None,
) -> Importance:
    """One method's :class:`Importance` for ``pred`` (:data:`METHODS`); ``trace``: the trace of the same input
    (the three attention readings; made here when None). Excluded positions (the [MASK]) score NaN."""
    if method not in METHODS:
        raise EngineError(f"Unknown method {method!r}; one of {', '.join(METHODS)}.")
    if method == "integrated_gradients":
        result = integrated_gradients(model, pred, steps=steps, baseline=baseline, progress=progress)
    else:
        if method in FROM_TRACE:
            if trace is None:
                trace = engine.trace(model, pred.text, causal=pred.causal, max_tokens=pred.max_tokens)
            read = {"attention": attention_scores, "rollout": rollout_scores, "contributions": contribution_scores}
            scores = read[method](trace, pred)
        elif method == "leave_one_out":
            scores = leave_one_out(model, pred, loo)
        else:
            scores = gradient_x_input(model, pred)
        result = Importance(method, np.asarray(scores, dtype=np.float64), method in SIGNED)
    scores = np.array(result.scores, dtype=np.float64)
    scores[list(pred.excluded)] = np.nan
    return Importance(result.method, scores, result.signed, result.f_input, result.f_baseline, result.gap, result.steps)


def ranked(importance_: Importance) -> np.ndarray:
    """What the rankings compare: the score's size (a token that pushes f down strongly matters as much as one
    that pushes it up)."""
    return np.abs(importance_.scores) if importance_.signed else importance_.scores
