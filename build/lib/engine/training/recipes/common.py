"""What every recipe does around its own model: log the training loss, time the run, fill the card's run fields."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch
from torch import nn

from engine.families.transformer.network import Transformer, TransformerConfig
from engine.training.loop import TrainConfig, train, transformer_config_for
from engine.training.tasks import Task

T = TypeVar("T")
Log = Callable[[str], None]


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` cut into consecutive slices of ``size`` (the last one shorter)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def log_line(text: str) -> None:
    """The default log: one flushed line on stdout (a rebuild runs for minutes)."""
    print(text, flush=True)


@dataclass(frozen=True)
class Run:
    """What a recipe's card says about the training run itself."""

    wall_s: float  # wall-clock seconds, snapshots included
    device: str  # "cpu" or "cuda"
    last_loss: float  # the training loss of the last window
    training_s: float  # seconds spent in training steps only


@dataclass
class LossLog:
    """The mean training loss since the previous line, logged every ``every`` steps and at the last one."""

    config: TrainConfig
    every: int
    log: Log = log_line
    mean: float = float("nan")  # the mean of the last logged window
    started: float = field(default_factory=time.perf_counter)
    _sum: float = field(default=0.0, init=False, repr=False)
    _count: int = field(default=0, init=False, repr=False)

    @property
    def elapsed(self) -> float:
        """Seconds since the log was made."""
        return time.perf_counter() - self.started

    def run(self, device: str) -> Run:
        """The run so far, on ``device``, as the card reports it."""
        return Run(self.elapsed, device, self.mean, self.elapsed)

    def add(self, step: int, loss: float) -> None:
        """Count the loss of ``step`` (0-based); log the window's mean when it closes."""
        self._sum, self._count = self._sum + loss, self._count + 1
        if (step + 1) % self.every == 0 or step + 1 == self.config.steps:
            self.mean, self._sum, self._count = self._sum / self._count, 0.0, 0
            self.log(
                f"step {step + 1:5d}/{self.config.steps}  loss {self.mean:.4f}  "
                f"lr {self.config.lr_at(step):.2e}  {self.elapsed:.0f} s"
            )


def train_logged(model: nn.Module, task: Task, config: TrainConfig, *, log: Log = log_line, **train_args: Any) -> Run:
    """Run :func:`engine.training.loop.train` to the end, logging each snapshot; ``train_args`` go to ``train``."""
    started = time.perf_counter()
    for snap in train(model, task, config, **train_args):
        log(
            f"step {snap.step:5d}/{snap.total_steps}  loss {snap.loss:.4f}  {snap.metric_name} {snap.metric:.3f}  "
            f"lr {snap.lr:.2e}  {snap.tokens_per_s:,.0f} tok/s  {time.perf_counter() - started:.0f} s"
        )
    return Run(time.perf_counter() - started, snap.device, snap.loss, snap.elapsed_s)


def run_fields(name: str, run: Run, *, steps: int, seed: int, metrics: dict) -> dict:
    """The card fields every recipe writes: steps, time, machine, seed, figures and the rebuild command."""
    threads = torch.get_num_threads()
    return {
        "steps": steps,
        "wall_time_s": round(run.wall_s, 1),
        "device": f"{run.device} ({platform.processor() or platform.machine()}, {threads} thread{'s' * (threads != 1)})",
        "seed": seed,
        "final_metrics": metrics,
        "command": f"python -m engine.training.pretrain {name}",
    }


def stories_transformer(task: Task, *, causal: bool) -> tuple[TransformerConfig, Transformer]:
    """The model of both stories recipes: 3 layers × 4 heads, d_model 128, learned positions, ``task``'s vocabulary
    and window; ``causal`` makes it the decoder (GPT) or the encoder (BERT). Seed torch before calling."""
    cfg = transformer_config_for(
        task, d_model=128, n_layers=3, n_heads=4, d_mlp=512, pos_encoding="learned", causal=causal
    )
    return cfg, Transformer(cfg)
