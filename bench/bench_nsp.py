"""Benchmark: what the Pretraining page's "Next sentence and [CLS]" fine-tuning costs and reaches.

Run from the repository root::

    OMP_WAIT_POLICY=PASSIVE python -m bench.bench_nsp                 # 300 steps (the tab's default), seed 0
    python -m bench.bench_nsp --steps 500 --seeds 0 1 2

Each run is what the tab's job runs (``engine.training.nsp.finetune_nsp`` on ``tiny-bert-stories``, the
page's learning rate 1e-3, batch 32), on one torch thread as the long-work lane's workers. Reported per
seed: building the pairs, the whole run's wall seconds (the 128 held-out pairs' patterns before and after
included), the held-out accuracy before and after. The colour task (``engine.training.finetune.finetune``, same steps) is timed in the same run for the ratio. The
page's estimate is ``SECONDS[NSP]``: setup + per step × steps (``app/views/pretraining/data.py``). The CPU model and
the load average are printed: timings are only comparable within one run.
"""

from __future__ import annotations

import argparse
import os
import time

from bench.bench_induction import cpu_model


def run(steps: int, seed: int) -> dict:
    import engine
    from engine.training.finetune import finetune
    from engine.training.nsp import NspTask, finetune_nsp

    model = engine.load("tiny-bert-stories")
    started = time.perf_counter()
    task = NspTask.build(model.tokenizer, model.max_positions)
    built = time.perf_counter() - started
    started = time.perf_counter()
    *_, result = finetune_nsp(model.module, model.tokenizer, steps=steps, seed=seed, task=task)
    nsp_s = time.perf_counter() - started
    started = time.perf_counter()
    for _ in finetune(model.module, model.tokenizer, steps=steps, seed=seed):
        pass
    colour_s = time.perf_counter() - started
    return {
        "seed": seed,
        "build_s": built,
        "nsp_s": nsp_s,
        "colour_s": colour_s,
        "before": result.accuracy_before,
        "after": result.accuracy_after,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=300, help="default: the tab's")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    print(f"CPU: {cpu_model()}; load average {os.getloadavg()[0]:.2f}; {args.steps} steps, one torch thread")
    print("| seed | pairs built (s) | NSP run (s) | colour run (s) | NSP ÷ colour | held-out before | after |")
    print("|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        r = run(args.steps, seed)
        print(
            f"| {r['seed']} | {r['build_s']:.2f} | {r['nsp_s']:.1f} | {r['colour_s']:.1f} | "
            f"{r['nsp_s'] / r['colour_s']:.2f} | {r['before']:.0%} | {r['after']:.0%} |"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
