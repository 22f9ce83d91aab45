"""Benchmark: live training through the job manager (what the Train page does) vs a plain PyTorch loop.

Run from the repository root::

    OMP_WAIT_POLICY=PASSIVE python -m bench.bench_train            # writes its section of docs/BENCHMARKS.md
    python -m bench.bench_train --repeats 1 --out /tmp/B.md        # quicker, elsewhere

Both sides train the Train page's default model (reverse task, 2 layers × 4 heads, d_model 64, learned
positions, causal, batch 64, lr 3e-3, 500 steps, seed 0) from the same initial weights on the same
batches, on the CPU with one torch thread:

- ``ui``: ``JobManager.submit`` with the page's settings: the training thread takes a snapshot every
  10 steps (evaluation batch of 64 + the probe's attention trace + head scores) while this thread
  polls ``progress()`` every 0.75 s and stacks the patterns of the newest snapshot, as the page does.
  Time runs from submit to the job's end (model build and thread start included).
- ``plain``: the same step in a bare loop (no snapshots, no probe, no thread). To find when it reaches
  99% exact match it evaluates the same 64 held-out examples as often as the UI snapshots, with its clock paused.

Reported: steps/s over the 500 steps, and the wall time until the first evaluation at ≥ 99% exact
match (``ui``: when that snapshot reached the page); the same two as process CPU time, which is far
less disturbed by other load on a shared machine. Runs alternate (plain, ui, plain, ui, …);
medians of ``--repeats`` runs (default 5). Overhead = ui time / plain time − 1.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import statistics
import sys
import time

from bench.trace_report import publish  # this section only; hand notes under its mark stay

SECTION = "## Live training: job manager with snapshots vs a plain loop"
TARGET = 0.99
POLL_S = 0.75


def plain_run(settings) -> dict:
    """The same training with nothing around it; evaluation time is excluded from the clock."""
    import torch

    from engine.training.job_settings import EVAL_BATCH, build_model, build_task
    from engine.training.loop import TrainConfig, batch_loss, make_optimizer
    from engine.training.tasks import exact_match

    t0, c0 = time.perf_counter(), time.process_time()
    paused = cpu_paused = 0.0
    task = build_task(settings.task)
    model = build_model(settings, task)
    config = TrainConfig(
        steps=settings.steps,
        batch_size=settings.batch_size,
        lr=settings.lr,
        seed=settings.seed,
        device="cpu",
        warmup=min(100, max(1, settings.steps // 10)),
        eval_batch_size=EVAL_BATCH,
    )
    gen = torch.Generator().manual_seed(config.seed)
    eval_batch = task.sample(config.eval_batch_size, torch.Generator().manual_seed(config.seed + 1))
    optimizer = make_optimizer(model, config, torch.device("cpu"))
    reached = cpu_reached = None
    model.train()
    for step in range(config.steps):
        batch = task.sample(config.batch_size, gen)
        for group in optimizer.param_groups:
            group["lr"] = config.lr_at(step)
        loss = batch_loss(model(batch.inputs, causal=settings.causal, attn_impl="sdpa"), batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        if reached is None and (step + 1) % settings.every == 0:
            e0, ec0 = time.perf_counter(), time.process_time()
            model.eval()
            with torch.no_grad():
                metric = exact_match(model(eval_batch.inputs, causal=settings.causal, attn_impl="sdpa"), eval_batch)
            model.train()
            paused += time.perf_counter() - e0
            cpu_paused += time.process_time() - ec0
            if metric >= TARGET:
                reached = time.perf_counter() - t0 - paused
                cpu_reached = time.process_time() - c0 - cpu_paused
    total = time.perf_counter() - t0 - paused
    return {
        "total_s": total,
        "steps_per_s": config.steps / total,
        "to_target_s": reached,
        "cpu_s": time.process_time() - c0 - cpu_paused,
        "cpu_to_target_s": cpu_reached,
    }


def ui_run(settings) -> dict:
    """Through the job manager, polled like the page; wall time from submit to the end."""
    import numpy as np

    from engine.training.jobs import JobManager

    manager = JobManager(max_running=1, heartbeat_timeout=600)
    manager.estimate(settings)  # submit's time check measures a few steps: done here, outside the timed part
    t0, c0 = time.perf_counter(), time.process_time()
    job = manager.submit("bench", settings)
    while not job.wait(POLL_S):
        manager.heartbeat("bench")
        p = job.progress()
        if p.snapshots and p.snapshots[-1].probe_trace is not None:
            tr = p.snapshots[-1].probe_trace
            np.stack([tr.pattern(layer) for layer in range(tr.n_layers)])
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    p = job.progress()
    times = job.snapshot_times()
    manager.shutdown()
    if p.status != "done":
        raise RuntimeError(f"the job ended as {p.status}: {p.error}")
    hit = next(((t, c) for s, (t, c) in zip(p.snapshots, times) if s.metric >= TARGET), None)
    return {
        "total_s": total,
        "steps_per_s": settings.steps / total,
        "to_target_s": hit and hit[0] - t0,
        "cpu_s": cpu,
        "cpu_to_target_s": hit and hit[1] - c0,
        "snapshots": len(p.snapshots),
        "steps_only_s": p.snapshots[-1].elapsed_s,
    }


def _median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else None


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _busy(load: str) -> bool:
    try:
        return float(load.split(",")[0]) > 0.5 * (os.cpu_count() or 1)
    except ValueError:
        return False


def section(plain: list[dict], ui: list[dict], settings, load_before: str, load_after: str, command: str) -> str:
    from engine.training.job_settings import EVAL_BATCH

    p_sps, u_sps = _median(plain, "steps_per_s"), _median(ui, "steps_per_s")
    p_t, u_t = _median(plain, "to_target_s"), _median(ui, "to_target_s")
    fmt = lambda v, f="{:.2f}": "not reached" if v is None else f.format(v)  # noqa: E731
    ratio = lambda u, p: None if u is None or not p else u / p - 1  # noqa: E731
    share = statistics.median(1 - r["steps_only_s"] / r["total_s"] for r in ui)
    p_c, u_c = _median(plain, "cpu_s"), _median(ui, "cpu_s")
    p_ct, u_ct = _median(plain, "cpu_to_target_s"), _median(ui, "cpu_to_target_s")
    pct = lambda v: fmt(v, "{:+.1%}")  # noqa: E731
    p_w, u_w = _median(plain, "total_s"), _median(ui, "total_s")
    lines = [
        SECTION,
        "",
        f"`{command}` — {_dt.date.today().isoformat()}, {platform.machine()}, {os.cpu_count()} CPUs, torch 1 thread, "
        f"CPU; load average before / after: {load_before} / {load_after}; {len(plain)} runs each, medians.",
        "",
        f"The Train page's default: reverse task, {settings.n_layers} layers × {settings.n_heads} heads, d_model "
        f"{settings.d_model}, {settings.pos_encoding} positions, batch {settings.batch_size}, lr {settings.lr:g}, "
        f"{settings.steps} steps; `ui` = through `JobManager` with a snapshot every {settings.every} steps "
        f"(evaluation batch {EVAL_BATCH} + probe trace + head scores) and a poller every {POLL_S} s; `plain` = the same steps "
        f"in a bare loop (its 99% check every {settings.every} steps is not timed).",
        "",
        "| path | steps/s (wall) | wall time, all steps (s) | wall time to 99% exact match (s) "
        "| CPU time, all steps (s) | CPU time to 99% (s) |",
        "|---|---:|---:|---:|---:|---:|",
        f"| plain loop | {p_sps:.1f} | {p_w:.2f} | {fmt(p_t)} | {p_c:.2f} | {fmt(p_ct)} |",
        f"| job manager + snapshots (UI) | {u_sps:.1f} | {u_w:.2f} | {fmt(u_t)} | {u_c:.2f} | {fmt(u_ct)} |",
        f"| UI vs plain (UI / plain − 1) | {pct(ratio(u_sps, p_sps))} | {pct(ratio(u_w, p_w))} "
        f"| {pct(ratio(u_t, p_t))} | {pct(ratio(u_c, p_c))} | {pct(ratio(u_ct, p_ct))} |",
        "",
        f"Within the UI runs themselves (so both sides of the ratio saw the same load): the training steps took "
        f"{1 - share:.1%} of the job's wall time and everything else — model build, thread start, "
        f"{ui[0]['snapshots']} snapshots, waiting for the poller — {share:.1%} (median).",
        "",
        *(
            [
                f"The machine was busy (load average {load_before.split(',')[0]} on {os.cpu_count()} CPUs at the start: "
                "other jobs shared the cores), so absolute times are inflated; re-run on a quiet machine for them.",
                "",
            ]
            if _busy(load_before)
            else []
        ),
        "CPU time is the process's CPU seconds (all threads: trainer, poller, any OpenMP workers); on a busy "
        "machine it is the steadier measure of the work the UI adds, while wall time also counts waiting for a "
        "core.",
        "",
        "Per run (s, all steps / to 99%): plain "
        + "; ".join(f"{r['total_s']:.2f}/{fmt(r['to_target_s'])}" for r in plain)
        + " · ui "
        + "; ".join(f"{r['total_s']:.2f}/{fmt(r['to_target_s'])}" for r in ui)
        + ".",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_train", description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each path (alternating)")
    parser.add_argument("--out", default="docs/BENCHMARKS.md", help="markdown file whose section is (re)written")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import torch

    from engine.training.job_settings import validate_settings

    torch.set_num_threads(1)
    settings = validate_settings({"device": "cpu"})
    load_before = _load()
    plain, ui = [], []
    plain_run(settings)  # warm-up: imports, allocator, the task's first batches
    for i in range(args.repeats):
        for name, fn, runs in (("plain", plain_run, plain), ("ui", ui_run, ui))[:: 1 if i % 2 == 0 else -1]:
            runs.append(fn(settings))
            print(name, runs[-1], flush=True)
    command = "OMP_WAIT_POLICY=PASSIVE python -m bench.bench_train" + (
        f" --repeats {args.repeats}" if args.repeats != 5 else ""
    )
    publish(args.out, section(plain, ui, settings, load_before, _load(), command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
