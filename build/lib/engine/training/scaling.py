"""The scaling mini-lab: six sizes of the stories decoder, one data order, one schedule.

``python -m engine.training.scaling`` trains every size in :data:`SIZES` on the generated stories (the
``tiny-gpt-stories`` corpus) with the same seed for the data (so every size sees the same batches in the same
order), the same steps, batch, learning rate and schedule, and records at every snapshot::

    step, tokens seen = step · batch · seq_len, compute C = 6 · N · tokens, train loss, held-out loss

N is Kaplan et al.'s count of non-embedding parameters (:func:`non_embedding_params`: everything but the
token and position embeddings and the unembedding). The held-out loss is measured on a fixed batch of
windows from the held-out stories. Then it fits L(N) to the final held-out losses, finds the frontier of
loss against compute (:mod:`engine.analysis.scaling_laws`) and writes ``assets/scaling/stories-scaling.json``
with the machine and the settings. One more size (:data:`LIVE_SIZES`) can be trained the same way as a job
on the server's long-work lane (:func:`run_size` is a generator of progress; its return value is the run).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.analysis.scaling_laws import FLOPS_PER_TOKEN_PER_PARAM, FORMAT, Run, analyse
from engine.registry import ASSETS

CURVES = ASSETS / "scaling" / "stories-scaling.json"
COMMAND = "python -m engine.training.scaling"


@dataclass(frozen=True)
class Size:
    """One model shape (the rest is the stories decoder's: learned positions, pre-norm, d_mlp = 4·d_model)."""

    d_model: int
    n_layers: int
    n_heads: int

    @property
    def name(self) -> str:
        return f"d{self.d_model}-L{self.n_layers}"

    @property
    def d_mlp(self) -> int:
        return 4 * self.d_model

    @property
    def n_params(self) -> int:
        """Non-embedding parameters of this shape, without building it: per block Q, K, V, O (d² + d each), two
        LayerNorms (2d each) and the MLP (8d² + 5d), plus the final LayerNorm; ≈ 12·L·d² (Kaplan's estimate)."""
        d = self.d_model
        return self.n_layers * (12 * d * d + 13 * d) + 2 * d


#: the shipped sizes: d_model 16 → 96, layers 1 → 4 (non-embedding parameters ~3k → ~450k)
SIZES: tuple[Size, ...] = (
    Size(16, 1, 2),
    Size(24, 1, 2),
    Size(32, 2, 2),
    Size(48, 2, 4),
    Size(64, 3, 4),
    Size(96, 4, 4),
)
#: sizes a page may train live (small: within one job's time budget on a shared core)
LIVE_SIZES: tuple[Size, ...] = (Size(20, 1, 2), Size(40, 1, 4), Size(40, 2, 4), Size(56, 2, 4))


@dataclass(frozen=True)
class Settings:
    """What every size shares (recorded in the JSON)."""

    steps: int = 300  # optimizer updates
    batch_size: int = 16  # windows per step
    seq_len: int = 64  # tokens per window
    lr: float = 3e-3  # peak learning rate (AdamW, linear warm-up then cosine to lr/10: engine.training.loop)
    warmup: int = 30  # warm-up steps
    every: int = 25  # steps between snapshots
    n_stories: int = 20_000  # the corpus (the tiny-gpt-stories one), 5% held out
    held_out_windows: int = 64  # windows of held-out stories in the fixed evaluation batch
    seed: int = 0  # data order, held-out batch and every model's initial weights

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.seq_len


@dataclass(frozen=True)
class RunProgress:
    """A progress update of one size's run (what the long-work lane shows): the latest point so far."""

    size: Size
    step: int
    total: int
    point: dict[str, float]

    @property
    def fraction(self) -> float:
        return self.step / self.total if self.total else 0.0

    @property
    def text(self) -> str:
        return f"{self.size.name}: step {self.step} of {self.total}, held-out loss {self.point['held_out_loss']:.3f}"


def non_embedding_params(model) -> int:
    """Kaplan et al.'s N: every parameter except the token and position embeddings and the unembedding.

    Tied weights count once; LayerNorm gains and biases count (they are part of the blocks).
    """
    skip = {
        id(p)
        for name in ("embed", "pos_embed", "unembed")
        if hasattr(model, name)
        for p in getattr(model, name).parameters()
    }
    return sum(p.numel() for p in model.parameters() if id(p) not in skip)


@functools.lru_cache(maxsize=2)
def stories_task(seq_len: int, n_stories: int, seed: int):
    """The stories task (built once per process: generating 20,000 stories takes a few seconds)."""
    from engine.training.corpus_tasks import StoriesTask

    return StoriesTask(seq_len_=seq_len, n_stories=n_stories, seed=seed)


def make_size(size: Size, settings: Settings):
    """A fresh stories decoder of ``size`` (initial weights from ``settings.seed``)."""
    from engine.training.loop import model_for

    task = stories_task(settings.seq_len, settings.n_stories, settings.seed)
    return model_for(task, size, seed=settings.seed, pos_encoding="learned", causal=True)


def run_size(size: Size, settings: Settings = Settings()) -> Iterator[RunProgress]:
    """Train one size; yields a :class:`RunProgress` per snapshot and returns the run as a plain dict.

    The training loop (:func:`engine.training.loop.train`) draws its batches from a generator seeded with
    ``settings.seed``, so every size sees the same windows in the same order. At each snapshot the model
    is put in eval mode for the held-out batch and back in train mode before the loop goes on.
    """
    import torch
    import torch.nn.functional as F

    from engine.training.loop import TrainConfig, train

    task = stories_task(settings.seq_len, settings.n_stories, settings.seed)
    started = time.perf_counter()  # the run's own time: the corpus is built once per process, before it
    model = make_size(size, settings)
    n = non_embedding_params(model)
    held_out = task.held_out(settings.held_out_windows, torch.Generator().manual_seed(settings.seed + 2))
    config = TrainConfig(
        steps=settings.steps,
        batch_size=settings.batch_size,
        lr=settings.lr,
        warmup=settings.warmup,
        snapshot_every=settings.every,
        seed=settings.seed,
        device="cpu",
        eval_batch_size=8,
    )
    points: list[dict[str, float]] = []
    for snap in train(model, task, config, model_id=f"scaling:{size.name}"):
        was_training = model.training
        model.eval()
        with torch.no_grad():
            logits = model(held_out.inputs, causal=True, attn_impl="sdpa")  # (B, T, V)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), held_out.targets.reshape(-1))
        model.train(was_training)
        tokens = snap.step * settings.tokens_per_step
        point = {
            "step": snap.step,
            "tokens": tokens,
            "compute": float(FLOPS_PER_TOKEN_PER_PARAM * n * tokens),
            "train_loss": round(float(snap.loss), 5),
            "held_out_loss": round(float(loss), 5),
        }
        points.append(point)
        yield RunProgress(size=size, step=snap.step, total=settings.steps, point=point)
    return {
        "name": size.name,
        **asdict(size),
        "d_mlp": size.d_mlp,
        "n_params": n,
        "n_params_total": sum(p.numel() for p in model.parameters()),
        "points": points,
        "wall_s": round(time.perf_counter() - started, 2),
    }


def train_run(size: Size, settings: Settings = Settings()) -> dict[str, Any]:
    """:func:`run_size` to its end (no progress): the run as a plain dict."""
    gen = run_size(size, settings)
    while True:
        try:
            next(gen)
        except StopIteration as end:
            return end.value


def machine() -> dict[str, Any]:
    """Where the curves were made: CPU model, cores, torch and its threads."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }


def curves_record(runs: list[dict[str, Any]], settings: Settings, wall_s: float) -> dict[str, Any]:
    """The JSON record: the runs, the settings, the machine, the fits and the frontier."""
    fit, compute_fit, on = analyse([Run.from_dict(r) for r in runs])
    return {
        "format": FORMAT,
        "command": COMMAND,
        "settings": asdict(settings),
        "machine": machine(),
        "wall_s": round(wall_s, 1),
        "runs": runs,
        "fit": fit.to_dict(),
        "compute_fit": compute_fit.to_dict(),
        "frontier": [list(p) for p in on],
    }


def build(
    out: Path = CURVES, settings: Settings = Settings(), sizes: tuple[Size, ...] = SIZES, threads: int = 1, log=print
) -> dict[str, Any]:
    """Train every size, fit, and write the curves to ``out``; returns the record."""
    import torch

    torch.set_num_threads(threads)
    started = time.perf_counter()
    runs = []
    for size in sizes:
        run = train_run(size, settings)
        log(
            f"{size.name}: N = {run['n_params']:,}  held-out loss {run['points'][-1]['held_out_loss']:.3f}  "
            f"{run['wall_s']:.0f} s"
        )
        runs.append(run)
    record = curves_record(runs, settings, time.perf_counter() - started)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=CURVES, help="where to write (default assets/scaling/...)")
    parser.add_argument("--steps", type=int, default=Settings.steps, help="optimizer updates per size")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the shipped file used 1)")
    args = parser.parse_args(argv)
    record = build(args.out, Settings(steps=args.steps), threads=args.threads)
    fit = record["fit"]
    print(
        f"L(N) = ({fit['scale']:.3g} / N)^{fit['alpha']:.3f}  (r² {fit['r2']:.3f}); "
        f"frontier L(C) exponent {record['compute_fit']['alpha']:.3f}; wrote {args.out} in {record['wall_s']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
