"""The training loop: a generator of :class:`~engine.traces.TrainingSnapshot`s that can be paused and stopped.

::

    for snap in train(model, task, TrainConfig(steps=1000), control):
        draw(snap.loss, snap.metric, snap.probe_trace.pattern(0, 0))

One step::

    batch = task.sample(B, generator)                 # fresh examples, seeded
    loss  = cross_entropy(model(batch.inputs), batch.targets, ignore_index=−100)
    loss.backward();  clip ‖grad‖ ≤ grad_clip;  AdamW step with lr(step)

    lr(s) = lr · (s + 1) / warmup                              for s < warmup
          = lr · (r + (1 − r) · ½ (1 + cos(π · progress)))     after; r = min_lr_ratio, progress 0 → 1

The loop is model-agnostic: it needs ``forward_fn(model, inputs) -> logits (B, T, V)`` and
``trace_fn(model, token_ids, tokens) -> AttentionTrace``; both default to what our own
:class:`~engine.families.transformer.network.Transformer` needs (the fused ``sdpa`` attention for speed, and
:func:`~engine.families.transformer.adapter.trace_own` for the probe).

Between steps the loop looks at its :class:`TrainingControl`: paused, it blocks (no busy wait) until
resumed or stopped; stopped, it yields a final snapshot and ends. On the CPU, the same seed and the same
initial weights give the same losses, step for step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.builds import BUILD_LOCK
from engine.families.transformer.adapter import trace_own
from engine.families.transformer.network import Transformer, TransformerConfig
from engine.job_records import Control
from engine.records import Tokens
from engine.traces import TrainingSnapshot
from engine.traces.attention import AttentionTrace
from engine.training.tasks import IGNORE, Batch, Task, token_accuracy

ForwardFn = Callable[[nn.Module, torch.Tensor], torch.Tensor]
TraceFn = Callable[[nn.Module, list[int], Tokens], AttentionTrace]
DEVICES = ("auto", "cpu", "cuda")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run; validated on construction (a ``ValueError`` lists every problem)."""

    steps: int = 1500  # optimizer updates
    batch_size: int = 64  # examples per step
    lr: float = 3e-3  # peak learning rate
    warmup: int = 100  # steps of linear warm-up from lr/warmup to lr (0 = none)
    weight_decay: float = 0.01  # AdamW decay on matrices (not on biases and LayerNorm gains)
    snapshot_every: int = 50  # yield a snapshot every this many steps
    seed: int = 0  # seeds the training and evaluation data
    device: str = "auto"  # "auto" (CUDA when present), "cpu" or "cuda"
    grad_clip: float | None = 1.0  # clip the gradient norm to this (None = no clipping)
    eval_batch_size: int = 256  # examples in the fixed evaluation batch
    min_lr_ratio: float = 0.1  # the cosine decay ends at lr · min_lr_ratio

    def __post_init__(self) -> None:
        problems = []
        for name in ("steps", "batch_size", "snapshot_every", "eval_batch_size"):
            value = getattr(self, name)
            if not _is_int(value) or value <= 0:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        for name in ("warmup", "seed"):
            value = getattr(self, name)
            if not _is_int(value) or value < 0:
                problems.append(f"{name} must be a whole number ≥ 0, got {value!r}")
        if not _is_number(self.lr) or self.lr <= 0:
            problems.append(f"lr must be a finite number > 0, got {self.lr!r}")
        if not _is_number(self.weight_decay) or self.weight_decay < 0:
            problems.append(f"weight_decay must be a finite number ≥ 0, got {self.weight_decay!r}")
        if self.grad_clip is not None and (not _is_number(self.grad_clip) or self.grad_clip <= 0):
            problems.append(f"grad_clip must be a finite number > 0 or None, got {self.grad_clip!r}")
        if not _is_number(self.min_lr_ratio) or not 0 <= self.min_lr_ratio <= 1:
            problems.append(f"min_lr_ratio must be between 0 and 1, got {self.min_lr_ratio!r}")
        if self.device not in DEVICES:
            problems.append(f"device must be one of {list(DEVICES)}, got {self.device!r}")
        if problems:
            raise ValueError("TrainConfig: " + "; ".join(problems))

    def lr_at(self, step: int) -> float:
        """Learning rate of update number ``step`` (0-based): linear warm-up, then cosine decay."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        decay_steps = max(1, self.steps - self.warmup)
        progress = min(1.0, (step - self.warmup) / decay_steps)
        r = self.min_lr_ratio
        return self.lr * (r + (1 - r) * 0.5 * (1 + math.cos(math.pi * progress)))


class TrainingControl(Control):
    """Pause, resume and stop a running :func:`train` from any thread: a long job's :class:`engine.jobs.Control`
    (the queue hands its job's own to the loop)."""


def resolve_device(device: str) -> torch.device:
    """``"auto"`` → CUDA when available, else the CPU.

    Raises:
        ValueError: ``"cuda"`` was asked for and no CUDA device is available.
    """
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but no CUDA GPU is available (use 'auto' or 'cpu')")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def transformer_config_for(task: Task, **overrides: Any) -> TransformerConfig:
    """A :class:`TransformerConfig` sized for ``task``: 2 layers, 4 heads, d_model 64 unless overridden."""
    settings: dict[str, Any] = dict(
        vocab_size=len(task.vocab),
        max_len=task.seq_len,
        d_model=64,
        n_layers=2,
        n_heads=4,
        d_mlp=256,
        causal=task.causal,
    )
    settings.update(overrides)
    return TransformerConfig(**settings)


def make_model(task: Task, seed: int = 0, **overrides: Any) -> Transformer:
    """A freshly initialised :class:`Transformer` for ``task``; the same seed gives the same weights.

    The global random state is left as it was (the seed is used inside ``torch.random.fork_rng``).
    """
    cfg = transformer_config_for(task, **overrides)
    with BUILD_LOCK, torch.random.fork_rng(devices=[]):  # the seed's numbers are this build's (engine.builds)
        torch.manual_seed(seed)
        return Transformer(cfg)


def model_for(task: Task, shape: Any, *, seed: int = 0, **overrides: Any) -> Transformer:
    """:func:`make_model` sized by ``shape``: any record with ``d_model``, ``n_layers``, ``n_heads`` and ``d_mlp``."""
    dims = {name: getattr(shape, name) for name in ("d_model", "n_layers", "n_heads", "d_mlp")}
    return make_model(task, seed, **dims, **overrides)


def _default_forward(task: Task) -> ForwardFn:
    def forward(model: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
        if isinstance(model, Transformer):
            return model(inputs, causal=task.causal, attn_impl="sdpa")
        return model(inputs)

    return forward


def _default_trace(task: Task, model_id: str) -> TraceFn:
    def trace(model: nn.Module, token_ids: list[int], tokens: Tokens) -> AttentionTrace:
        if not isinstance(model, Transformer):
            raise TypeError(f"train: pass trace_fn for a {type(model).__name__} (the default traces our Transformer)")
        return trace_own(model, token_ids, tokens, model_id=model_id, causal=task.causal)

    return trace


def batch_loss(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Mean cross-entropy of ``logits`` ``(B, T, V)`` against the batch's targets, :data:`IGNORE` left out."""
    B, T, V = logits.shape
    return F.cross_entropy(logits.reshape(B * T, V).float(), batch.targets.reshape(B * T), ignore_index=IGNORE)


def make_optimizer(model: nn.Module, config: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW with weight decay on the matrices only (not on biases and norms); fused on CUDA."""
    decay, no_decay = [], []
    for p in model.parameters():  # shared (tied) parameters come once
        if p.requires_grad:
            (decay if p.ndim >= 2 else no_decay).append(p)
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=config.lr_at(0), betas=(0.9, 0.98), fused=device.type == "cuda")


def update(
    model: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor, config: TrainConfig, step: int
) -> None:
    """One optimizer step: the learning rate of ``step``, backward, ``‖grad‖ ≤ grad_clip``, then the update."""
    for group in optimizer.param_groups:
        group["lr"] = config.lr_at(step)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if config.grad_clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
    optimizer.step()


@dataclass
class _Clock:
    """Training time: counts only while running steps (pauses and snapshots excluded)."""

    elapsed: float = 0.0
    window_time: float = 0.0  # since the previous snapshot
    window_tokens: int = 0
    window_loss: float = 0.0
    window_steps: int = 0
    _t0: float = field(default=0.0, repr=False)

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def lap(self, tokens: int, loss: float) -> None:
        dt = time.perf_counter() - self._t0
        self.elapsed += dt
        self.window_time += dt
        self.window_tokens += tokens
        self.window_loss += loss
        self.window_steps += 1

    def reset_window(self) -> None:
        self.window_time, self.window_tokens, self.window_loss, self.window_steps = 0.0, 0, 0.0, 0


def train(
    model: nn.Module,
    task: Task,
    config: TrainConfig,
    control: Control | None = None,
    *,
    forward_fn: ForwardFn | None = None,
    trace_fn: TraceFn | None = None,
    model_id: str | None = None,
) -> Iterator[TrainingSnapshot]:
    """Train ``model`` on ``task``, yielding a snapshot at step 0, every ``snapshot_every`` steps and at the end.

    The model is moved to the chosen device and trained in place; when the generator finishes (or is
    closed) the model is left in eval mode on that device. Nothing global is changed: the data come
    from ``torch.Generator``s seeded with ``config.seed`` (training) and ``config.seed + 1`` (the fixed
    evaluation batch).

    Args:
        model: any module; with the default ``forward_fn`` our Transformer or ``model(inputs) -> logits``.
        task: what to learn (:mod:`engine.training.tasks`).
        config: the run's settings.
        control: pause / resume / stop from another thread (optional).
        forward_fn: ``(model, inputs (B, T)) -> logits (B, T, V)``.
        trace_fn: ``(model, token_ids, tokens) -> AttentionTrace`` for the probe; the default uses
            :func:`trace_own`. Called with the model in eval mode and under ``torch.no_grad()``.
        model_id: the id recorded in the probe traces (default ``"train:<task name>"``).

    Yields:
        :class:`TrainingSnapshot`; the last one has ``final=True`` (and ``stopped=True`` when stopped).
        When a stop comes right after a snapshot, the final one repeats that snapshot's step and
        numbers.

    Raises:
        ValueError: the model's logits do not fit the task, or ``device="cuda"`` without a GPU.

    Example:
        >>> task = make_task("reverse")
        >>> snaps = list(train(make_model(task), task, TrainConfig(steps=200)))
        >>> snaps[-1].metric
    """
    device = resolve_device(config.device)
    control = control or TrainingControl()
    forward = forward_fn or _default_forward(task)
    trace = trace_fn or _default_trace(task, model_id or f"train:{task.name}")
    data_gen = torch.Generator().manual_seed(config.seed)
    eval_batch = task.sample(config.eval_batch_size, torch.Generator().manual_seed(config.seed + 1)).to(device)
    probe_ids = task.probe()
    probe_tokens = task.vocab.tokens_for_display(probe_ids)
    model.to(device)
    optimizer = make_optimizer(model, config, device)
    clock = _Clock()
    tokens_per_batch = config.batch_size * task.seq_len

    def snapshot(step: int, *, final: bool = False) -> TrainingSnapshot:
        model.eval()
        try:
            with torch.no_grad():
                logits = forward(model, eval_batch.inputs)  # (B, T, V)
                _check_logits(logits, eval_batch, task)
                eval_loss = float(batch_loss(logits, eval_batch))
                metric = task.metric(logits, eval_batch)
                accuracy = token_accuracy(logits, eval_batch)
                probe_trace = trace(model, probe_ids, probe_tokens)
        finally:
            model.train()
        window = clock.window_steps
        snap = TrainingSnapshot(
            step=step,
            total_steps=config.steps,
            loss=clock.window_loss / window if window else eval_loss,
            eval_loss=eval_loss,
            metric=float(metric),
            token_accuracy=accuracy,
            lr=config.lr_at(max(step - 1, 0)),
            tokens_per_s=clock.window_tokens / clock.window_time if clock.window_time > 0 else 0.0,
            elapsed_s=clock.elapsed,
            probe_trace=probe_trace,
            device=device.type,
            metric_name=task.metric_name,
            final=final,
            stopped=final and step < config.steps,
        )
        clock.reset_window()
        return snap

    model.train()
    try:
        last = snapshot(0)
        yield last
        step = 0
        while step < config.steps:
            while not control.wait_if_paused(timeout=1.0):  # blocks while paused; wakes on stop
                if control.is_stopped:
                    break
            if control.is_stopped:
                break
            clock.start()
            batch = task.sample(config.batch_size, data_gen).to(device)
            loss = batch_loss(forward(model, batch.inputs), batch)  # logits (B, T, V)
            update(model, optimizer, loss, config, step)
            step += 1
            clock.lap(tokens_per_batch, float(loss.detach()))
            if step % config.snapshot_every == 0 and step < config.steps:
                last = snapshot(step)
                yield last
        if last.step == step:  # stopped right after a snapshot: repeat it, marked final
            yield replace(last, final=True, stopped=step < config.steps)
        else:
            yield snapshot(step, final=True)
    finally:
        model.eval()


def _check_logits(logits: torch.Tensor, batch: Batch, task: Task) -> None:
    B, T = batch.inputs.shape
    if logits.ndim != 3 or tuple(logits.shape[:2]) != (B, T) or logits.shape[2] < len(task.vocab):
        raise ValueError(
            f"train: the model returned logits of shape {tuple(logits.shape)}; the {task.name} task needs "
            f"({B}, {T}, V) with V ≥ {len(task.vocab)} (its vocabulary size)"
        )
