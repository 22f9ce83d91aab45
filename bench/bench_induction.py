"""Benchmark: how soon the induction heads' phase change shows on Train live's "Induction heads" tab.

Run from the repository root::

    OMP_WAIT_POLICY=PASSIVE python -m bench.bench_induction              # seeds 0–3, prints a table
    python -m bench.bench_induction --seeds 0 --steps 600

Each run is what the tab's "Train it here" runs (``engine.training.induction.train_induction`` with the
page's defaults: 2 attention-only layers × 4 heads, d_model 64, RoPE, batch 32 × 64 tokens, lr 1e-2
constant after 40 warm-up steps, a point every 20 steps with the ICL score and every head's scores), on one
torch thread as the long-work lane's workers. Reported per seed: the phase-change step (the first point
halfway from the first ICL score to the last), the wall seconds from the start until that point reached
the caller (measuring included), the whole run's wall seconds, the final ICL score and the best
prefix-matching score in layer 1. The CPU model and the load average are printed: timings are only
comparable within one run.
"""

from __future__ import annotations

import argparse
import os
import platform
import time


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def run(seed: int, steps: int) -> dict:
    import numpy as np

    from engine.analysis.induction import phase_change_step
    from engine.training.induction import DEFAULT_LR, train_induction

    started = time.perf_counter()
    arrived: dict[int, float] = {}
    last = None
    for progress in train_induction(steps, DEFAULT_LR, seed):
        arrived[progress.points[-1].step] = time.perf_counter() - started
        last = progress
    assert last is not None
    points = last.points
    phase = phase_change_step(np.array([p.step for p in points]), np.array([p.icl for p in points]))
    return {
        "seed": seed,
        "phase": phase,
        "phase_s": arrived[phase],
        "total_s": time.perf_counter() - started,
        "icl": points[-1].icl,
        "prefix": float(points[-1].scores.prefix_matching[1].max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--steps", type=int, default=None, help="default: the page's")
    args = parser.parse_args()
    import torch

    from engine.training.induction import DEFAULT_STEPS

    torch.set_num_threads(1)
    print(
        f"{cpu_model()}, {os.cpu_count()} CPUs, torch {torch.__version__} 1 thread; load before "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(
        "| seed | phase change step | phase change reached (s) | whole run (s) | ICL score at end | best prefix matching |"
    )
    print("|---|---|---|---|---|---|")
    for seed in args.seeds:
        r = run(seed, args.steps or DEFAULT_STEPS)
        print(
            f"| {r['seed']} | {r['phase']} | {r['phase_s']:.1f} | {r['total_s']:.1f} | {r['icl']:+.2f} | "
            f"{r['prefix']:.2f} |",
            flush=True,
        )
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
