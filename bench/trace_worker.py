"""Measurement side of ``python -m bench.bench_trace``: what runs inside each worker process.

:func:`_make_case` loads one case (engine trace, HF eager with attentions, HF plain forward);
:func:`_memory_worker` measures one call's peak resident memory (``VmHWM`` reset through
``/proc/self/clear_refs``, or a 1 ms RSS sampler) and :func:`_time_worker` times the three cases
round-robin (a spec's ``cases`` may leave a case out at some sizes: the Llama row skips HF eager
where its attentions would not fit). The parent starts them through the hidden ``--worker`` flag and
reads the line that starts with :data:`RESULT_MARK`.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import threading
import time

CASES = ("engine", "hf_eager_attn", "hf_plain")
WARMUP_TOKENS = 8
MB = 1e6
RESULT_MARK = "BENCH_RESULT "

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


def engine_kept(result) -> int:
    """What the engine's case keeps: its trace's Q/K/V bytes (``result``: the trace and what the case drew from it)."""
    trace, _ = result
    return sum(a.nbytes for group in (trace.queries, trace.keys, trace.values) for a in group)


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

        def check(result, ids: list[int]) -> None:
            tr, p = result
            assert list(tr.tokens.ids) == ids, "engine tokenized differently from the ids given to HF"
            assert p.shape == (len(ids), len(ids)), p.shape

        return call, engine_kept, check

    from transformers import AutoModel

    cls = AutoModel  # base model on both sides: the engine's trace skips the LM head too
    want_attn = case == "hf_eager_attn"
    module = cls.from_pretrained(path, attn_implementation="eager" if want_attn else "sdpa", use_safetensors=True)
    module.eval()
    # as the engine's forward: its Llama-family trace passes use_cache=False (no key/value cache built)
    extra = {"use_cache": False} if model_name == "llama" else {}

    def call(ids: list[int]):
        input_ids = torch.tensor([ids])
        with torch.inference_mode():
            out = module(input_ids=input_ids, output_attentions=want_attn, **extra)
        return out, None

    def kept(result) -> int:
        atts = getattr(result, "attentions", None) or ()
        return sum(a.numel() * a.element_size() for a in atts)

    def check(result, ids: list[int]) -> None:
        if want_attn:
            atts = result.attentions
            assert atts is not None and tuple(atts[-1].shape[-2:]) == (len(ids), len(ids)), "no attentions returned"

    return call, kept, check


def _memory_worker(spec: dict, make_case=None) -> dict:
    """Fresh process, one case, one size: peak memory of one call, and what the result keeps.

    ``make_case`` (default :func:`_make_case`) loads the case; other benchmarks pass their own.
    """
    import torch

    torch.set_num_threads(spec["threads"])
    ids = spec["ids"]
    call, kept, check = (make_case or _make_case)(spec["case"], spec["model"], spec["path"], spec["text"])
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
    ``spec["cases"]`` (optional): token count (as a string) → the cases run at that size (default all);
    a case run at no size is not loaded.
    """
    import torch

    torch.set_num_threads(spec["threads"])
    by_n = {n_str: tuple(spec.get("cases", {}).get(n_str, CASES)) for n_str in spec["ids"]}
    needed = [c for c in CASES if any(c in names for names in by_n.values())]
    cases = {c: _make_case(c, spec["model"], spec["path"], spec["text"]) for c in needed}
    out: dict[str, dict] = {}
    for n_str, ids in spec["ids"].items():
        names = by_n[n_str]
        for case in names:  # one warm-up call per case at this size
            call, _, check = cases[case]
            result, _ = call(ids)
            check(result, ids)
            del result
        times: dict[str, list[float]] = {c: [] for c in names}
        head_times: list[float] = []
        for r in range(spec["repeats"]):
            order = names[r % len(names) :] + names[: r % len(names)]  # rotate who goes first
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
        out[n_str] = {c: {"median_s": statistics.median(t), "min_s": min(t), "times_s": t} for c, t in times.items()}
        out[n_str]["engine"]["head_median_s"] = statistics.median(head_times)
        print(f"timed n={n_str}", file=sys.stderr, flush=True)
    return {"threads": torch.get_num_threads(), "by_n": out}
