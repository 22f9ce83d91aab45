"""Benchmark: ``engine.trace`` + one head's ``overview`` on long inputs (2,048–16,384 tokens) vs a plain forward.

Run from the repository root::

    OMP_WAIT_POLICY=PASSIVE python -m bench.bench_long      # full run, writes docs/BENCHMARKS.md
    python -m bench.bench_long --quick --out /tmp/B.md     # smoke run: 1,024 and 2,048 tokens

Model: GPT-2 code with seeded random weights, 4 layers × 8 heads, d_model 512, 16,384 positions and
the project's byte-level BPE tokenizer (``tiny_gpt2.build_tokenizer``), saved to a temporary folder
with ``save_pretrained`` and loaded by ``engine.load(folder)`` (engine) and ``AutoModel`` (HF side).

Cases, per token count ``n``:

- ``engine``: ``tr = engine.trace(model, text, max_tokens=n); tr.overview(last_layer, 0, size=1024)``
  (tokenization included; the trace keeps every layer's Q/K/V, the overview never builds n×n);
- ``hf_plain``: the same weights, SDPA, no capture: the price of a forward pass;
- ``hf_eager_attn``: eager attention with ``output_attentions=True``, run only up to
  :data:`EAGER_MAX_TOKENS`; above it, the L·H·n²·4 bytes its attention tensors would keep are
  computed instead (34 GB at 16,384 tokens for this small model).

The check, per size: engine peak ≤ plain peak + 2 × Q/K/V bytes + 64 MB (the captured Q/K/V, one
transient copy while they are split into heads, and the overview's chunks).

Memory and time are measured as in :mod:`bench.bench_trace` (its subprocess runner and
:func:`bench.trace_worker._memory_worker`: a fresh process per case and size, ``VmHWM`` reset
through ``/proc/self/clear_refs``, a fixed ``MALLOC_MMAP_THRESHOLD_``); times are medians of
``--repeats`` calls made round-robin in one process.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_trace import MMAP_THRESHOLD, _inputs, _load, _machine, _run_worker, build_folder, command_line
from bench.trace_report import write_section
from bench.trace_worker import RESULT_MARK, _memory_worker, engine_kept
from bench.trace_worker import _make_case as _hf_case

SECTION = "## Long inputs: overview at 16,384 tokens"
FULL_TOKENS = (2048, 4096, 8192, 16384)
QUICK_TOKENS = (1024, 2048)
EAGER_MAX_TOKENS = 2048  # HF eager + output_attentions is run up to here (537 MB of attentions at 2048)
OVERVIEW_SIZE = 1024
SLACK_MB = 64
MB = 1e6
LONG_SHAPE = dict(n_layer=4, n_head=8, n_embd=512, n_positions=16384)
CASES = ("engine", "hf_plain", "hf_eager_attn")


def _cases(n: int) -> tuple[str, ...]:
    return CASES if n <= EAGER_MAX_TOKENS else CASES[:2]


def _attentions_bytes(n: int) -> int:
    """What ``output_attentions=True`` keeps: L · H · n² float32."""
    return LONG_SHAPE["n_layer"] * LONG_SHAPE["n_head"] * n * n * 4


# ---- worker side ------------------------------------------------------------------------------


def _make_case(case: str, model_name: str, path: str, text: str):
    """``(call, kept, check)`` as in :func:`bench.trace_worker._make_case`; ``engine`` ends in an overview."""
    if case != "engine":
        return _hf_case(case, model_name, path, text)
    import engine

    model = engine.load(path)
    last = len(model.adapter.layers(model.module)) - 1

    def call(ids: list[int]):
        tr = engine.trace(model, text, max_tokens=len(ids))
        t_mid = time.perf_counter()
        grid = tr.overview(last, 0, size=OVERVIEW_SIZE)
        return (tr, grid), t_mid

    def check(result, ids: list[int]) -> None:
        tr, grid = result
        assert list(tr.tokens.ids) == ids, "engine tokenized differently from the ids given to HF"
        side = min(len(ids), OVERVIEW_SIZE)
        assert grid.shape == (side, side), grid.shape

    return call, engine_kept, check


def _time_worker(spec: dict) -> dict:
    """The cases side by side in one process; per size one warm-up call each, then round-robin calls."""
    import torch

    torch.set_num_threads(spec["threads"])
    sizes = {n_str: ids for n_str, ids in spec["ids"].items()}
    needed = {c for ids in sizes.values() for c in _cases(len(ids))}
    cases = {c: _make_case(c, spec["model"], spec["path"], spec["text"]) for c in CASES if c in needed}
    out: dict[str, dict] = {}
    for n_str, ids in sizes.items():
        names = _cases(len(ids))
        for case in names:
            result, _ = cases[case][0](ids)
            cases[case][2](result, ids)
            del result
        times: dict[str, list[float]] = {c: [] for c in names}
        trace_s, overview_s = [], []
        for r in range(spec["repeats"]):
            for case in names[r % len(names) :] + names[: r % len(names)]:  # rotate who goes first
                gc.collect()
                t0 = time.perf_counter()
                result, t_mid = cases[case][0](ids)
                t1 = time.perf_counter()
                times[case].append(t1 - t0)
                if t_mid is not None:
                    trace_s.append(t_mid - t0)
                    overview_s.append(t1 - t_mid)
                del result
        out[n_str] = {c: {"median_s": statistics.median(t), "times_s": t} for c, t in times.items()}
        out[n_str]["engine"].update(trace_s=statistics.median(trace_s), overview_s=statistics.median(overview_s))
        print(f"timed n={n_str}", file=sys.stderr, flush=True)
    return {"by_n": out}


# ---- report -------------------------------------------------------------------------------------


def _passes(rows: dict, n: int) -> tuple[bool, float]:
    e, p = rows[(n, "engine")], rows[(n, "hf_plain")]
    limit = p["peak_mb"] + 2 * e["kept_mb"] + SLACK_MB
    return e["peak_mb"] <= limit, limit


def _report(rows: dict, sizes: tuple[int, ...], repeats: int) -> list[str]:
    out = [
        "| tokens | HF plain forward (s) | engine trace (s) | overview, 1 head (s) | (trace + overview) / plain "
        "| plain peak (MB) | engine peak, trace + overview (MB) | kept Q/K/V (MB) "
        f"| check: ≤ plain + 2·Q/K/V + {SLACK_MB} MB | `output_attentions` would keep (MB) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for n in sizes:
        e, p = rows[(n, "engine")], rows[(n, "hf_plain")]
        ok, limit = _passes(rows, n)
        out.append(
            f"| {n} | {p['median_s']:.2f} | {e['trace_s']:.2f} | {e['overview_s']:.2f} "
            f"| {(e['trace_s'] + e['overview_s']) / p['median_s']:.2f} | {p['peak_mb']:.0f} | {e['peak_mb']:.0f} "
            f"| {e['kept_mb']:.0f} | {'pass' if ok else 'FAIL'} (≤ {limit:.0f}) | {_attentions_bytes(n) / MB:.0f} |"
        )
    out.append("")
    eager = [n for n in sizes if (n, "hf_eager_attn") in rows]
    if eager:
        out += [
            "HF eager attention with `output_attentions=True`, measured where it is run "
            f"(up to {EAGER_MAX_TOKENS} tokens; above, the last column of the table is computed, not run):",
            "",
            "| tokens | time (s) | peak (MB) | attentions kept (MB) | computed L·H·n²·4 (MB) |",
            "|---:|---:|---:|---:|---:|",
        ]
        for n in eager:
            h = rows[(n, "hf_eager_attn")]
            out.append(
                f"| {n} | {h['median_s']:.2f} | {h['peak_mb']:.0f} | {h['kept_mb']:.0f} | {_attentions_bytes(n) / MB:.0f} |"
            )
        out.append("")
    n = max(sizes)
    e, p = rows[(n, "engine")], rows[(n, "hf_plain")]
    ok, limit = _passes(rows, n)
    out += [
        "Reading:",
        "",
        f"- At {n} tokens the trace took {e['trace_s']:.2f} s against {p['median_s']:.2f} s for a plain forward, and "
        f"one head's {min(n, OVERVIEW_SIZE)}×{min(n, OVERVIEW_SIZE)} overview {e['overview_s']:.2f} s more (median of "
        f"{repeats}). Peak {e['peak_mb']:.0f} MB vs {p['peak_mb']:.0f} MB: {e['peak_mb'] - p['peak_mb']:.0f} MB over the "
        f"forward for {e['kept_mb']:.0f} MB of kept Q/K/V ({'within' if ok else 'OVER'} the {limit:.0f} MB bound). "
        f"`output_attentions=True` would keep {_attentions_bytes(n) / 1e9:.1f} GB.",
        "",
    ]
    return out


# ---- parent -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_long", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 1,024 and 2,048 tokens, 2 repeats")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per case (default 3; 2 with --quick)")
    parser.add_argument("--out", default="docs/BENCHMARKS.md", help="markdown file whose section is (re)written")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads in every case (default 2)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        spec = json.loads(Path(args.worker).read_text())
        result = _memory_worker(spec, _make_case) if spec["kind"] == "memory" else _time_worker(spec)
        print(RESULT_MARK + json.dumps(result), flush=True)
        return 0

    command = command_line("bench.bench_long", argv)
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 3)
    if repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be at least 1")
    sizes = QUICK_TOKENS if args.quick else FULL_TOKENS

    load_before = _load()
    started = time.perf_counter()
    machine = _machine(args.threads)
    print(f"load average before: {load_before}; {machine}", file=sys.stderr)
    rows: dict[tuple[int, str], dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench_long_") as tmp:
        tmp_path = Path(tmp)
        folder = tmp_path / "gpt2-long-random"
        from engine.families.hf_text.tiny_gpt2 import build_tokenizer

        build_folder(folder, shape=dict(LONG_SHAPE, vocab_size=len(build_tokenizer())))
        text, ids = _inputs("gpt2", str(folder), sizes)
        base = dict(model="gpt2", path=str(folder), text=text, threads=args.threads, fixed_mmap_threshold=True)
        for n in sizes:  # memory: a fresh process per case and size
            for case in _cases(n):
                t0 = time.perf_counter()
                r = _run_worker("memory", dict(base, case=case, ids=ids[n]), tmp_path, module="bench.bench_long")
                rows[(n, case)] = r
                print(
                    f"n={n:5d} {case:14s} peak {r['peak_mb']:7.1f} MB  kept {r['kept_mb']:7.1f} MB  "
                    f"[{time.perf_counter() - t0:.0f} s]",
                    file=sys.stderr,
                )
        spec = dict(base, ids={str(n): ids[n] for n in sizes}, repeats=repeats)
        timed = _run_worker("time", spec, tmp_path, module="bench.bench_long")
        for n in sizes:
            for case in _cases(n):
                rows[(n, case)].update(timed["by_n"][str(n)][case])
            ok, limit = _passes(rows, n)
            e, p = rows[(n, "engine")], rows[(n, "hf_plain")]
            print(
                f"n={n:5d} plain {p['median_s']:.2f} s, trace {e['trace_s']:.2f} s, overview {e['overview_s']:.2f} s; "
                f"peak {e['peak_mb']:.0f} MB vs bound {limit:.0f} MB: {'pass' if ok else 'FAIL'}",
                file=sys.stderr,
            )

    elapsed = time.perf_counter() - started
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    methods = sorted({r["peak_method"] for r in rows.values()})
    malloc = os.environ.get("MALLOC_MMAP_THRESHOLD_", str(MMAP_THRESHOLD))
    section = [
        SECTION,
        "",
        "What is measured: whether a long input can be looked at for about the price of running it. "
        "**engine** = `tr = engine.trace(model, text, max_tokens=n); tr.overview(last_layer, 0, size=1024)` "
        "(the trace keeps every layer's Q/K/V; the overview computes one head's exact pattern a chunk of query "
        "rows at a time and keeps its 1024×1024 block maxima, never the n×n matrix). **HF plain** = the same "
        "weights, SDPA, no capture. Model: GPT-2 code with seeded random weights, 4 layers × 8 heads, d_model "
        "512, 16,384 positions, the project's byte-level BPE tokenizer, saved with `save_pretrained` and loaded "
        f"by `engine.load(folder)`. **Time**: median of {repeats} calls per case after a warm-up call, the cases "
        "called in turn in one process. **Memory**: each case and size in a fresh subprocess; peak = "
        f"resident-set high-water mark during the call minus the RSS before it ({', '.join(methods)}, reset "
        f"through `/proc/self/clear_refs`; `MALLOC_MMAP_THRESHOLD_={malloc}`). All on the CPU.",
        "",
        f"- Command: `{command}` (from the repository root)",
        f"- Date: {date}; total run time {elapsed / 60:.1f} min",
        f"- Machine: {machine['cpu_model']}, {machine['cpus']} CPUs ({machine['usable_cpus']} usable), "
        f"torch {machine['torch']}, transformers {machine['transformers']}, Python {machine['python']}, "
        f"`torch.set_num_threads({machine['threads']})`",
        f"- Load average (1/5/15 min) before the run: {load_before}; after: {_load()}.",
        "",
        *_report(rows, sizes, repeats),
    ]
    write_section(Path(args.out), "\n".join(section), header=SECTION)
    print(f"wrote {args.out} in {elapsed / 60:.1f} min", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
