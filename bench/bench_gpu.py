"""Benchmark: the engine on a CUDA GPU against the same engine on that machine's CPU and against Hugging Face.

Run from the repository root on a machine with a CUDA GPU (the lent H100/H200 of ``docs/BENCHMARKS.md``)::

    python -m bench.bench_gpu --out /tmp/gpu.md     # ~3 min on an H100
    python -m bench.bench_gpu --quick               # one size per model

Three parts, all in one process (the GPU is one device: there is nothing to interleave with):

1. **Same results.** Every text model of the catalog that can be loaded here (all-MiniLM-L6-v2, the own
   stories GPT and BERT, the translators, the ViT) and two randomly initialised Hugging Face shapes (GPT-2-small
   and a Llama with grouped-query attention and RoPE) are traced on the CPU and on CUDA from the same files on
   the same input; the table gives the largest difference of any attention weight and of any Q/K/V entry over
   every layer and head.
2. **Time.** For each model and token count, four cases, each called once to warm up and then ``--repeats``
   times (median reported): ``engine cuda`` (``engine.trace`` + one head's pattern, tokenization and the one copy
   of every layer's Q/K/V and output norms to the host included, as a page gets them; the table counts the copies
   one trace makes), ``HF plain cuda`` (the base model,
   SDPA, no attentions: the reference cost of a forward on the GPU), ``HF eager cuda`` (``output_attentions=True``,
   what bertviz-style tools run), and ``engine cpu`` (the same trace on this machine's CPU, all its cores).
   Every GPU call ends in ``torch.cuda.synchronize()`` (the engine's trace returns host arrays, which
   synchronizes by itself).
   The target of issue 43 is checked on GPT-2-small's shape at 1,024 tokens (in ``--quick`` too): engine cuda
   ≤ 10 ms and ≤ 1.5× HF plain cuda.
3. **Training.** The Train live page's default-sized model (``engine.training``) trained for a fixed number of
   steps on CUDA and on the CPU: steps per second.

The figures go to ``--out`` as a markdown section (``## GPU``) with the machine's GPU and CPU named.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_trace import _inputs, _machine, build_folder, command_line
from engine.registry import minilm_path

SIZES = {"minilm": (16, 128, 512), "gpt2": (128, 512, 1024), "llama": (1024, 4096, 8192)}
QUICK_SIZES = {"minilm": (128,), "gpt2": (1024,), "llama": (1024,)}
TARGET = ("gpt2", 1024, 0.010, 1.5)  # model, tokens, engine cuda at most (s), engine cuda ÷ HF plain cuda at most
CPU_MAX_TOKENS = {"llama": 4096}  # the CPU side stops here (an 8,192-token Llama trace on the CPU takes minutes)
PARITY_TEXT = "Lily found a red ball . She gave it to Tom because she was kind ."
TRAIN_STEPS = 300
PROFILE_DIR: Path | None = None  # --profile DIR: one torch.profiler table per model (its largest size)
GPU = "cuda"  # --dry-run-on-cpu sets "cpu": the whole script checked end to end on a machine without a GPU


def _sync():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _median_time(call, repeats: int) -> float:
    call()  # warm-up (kernels chosen, allocator grown)
    _sync()
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        call()
        _sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _max_diff(a, b) -> tuple[float, float]:
    """Largest |Δ| of any attention weight and of any Q/K/V entry between two traces of one input."""
    import numpy as np

    att = qkv = 0.0
    for layer in range(a.n_layers):
        for name in ("queries", "keys", "values"):
            qkv = max(qkv, float(np.max(np.abs(np.asarray(getattr(a, name)[layer]) - getattr(b, name)[layer]))))
        for head in range(a.n_heads):
            att = max(att, float(np.max(np.abs(a.pattern(layer, head) - b.pattern(layer, head)))))
    return att, qkv


def host_copies(call) -> int:
    """How many device-to-host copies ``call()`` makes (calls of ``engine.capture.transfer.copy_to_host``)."""
    from engine.capture import transfer

    original, calls = transfer.copy_to_host, []

    def counted(tensors):
        calls.append(len(tensors))
        return original(tensors)

    transfer.copy_to_host = counted
    try:
        call()
    finally:
        transfer.copy_to_host = original
    return len(calls)


def parity(folders: dict[str, str]) -> list[tuple[str, str, float, float, str]]:
    """(model, what, max |Δ| weights, max |Δ| Q/K/V, note) for every model traced on CPU and CUDA."""
    import numpy as np

    import engine
    from engine.samples import digit

    rows = []
    text_models = [
        ("minilm", "minilm"),
        ("tiny-gpt-stories", "tiny-gpt-stories"),
        ("tiny-bert-stories", "tiny-bert-stories"),
    ]
    text_models += [(name, path) for name, path in folders.items()]
    for name, ident in text_models:
        try:
            cpu, gpu = engine.load(ident, device="cpu"), engine.load(ident, device=GPU)
        except engine.EngineError as err:
            rows.append((name, "self-attention", float("nan"), float("nan"), f"not loaded: {err}"))
            continue
        a, b = engine.trace(cpu, PARITY_TEXT), engine.trace(gpu, PARITY_TEXT)
        assert (a.device, b.device) == ("cpu", GPU), (a.device, b.device)
        rows.append(
            (
                name,
                f"self-attention, {a.n_layers}×{a.n_heads} heads, {len(a.tokens.strings)} tokens",
                *_max_diff(a, b),
                "",
            )
        )
        del cpu, gpu
    for ident in ("tiny-translator", "bahdanau-translator"):
        a = engine.trace(engine.load(ident, device="cpu"), "the red car is small")
        b = engine.trace(engine.load(ident, device=GPU), "the red car is small")
        same = (
            "same translation"
            if a.output_text == b.output_text
            else f"DIFFERENT: {a.output_text!r} / {b.output_text!r}"
        )
        if ident == "tiny-translator":
            for block in ("encoder", "decoder", "cross"):
                rows.append((ident, block, *_max_diff(getattr(a, block), getattr(b, block)), same))
        else:
            d = float(np.max(np.abs(np.asarray(a.alignment) - b.alignment)))
            rows.append((ident, "alignment α", d, float("nan"), same))
    image = digit(0)[0]
    a = engine.trace(engine.load("tiny-vit-digits", device="cpu"), image)
    b = engine.trace(engine.load("tiny-vit-digits", device=GPU), image)
    d_probs = float(np.max(np.abs(np.asarray(a.probs) - b.probs)))
    rows.append(
        (
            "tiny-vit-digits",
            "patch attention",
            *_max_diff(a.attention, b.attention),
            f"class probabilities: largest Δ {d_probs:.1e}",
        )
    )
    return rows


def _hf_call(path: str, model_name: str, eager: bool, device: str):
    import torch
    from transformers import AutoModel

    module = AutoModel.from_pretrained(path, attn_implementation="eager" if eager else "sdpa", use_safetensors=True)
    module.to(device).eval()
    extra = {"use_cache": False} if model_name == "llama" else {}

    def call(ids: list[int]):
        x = torch.tensor([ids], device=device)
        with torch.inference_mode():
            out = module(input_ids=x, output_attentions=eager, **extra)
        if eager:
            assert out.attentions is not None and tuple(out.attentions[-1].shape[-2:]) == (len(ids), len(ids))
        return out

    return module, call


def _profile(call, path: Path) -> None:
    """torch.profiler's table of one call (after a warm-up), the ops sorted by their own CPU time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    call()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if GPU == "cuda" else [])
    with profile(activities=activities) as prof:
        call()
        _sync()
    path.write_text(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))
    del torch


def timing(folders: dict[str, str], sizes: dict[str, tuple[int, ...]], repeats: int) -> list[dict]:
    """One row per (model, tokens): median seconds of each case."""
    import torch

    import engine

    rows = []
    for model_name, path in folders.items():
        wanted = sizes[model_name]
        text, ids_by_n = _inputs(model_name, path, wanted)
        ident = "minilm" if model_name == "minilm" else path
        held = {"gpu": engine.load(ident, device=GPU), "cpu": engine.load(ident, device="cpu")}
        on_gpu, on_cpu = held["gpu"], held["cpu"]
        n_layers = len(on_gpu.adapter.layers(on_gpu.module))
        plain, eager = _hf_call(path, model_name, False, GPU)[1], _hf_call(path, model_name, True, GPU)[1]
        for n in wanted:
            ids = ids_by_n[n]

            def engine_call(model=on_gpu, n=n):
                tr = engine.trace(model, text, max_tokens=n)
                assert list(tr.tokens.ids) == ids_by_n[n], "the engine tokenized differently from the HF ids"
                return tr.pattern(n_layers - 1, 0)

            row = {"model": model_name, "n": n}
            row["engine cuda"] = _median_time(engine_call, repeats)
            row["trace only"] = _median_time(lambda: engine.trace(on_gpu, text, max_tokens=n), repeats)
            row["host copies"] = host_copies(engine_call)
            row["HF plain cuda"] = _median_time(lambda: plain(ids), repeats)
            row["HF eager cuda"] = _median_time(lambda: eager(ids), repeats)
            if n <= CPU_MAX_TOKENS.get(model_name, 10**9):
                row["engine cpu"] = _median_time(lambda m=on_cpu, n=n: engine_call(m, n), max(1, repeats // 2))
            else:
                row["engine cpu"] = None
            row["gpu peak MB"] = torch.cuda.max_memory_allocated() / 1e6 if GPU == "cuda" else 0.0
            if GPU == "cuda":
                torch.cuda.reset_peak_memory_stats()
            rows.append(row)
            print(f"timed {model_name} n={n}: {row}", file=sys.stderr, flush=True)
        if PROFILE_DIR is not None:
            _profile(lambda: engine_call(on_gpu, wanted[-1]), PROFILE_DIR / f"profile-{model_name}-{wanted[-1]}.txt")
        held.clear()  # the next model loads with these freed (the closures go when the loop rebinds them)
        gc.collect()
        if GPU == "cuda":
            torch.cuda.empty_cache()
    return rows


def training(steps: int) -> list[tuple[str, float, float]]:
    """(device, steps per second, final loss) for the Train live page's default model and task."""
    from engine.training.loop import TrainConfig, make_model, train
    from engine.training.tasks import make_task

    out = []
    for device in (GPU, "cpu"):
        task = make_task("reverse", length=8)
        model = make_model(task, n_layers=2, n_heads=4, d_model=64)
        config = TrainConfig(steps=steps, snapshot_every=steps, device=device, eval_batch_size=64)
        t0 = time.perf_counter()
        snaps = list(train(model, task, config))
        _sync()
        elapsed = time.perf_counter() - t0
        assert snaps and snaps[-1].device == device, [s.device for s in snaps]
        out.append((device, steps / elapsed, float(snaps[-1].loss)))
    return out


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def report(machine: dict, gpu: str, command: str, par, times, train_rows, minutes: float) -> str:
    lines = [
        "## GPU",
        "",
        "The engine's CUDA path on a lent GPU machine, against the same engine on that machine's CPU and against "
        "Hugging Face on the same GPU (`bench/bench_gpu.py`; its docstring says what each case times).",
        "",
        f"- Command: `{command}` (from the repository root)",
        f"- Date: {_dt.date.today().isoformat()}; {minutes:.1f} min",
        f"- GPU: {gpu}; CPU: {machine['cpu_model']}, {machine['cpus']} cores; Python {machine['python']}, "
        f"torch {machine['torch']}, transformers {machine['transformers']}",
        "",
        "### Same results on CUDA and on the CPU",
        "",
        "| model | attention | largest Δ, weights | largest Δ, Q/K/V | note |",
        "|---|---|---|---|---|",
    ]
    for name, what, d_att, d_qkv, note in par:
        lines.append(f"| {name} | {what} | {d_att:.1e} | {d_qkv:.1e} | {note} |".replace("nan", "–"))
    lines += [
        "",
        "### Time per call (median)",
        "",
        "| model | tokens | engine cuda | of which the trace | HF plain cuda | HF eager cuda | engine cuda / HF plain "
        "| engine cpu | cpu / cuda | GPU peak | host copies per trace |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in times:
        ratio = r["engine cuda"] / r["HF plain cuda"]
        speedup = f"{r['engine cpu'] / r['engine cuda']:.1f}×" if r["engine cpu"] else "–"
        lines.append(
            f"| {r['model']} | {r['n']:,} | {_fmt(r['engine cuda'])} | {_fmt(r['trace only'])} | {_fmt(r['HF plain cuda'])} | "
            f"{_fmt(r['HF eager cuda'])} | {ratio:.1f}× | {_fmt(r['engine cpu'])} | {speedup} | {r['gpu peak MB']:,.0f} MB "
            f"| {r['host copies']} |"
        )
    lines += ["", *target_lines(times)]
    lines += [
        "",
        f"### Training ({TRAIN_STEPS} steps of the Train live page's reverse task, 2 layers × 4 heads, d 64)",
        "",
    ]
    lines += ["| device | steps/s | final loss |", "|---|---|---|"]
    lines += [f"| {d} | {s:.0f} | {loss:.3f} |" for d, s, loss in train_rows]
    return "\n".join(lines) + "\n"


def target_lines(times: list[dict]) -> list[str]:
    """Whether the trace met issue 43's target (:data:`TARGET`): one sentence."""
    model, n, most, most_ratio = TARGET
    row = next((r for r in times if (r["model"], r["n"]) == (model, n)), None)
    if row is None:
        return [f"Target ({model}, {n:,} tokens): not measured in this run."]
    took, ratio = row["engine cuda"], row["engine cuda"] / row["HF plain cuda"]
    verdict = "met" if took <= most and ratio <= most_ratio else "NOT met"
    return [
        f"Target ({model}-small shape, {n:,} tokens, trace + one head): {_fmt(took)} (at most {most * 1000:.0f} ms), "
        f"{ratio:.2f}× a plain forward (at most {most_ratio}×), host copies per trace: {row['host copies']}; {verdict}."
    ]


def main(argv: list[str] | None = None) -> int:
    global GPU
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write the markdown section here")
    parser.add_argument("--quick", action="store_true", help="one size per model, 3 repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--dry-run-on-cpu", action="store_true", help="every step with the CPU standing in for CUDA")
    parser.add_argument("--profile", type=Path, default=None, help="write torch.profiler tables of one call here")
    args = parser.parse_args(argv)
    if args.profile:
        global PROFILE_DIR
        args.profile.mkdir(parents=True, exist_ok=True)
        PROFILE_DIR = args.profile
    if args.dry_run_on_cpu:
        GPU = "cpu"
        gpu = "none (dry run: the CPU stands in for CUDA)"
    elif not torch.cuda.is_available():
        print("bench_gpu needs a CUDA GPU (torch.cuda.is_available() is False).", file=sys.stderr)
        return 2
    else:
        props = torch.cuda.get_device_properties(0)
        gpu = f"{props.name} ({props.total_memory / 2**30:.0f} GiB), CUDA {torch.version.cuda}"
    t_start = time.perf_counter()
    repeats = args.repeats or (3 if args.quick else 10)
    sizes = QUICK_SIZES if args.quick else SIZES
    with tempfile.TemporaryDirectory() as tmp:
        gpt2, llama = Path(tmp) / "gpt2", Path(tmp) / "llama"
        build_folder(gpt2)
        build_folder(llama, "llama")
        par = parity({"gpt2-small-shape": str(gpt2), "llama-gqa-shape": str(llama)})
        print("parity done", file=sys.stderr, flush=True)
        times = timing({"minilm": minilm_path(), "gpt2": str(gpt2), "llama": str(llama)}, sizes, repeats)
        train_rows = training(TRAIN_STEPS)
    minutes = (time.perf_counter() - t_start) / 60
    machine = _machine(torch.get_num_threads())
    text = report(machine, gpu, command_line("bench.bench_gpu", argv), par, times, train_rows, minutes)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
