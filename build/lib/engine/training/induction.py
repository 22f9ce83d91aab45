"""Induction heads forming: a two-layer attention-only transformer on repeated random letters.

The data (Olsson et al. 2022's repeated random tokens, with letters as tokens)::

    <bos> x_1 … x_m x_1 … x_m x_1 …      m random letters (with replacement), repeated to fill 64 tokens

``m`` is drawn per sequence from ``MIN_PERIOD … MAX_PERIOD``, so no fixed offset finds the earlier copy:
the model has to look up where the current letter occurred before and copy the letter after it. Every
position is scored on the next letter; before ``m`` nothing can be known (loss ln 26 ≈ 3.26), after it
an induction head can predict almost everything. The in-context-learning score
(:func:`engine.analysis.induction.icl_score`) is the loss late in the context minus early: ≈ 0 before
the phase change, strongly negative after it.

:func:`measure` reads the per-head scores of :mod:`engine.analysis.induction` from a model;
:func:`train_induction` trains one and yields an :class:`InductionProgress` at each snapshot (the page
shows them as curves while it trains; the long-work lane reads each as a yield point).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from engine.analysis.induction import copying_score, icl_score, prefix_matching_score, previous_token_score
from engine.builds import BUILD_LOCK
from engine.capture import capture
from engine.families.transformer.network import Transformer, TransformerConfig
from engine.training.job_settings import number_in, whole_in
from engine.training.loop import TrainConfig, train
from engine.training.task_base import IGNORE, PROBE_SEED, Batch, Task, token_accuracy
from engine.vocab import BOS_ID, SPECIALS, Vocab

LETTERS = tuple(chr(ord("a") + i) for i in range(26))
CONTEXT = 64  # tokens per training sequence, <bos> included
MIN_PERIOD, MAX_PERIOD = 8, 24  # the repeated run's length m
PROBE_PERIOD = 12  # the traced probe: <bos> + 12 letters + the same 12 (25 tokens)
SCORE_PERIOD = 20  # the head scores' sequences: <bos> + 20 letters + the same 20 (41 tokens)
SCORE_SEED, EVAL_SEED = 4321, 8765
SCORE_BATCH, EVAL_BATCH = 64, 128


@dataclass(frozen=True)
class RepeatedLettersTask(Task):
    """``<bos>`` then a run of ``m`` random letters repeated until the context is full; predict every next letter."""

    name: ClassVar[str] = "repeated-letters"
    description: ClassVar[str] = "A random run of letters repeated over and over: predict each next letter."
    metric_name: ClassVar[str] = "token accuracy"
    context: int = CONTEXT
    min_period: int = MIN_PERIOD
    max_period: int = MAX_PERIOD

    def __post_init__(self) -> None:
        if not 2 <= self.min_period <= self.max_period < self.context:
            raise ValueError(
                f"{self.name}: need 2 ≤ min_period ≤ max_period < context, got "
                f"{self.min_period}, {self.max_period}, {self.context}"
            )
        object.__setattr__(self, "_vocab", Vocab.from_words(LETTERS))

    @property
    def vocab(self) -> Vocab:
        return self._vocab  # type: ignore[attr-defined]

    @property
    def seq_len(self) -> int:
        return self.context

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        n = self.context - 1
        run = torch.randint(len(LETTERS), (batch_size, self.max_period), generator=generator)  # (B, max m)
        m = torch.randint(self.min_period, self.max_period + 1, (batch_size, 1), generator=generator)  # (B, 1)
        index = torch.arange(n)[None, :] % m  # (B, n): position p after <bos> holds x_{p mod m}
        letters = run.gather(1, index) + len(SPECIALS)  # (B, n) ids
        seq = torch.cat([torch.full((batch_size, 1), BOS_ID, dtype=torch.long), letters], dim=1)  # (B, T)
        targets = torch.full_like(seq, IGNORE)
        targets[:, :-1] = seq[:, 1:]  # every position predicts the next letter
        return Batch(seq, targets)

    def probe(self) -> list[int]:
        return repeated_run(1, PROBE_PERIOD, torch.Generator().manual_seed(PROBE_SEED))[0].tolist()

    def metric(self, logits: torch.Tensor, batch: Batch) -> float:
        return token_accuracy(logits, batch)


def repeated_run(batch_size: int, period: int, generator: torch.Generator) -> torch.Tensor:
    """``(B, 2·period + 1)`` ids: ``<bos>`` + ``period`` random letters + the same letters again (TL's rep tokens)."""
    run = torch.randint(len(LETTERS), (batch_size, period), generator=generator) + len(SPECIALS)  # (B, n)
    bos = torch.full((batch_size, 1), BOS_ID, dtype=torch.long)
    return torch.cat([bos, run, run], dim=1)  # (B, 2n+1)


def induction_config(d_model: int = 64, n_heads: int = 4, pos_encoding: str = "rope") -> TransformerConfig:
    """The two-layer attention-only transformer that learns the task (letters as single tokens)."""
    return TransformerConfig(
        vocab_size=len(SPECIALS) + len(LETTERS),
        d_model=d_model,
        n_layers=2,
        n_heads=n_heads,
        max_len=CONTEXT,
        pos_encoding=pos_encoding,
        causal=True,
        attn_only=True,
    )


@dataclass(frozen=True)
class HeadScores:
    """Per-head scores, each ``[layers, heads]`` float64 (see :mod:`engine.analysis.induction`)."""

    previous_token: np.ndarray
    prefix_matching: np.ndarray
    copying: np.ndarray

    def to_dict(self) -> dict[str, list[list[float]]]:
        return {
            name: np.round(getattr(self, name), 4).tolist() for name in ("previous_token", "prefix_matching", "copying")
        }


@torch.no_grad()
def loss_by_position(model: Transformer, batch: Batch) -> np.ndarray:
    """``[T]`` the mean cross-entropy of the prediction at each position (NaN where nothing is scored)."""
    logits = model(batch.inputs, causal=True, attn_impl="sdpa").float()  # (B, T, V)
    B, T, V = logits.shape
    loss = F.cross_entropy(
        logits.reshape(B * T, V), batch.targets.reshape(B * T), ignore_index=IGNORE, reduction="none"
    ).reshape(B, T)
    scored = (batch.targets != IGNORE).float()  # (B, T)
    counts = scored.sum(0)  # (T,)
    curve = (loss * scored).sum(0) / counts.clamp(min=1)  # (T,)
    return np.where(counts.cpu().numpy() > 0, curve.cpu().numpy(), np.nan)


def ov_circuits(model: Transformer, layer: int) -> np.ndarray:
    """``[heads, 26, 26]`` each head's OV circuit from the letters it attends to to the letters' logits.

    ``E[a] · diag(g₁) · W_V^h · W_O^h · diag(g_f) · W_U[:, b]``: the embedding of letter ``a``, the layer's
    LayerNorm gain ``g₁`` and the final one ``g_f`` (the norms' centring and scaling left out, biases and
    position vectors too), the head's value and output slices, the unembedding column of letter ``b``.
    """
    cfg = model.cfg
    dh = cfg.d_head
    letters = torch.arange(len(SPECIALS), len(SPECIALS) + len(LETTERS))
    block = model.blocks[layer]
    x = model.embed.weight[letters].double() * block.ln1.weight.double()  # (26, D)
    w_v = block.attn.w_v.weight.double().T  # (D, D): x @ w_v = values, heads side by side
    w_o = block.attn.w_o.weight.double().T  # (D, D)
    gain_f = model.ln_final.weight.double() if isinstance(model.ln_final, torch.nn.LayerNorm) else 1.0
    w_u = (model.unembed.weight.double() * gain_f).T[:, letters]  # (D, 26)
    heads = [x @ w_v[:, h * dh : (h + 1) * dh] @ w_o[h * dh : (h + 1) * dh] @ w_u for h in range(cfg.n_heads)]
    return torch.stack(heads).detach().numpy()  # (H, 26, 26)


@torch.no_grad()
def patterns(model: Transformer, ids: torch.Tensor) -> np.ndarray:
    """``[layers, batch, heads, T, T]`` every head's attention pattern on ``ids`` (explicit attention, causal)."""
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(model.cfg.n_layers)]
    with capture(model, names=names) as acts:
        model(ids, causal=True, attn_impl="explicit")
    return np.stack([acts[name].float().cpu().numpy() for name in names])


def head_scores(
    model: Transformer, *, batch_size: int = SCORE_BATCH, period: int = SCORE_PERIOD, seed: int = SCORE_SEED
) -> HeadScores:
    """Previous-token and prefix-matching scores on ``batch_size`` fixed repeated runs, and each head's copying score."""
    device = next(model.parameters()).device
    ids = repeated_run(batch_size, period, torch.Generator().manual_seed(seed)).to(device)  # (B, 2n+1)
    p = patterns(model, ids).mean(axis=1)  # (L, H, T, T): averaged over the batch
    copying = np.array([[copying_score(ov) for ov in ov_circuits(model, layer)] for layer in range(model.cfg.n_layers)])
    return HeadScores(previous_token_score(p), prefix_matching_score(p, period), copying)


def eval_batch(seed: int = EVAL_SEED, size: int = EVAL_BATCH) -> Batch:
    """The fixed batch the ICL score and the loss curve by position are measured on."""
    return RepeatedLettersTask().sample(size, torch.Generator().manual_seed(seed))


@dataclass(frozen=True)
class InductionPoint:
    """The model at one snapshot.

    Attributes:
        step: optimizer updates done.
        loss: training loss since the previous point (at step 0 the evaluation loss).
        eval_loss: loss on the fixed evaluation batch, every position.
        icl: in-context-learning score on that batch (nats; negative = learns from context).
        scores: per-head scores.
        probe: ``[layers, heads, T, T]`` float32 attention on the probe (``<bos>`` + 12 letters twice).
        curve: ``[T]`` the evaluation loss of the prediction at each position (NaN at the last).
        elapsed_s: training seconds so far.
    """

    step: int
    loss: float
    eval_loss: float
    icl: float
    scores: HeadScores
    probe: np.ndarray
    curve: np.ndarray
    elapsed_s: float


@dataclass(frozen=True)
class InductionProgress:
    """One update of a running job: the points so far, and ``fraction`` / ``text`` for the progress bar."""

    points: tuple[InductionPoint, ...]
    total_steps: int
    probe_tokens: tuple[str, ...]
    final: bool = False

    @property
    def fraction(self) -> float:
        return self.points[-1].step / self.total_steps if self.points else 0.0

    @property
    def text(self) -> str:
        last = self.points[-1]
        return (
            f"step {last.step:,} of {self.total_steps:,} · loss {last.loss:.2f} · ICL score {last.icl:+.2f} nats · "
            f"{last.elapsed_s:.0f} s"
        )


#: the recipe's settings, also the page's defaults: a constant learning rate after 40 steps of warm-up (the phase
#: change came at steps 150–300 for 3 of 4 seeds tried; bench/bench_induction.py times it)
DEFAULT_STEPS, DEFAULT_LR, DEFAULT_BATCH, DEFAULT_EVERY = 600, 1e-2, 32, 20
#: what the page lets a user change: (lowest, highest)
STEP_RANGE, LR_RANGE = (50, 3000), (1e-4, 3e-2)


def check_settings(steps: Any, lr: Any, seed: Any) -> tuple[int, float, int]:
    """Validated ``(steps, lr, seed)`` for a live run.

    Raises:
        ValueError: a readable message naming every problem, one sentence each (shown to the user as it is).
    """
    problems = []
    if not whole_in(steps, *STEP_RANGE):
        problems.append(f"Steps must be a whole number from {STEP_RANGE[0]} to {STEP_RANGE[1]:,}, got {steps!r}.")
    if not number_in(lr, *LR_RANGE):
        problems.append(f"The learning rate must be from {LR_RANGE[0]:g} to {LR_RANGE[1]:g}, got {lr!r}.")
    if not whole_in(seed, 0, 2**31 - 1):
        problems.append(f"The seed must be a whole number ≥ 0, got {seed!r}.")
    if problems:
        raise ValueError(" ".join(problems))
    return steps, float(lr), seed


def make_model(seed: int = 0, **config: Any) -> Transformer:
    """A freshly initialised model for the task (``seed`` fixes the weights; the global RNG is left alone)."""
    with BUILD_LOCK, torch.random.fork_rng(devices=[]):  # the seed's numbers are this build's (engine.builds)
        torch.manual_seed(seed)
        return Transformer(induction_config(**config))


def train_induction(
    steps: int = DEFAULT_STEPS,
    lr: float = DEFAULT_LR,
    seed: int = 0,
    *,
    batch_size: int = DEFAULT_BATCH,
    every: int = DEFAULT_EVERY,
    model: Transformer | None = None,
    device: str = "cpu",
) -> Iterator[InductionProgress]:
    """Train the attention-only model, yielding the points so far at step 0, every ``every`` steps and at the end.

    Args:
        steps, lr, seed: the run's settings (checked by :func:`check_settings`).
        batch_size: sequences per step.
        every: steps between points.
        model: train this model (default: :func:`make_model` with ``seed``); trained in place.
        device: ``"cpu"``, ``"cuda"`` or ``"auto"``.

    Yields:
        :class:`InductionProgress`, each with every point so far; the last has ``final=True``.
    """

    steps, lr, seed = check_settings(steps, lr, seed)
    task = RepeatedLettersTask()
    model = make_model(seed) if model is None else model
    config = TrainConfig(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        warmup=min(40, steps // 10),
        seed=seed,
        snapshot_every=every,
        eval_batch_size=32,
        device=device,
        weight_decay=0.0,
        min_lr_ratio=1.0,
    )
    held = eval_batch()
    probe = torch.tensor([task.probe()])
    tokens = tuple(task.vocab.tokens_for_display(probe[0].tolist()).strings)
    points: list[InductionPoint] = []

    def no_trace(_model, _ids, _tokens):
        return None  # the probe's patterns are read below, once per point

    for snap in train(
        model, task, config, forward_fn=lambda m, x: m(x, causal=True, attn_impl="sdpa"), trace_fn=no_trace
    ):
        model.eval()
        try:
            dev = next(model.parameters()).device
            curve = loss_by_position(model, held.to(dev))
            point = InductionPoint(
                step=snap.step,
                loss=snap.loss,
                eval_loss=float(np.nanmean(curve)),
                icl=icl_score(curve),
                scores=head_scores(model),
                probe=patterns(model, probe.to(dev))[:, 0].astype(np.float32),
                curve=curve,
                elapsed_s=snap.elapsed_s,
            )
        finally:
            model.train()
        if points and points[-1].step == point.step:
            points[-1] = point
        else:
            points.append(point)
        yield InductionProgress(tuple(points), steps, tokens, final=snap.final)
    model.eval()
