"""Settings of one live-training job: validated server-side, sized against a budget, turned into a task + model.

The page's widgets have bounds, but nothing a browser sends is trusted: :func:`validate_settings`
checks every field's type and range (NaN, ±inf, negatives, bools posing as ints, unknown names) and the
model's size against :data:`MAX_PARAMS` and an activation-memory estimate::

    activations ≈ 4 bytes · B · T · L · (12·D + 2·H·T + 2·d_mlp)      (saved for the backward pass)

and raises one :class:`JobSettingsError` that lists every problem in plain words.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from typing import Any, Mapping

from engine.records import EngineError

#: tasks offered by the page, in menu order: name → label
TASK_LABELS: dict[str, str] = {
    "reverse": "Reverse (a c b <sep> b c a)",
    "copy": "Copy (a c b <sep> a c b)",
    "sort": "Sort (c a b <sep> a b c)",
    "previous-token": "Previous token",
    "induction": "Induction (a run, then the same run again)",
    "stories": "Story language model (next word)",
    "translation": "Toy translation English → French",
}
POS_ENCODINGS = ("sinusoidal", "learned", "rope", "alibi", "none")
DEVICES = ("auto", "cpu", "cuda")
MAX_PARAMS = 4_000_000  # a bigger model is refused (the server is shared)
MAX_ACTIVATION_BYTES = 768 * 2**20  # estimated activations kept for one backward pass
#: (low, high) of every integer field
INT_RANGES: dict[str, tuple[int, int]] = {
    "n_layers": (1, 4),
    "n_heads": (1, 8),
    "d_model": (16, 256),
    "steps": (1, 20_000),
    "batch_size": (1, 256),
    "seed": (0, 2**31 - 1),
    "snapshot_every": (1, 20_000),
}
LR_RANGE = (1e-5, 0.1)
EVAL_BATCH = 64  # held-out examples scored at each snapshot (the main cost of a snapshot)


class JobSettingsError(EngineError, ValueError):
    """Settings that cannot be trained; the message lists every problem."""


@dataclass(frozen=True)
class JobSettings:
    """What to train and how (all plain data; ``validate_settings`` builds it from untrusted input)."""

    task: str = "reverse"  # a key of TASK_LABELS
    n_layers: int = 2  # transformer blocks
    n_heads: int = 4  # heads per block (d_model must be divisible by it)
    d_model: int = 64  # residual width; the MLP is 4·d_model wide
    pos_encoding: str = "learned"  # sinusoidal | learned | rope | alibi | none
    causal: bool = True  # causal mask (a decoder); off lets every token see the answer, too
    steps: int = 500  # optimizer updates
    batch_size: int = 64  # examples per update
    lr: float = 3e-3  # peak learning rate (warm-up, then cosine decay)
    seed: int = 0  # model initialisation and data
    snapshot_every: int | None = None  # None: about 40 snapshots per run, at least 10 steps apart
    device: str = "auto"  # auto = CUDA when present

    @property
    def d_mlp(self) -> int:
        return 4 * self.d_model

    @property
    def every(self) -> int:
        """Steps between snapshots."""
        if self.snapshot_every is not None:
            return self.snapshot_every
        # a snapshot (evaluation on EVAL_BATCH examples + the probe trace) costs about half a training
        # step of the default model: every 10+ steps keeps the UI's overhead well under 15% (bench/bench_train.py)
        return max(10, self.steps // 40)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def whole_in(value: Any, low: int, high: int) -> bool:
    """``value`` is an int (not a bool) from ``low`` to ``high``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def number_in(value: Any, low: float, high: float) -> bool:
    """``value`` is a finite int or float (not a bool) from ``low`` to ``high``."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and low <= value <= high
    )


def validate_settings(raw: Mapping[str, Any] | JobSettings) -> JobSettings:
    """Check untrusted settings and return them as :class:`JobSettings`.

    Args:
        raw: field name → value (missing fields take the defaults), or a JobSettings to re-check.

    Returns:
        The validated settings.

    Raises:
        JobSettingsError: unknown fields, wrong types, NaN / inf / negative / out-of-range values,
            inconsistent sizes, or a model beyond the parameter or memory budget (all listed).
    """
    data = raw.to_dict() if isinstance(raw, JobSettings) else raw
    if not isinstance(data, Mapping):
        raise JobSettingsError(f"settings must be a mapping of names to values, got {type(data).__name__}")
    known = [f.name for f in fields(JobSettings)]
    problems = [f"unknown setting {k!r}" for k in data if k not in known]
    values = {**JobSettings().to_dict(), **{k: v for k, v in data.items() if k in known}}
    if values["task"] not in TASK_LABELS:
        problems.append(f"task must be one of {list(TASK_LABELS)}, got {values['task']!r}")
    for name, (low, high) in INT_RANGES.items():
        value = values[name]
        if name == "snapshot_every" and value is None:
            continue
        if not whole_in(value, low, high):
            problems.append(f"{name} must be a whole number from {low} to {high:,}, got {value!r}")
    lr = values["lr"]
    if not number_in(lr, *LR_RANGE):
        problems.append(f"learning rate must be a finite number from {LR_RANGE[0]:g} to {LR_RANGE[1]:g}, got {lr!r}")
    if values["pos_encoding"] not in POS_ENCODINGS:
        problems.append(f"positional encoding must be one of {list(POS_ENCODINGS)}, got {values['pos_encoding']!r}")
    if not isinstance(values["causal"], bool):
        problems.append(f"causal must be true or false, got {values['causal']!r}")
    if values["device"] not in DEVICES:
        problems.append(f"device must be one of {list(DEVICES)}, got {values['device']!r}")
    if not problems:
        d, h = values["d_model"], values["n_heads"]
        if d % h:
            problems.append(f"d_model ({d}) must be divisible by the number of heads ({h})")
        elif values["pos_encoding"] == "rope" and (d // h) % 2:
            problems.append(f"RoPE rotates pairs of numbers: d_model / heads = {d // h} must be even")
    if problems:
        raise JobSettingsError("Cannot train with these settings: " + "; ".join(problems) + ".")
    settings = JobSettings(**{**values, "lr": float(lr)})
    _check_budget(settings)
    return settings


@lru_cache(maxsize=8)
def build_task(name: str):
    """The task for ``name`` (corpus tasks are generated once per process and reused)."""
    from engine.training.corpus_tasks import StoriesTask, TranslationTask
    from engine.training.tasks import make_task

    if name == "stories":
        return StoriesTask(seq_len_=48, n_stories=4_000)
    if name == "translation":
        return TranslationTask()
    return make_task(name)


def count_params(settings: JobSettings, vocab_size: int, seq_len: int) -> int:
    """Parameters of the transformer these settings build (a closed form, checked by a test)."""
    D, L, M, V = settings.d_model, settings.n_layers, settings.d_mlp, vocab_size
    per_block = 4 * (D * D + D) + (D * M + M) + (M * D + D) + 4 * D  # Q K V O, MLP, two LayerNorms
    pos = seq_len * D if settings.pos_encoding == "learned" else 0
    return V * D + pos + L * per_block + 2 * D + D * V  # embed, blocks, final LN, unembed (no bias)


def activation_bytes(settings: JobSettings, seq_len: int) -> int:
    """Rough bytes of activations one training step keeps for the backward pass (float32)."""
    B, T, L = settings.batch_size, seq_len, settings.n_layers
    D, H, M = settings.d_model, settings.n_heads, settings.d_mlp
    return 4 * B * T * L * (12 * D + 2 * H * T + 2 * M)


def _check_budget(settings: JobSettings) -> None:
    task = build_task(settings.task)
    params = count_params(settings, len(task.vocab), task.seq_len)
    problems = []
    if params > MAX_PARAMS:
        problems.append(
            f"the model would have {params:,} parameters; the limit is {MAX_PARAMS:,} "
            "(use fewer layers or a smaller d_model)"
        )
    act = activation_bytes(settings, task.seq_len)
    if act > MAX_ACTIVATION_BYTES:
        problems.append(
            f"one step would keep about {act / 2**20:,.0f} MiB of activations; the limit is "
            f"{MAX_ACTIVATION_BYTES / 2**20:,.0f} MiB (use a smaller batch or model)"
        )
    if problems:
        raise JobSettingsError("Cannot train with these settings: " + "; ".join(problems) + ".")


def build_model(settings: JobSettings, task):
    """A fresh :class:`~engine.families.transformer.network.Transformer` for ``task`` (seeded by ``settings.seed``)."""
    from engine.training.loop import model_for

    return model_for(task, settings, seed=settings.seed, pos_encoding=settings.pos_encoding, causal=settings.causal)


def time_steps(settings: JobSettings, n: int = 4) -> float:
    """Seconds per training step on the CPU: ``n`` steps of a throwaway model, the fastest after the first, in the
    calling thread's CPU time (with one torch thread all of a step's work; a busy machine delays the steps but does
    not add CPU time to them, so the estimate holds there too).
    """
    import torch
    import torch.nn.functional as F

    task = build_task(settings.task)
    model = build_model(settings, task)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr)
    batch = task.sample(settings.batch_size, torch.Generator().manual_seed(0))
    times = []
    for _ in range(max(2, n)):
        t0 = time.thread_time()
        logits = model(batch.inputs, causal=settings.causal, attn_impl="sdpa")  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        times.append(time.thread_time() - t0)
    return max(min(times[1:]), 1e-6)
