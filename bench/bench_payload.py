"""Bytes sent to the browser: bertviz's views (offline HTML) vs the app's own Plotly views.

bertviz ships every layer × head × n² weight as JSON text inside its HTML (the model view and the
head view alike); Explore sends one layer's heads to its in-browser view (engine/views/layer_view.py: uint16
counts of 0.001, deflated; at most 256 × 256 cells a head), which switches head and token with no server run. For MiniLM (6 × 12 heads, d_head 32) at n tokens, and
for a 12 × 12-head, d_head 64 shape (BERT-base/GPT-2-small; random Q/K, the sizes do not depend on
the values), this measures, in one run:

- our offline bertviz documents (weights rounded to 4 decimals, q/k to 3; + ~330 kB of inlined d3
  and jQuery), and bertviz called the usual way on float32 tensors (CDN JS, not counted);
- Explore's view: the bytes ``app.runtime.maps.layer_view_data`` → ``layer_view.encode`` gives the page;
- with ``--draw``, the time Chromium takes to load and draw each offline document (network off).

Run from the repository root::

    OMP_WAIT_POLICY=PASSIVE HF_HUB_OFFLINE=1 python -m bench.bench_payload --draw

It replaces the section "bertviz views: payload" at the end of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from bench.serve import machine
from bench.trace_report import write_section
from engine.records import Tokens
from engine.traces.attention import AttentionTrace
from engine.views import bertviz_html as bv

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## bertviz views: payload"
WORDS = "the cat sat on the mat while a small dog ran around the old garden and barked".split()


def minilm_trace(n: int) -> AttentionTrace:
    """A MiniLM trace of exactly ``n`` tokens (text repeated, cut at the limit)."""
    import engine

    model = engine.load("minilm")
    text = " ".join(WORDS * (n // len(WORDS) + 2))
    return engine.trace(model, text, max_tokens=n)


def shape_trace(n: int, layers: int = 12, heads: int = 12, d_head: int = 64, seed: int = 0) -> AttentionTrace:
    """A trace with random Q/K/V of a BERT-base / GPT-2-small shape."""
    rng = np.random.default_rng(seed)
    qkv = [tuple(rng.standard_normal((heads, n, d_head), dtype=np.float32) for _ in range(layers)) for _ in range(3)]
    tokens = Tokens(tuple(f"t{i}" for i in range(n)), tuple(range(n)), (False,) * n)
    return AttentionTrace("shape-12x12", "encoder", tokens, tokens, *qkv, scales=(d_head**-0.5,) * layers, causal=False)


def bertviz_default_bytes(trace: AttentionTrace) -> int:
    """bertviz's model view called as its docs say: float32 tensors, its CDN scripts (not counted)."""
    import torch
    from bertviz import model_view

    attention = [torch.from_numpy(trace.pattern(i))[None] for i in range(trace.n_layers)]
    return len(model_view(attention, list(trace.tokens.strings), html_action="return").data.encode())


def own_bytes(trace: AttentionTrace) -> int:
    """Explore's payload: layer 0's heads as its in-browser view is sent them (each head as ``head_map`` pools it:
    exact up to 256 tokens a side, block maxima above), in the default theme."""
    from app.ui.map_data import MapView, head_map
    from engine.views.layer_view import Choice, LayerData, encode

    maps = [head_map(trace, MapView(0, h)) for h in range(trace.n_heads)]
    data = LayerData(np.stack([m.values for m in maps])[None], (0,), maps[0].q_labels, maps[0].k_labels)
    return len(encode(data, Choice()))


def draw_seconds(documents: dict[str, str], timeout_s: float = 60) -> dict[str, float | None]:
    """Seconds from ``set_content`` to drawn SVG in Chromium with every network request aborted."""
    from playwright.sync_api import sync_playwright

    out: dict[str, float | None] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--disable-gpu", "--disable-quic", "--disable-dev-shm-usage", "--no-sandbox"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        page.route("**/*", lambda route: route.abort())
        page.set_default_timeout(timeout_s * 1000)
        for key, document in documents.items():
            try:
                start = time.perf_counter()
                page.set_content(document)
                page.wait_for_selector("svg text", state="attached")
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
                out[key] = time.perf_counter() - start
            except Exception:  # noqa: BLE001 — a view that never draws is recorded as such
                out[key] = None
        browser.close()
    return out


def measure(trace: AttentionTrace, draw: bool) -> dict:
    n = trace.n_queries
    head = bv.head_view_html(trace, enforce_limits=False)
    model = bv.model_view_html(trace, enforce_limits=False)
    neuron = bv.neuron_view_html(trace, enforce_limits=False)
    row = {
        "n": n,
        "model": len(model.encode()),
        "head": len(head.encode()),
        "neuron": len(neuron.encode()),
        "default": bertviz_default_bytes(trace),
        "view": own_bytes(trace),
    }
    if draw:
        times = draw_seconds({"model": model, "head": head, "neuron": neuron})
        row.update({f"t_{k}": v for k, v in times.items()})
    return row


def load_average() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg()) + " (1 / 5 / 15 min)"
    except OSError:
        return "unknown"


def fmt_bytes(b: float) -> str:
    return f"{b / 1e6:.2f} MB" if b >= 1e6 else f"{b / 1e3:.0f} kB"


def fmt_s(t) -> str:
    return "—" if t is None else f"{t:.2f} s"


def table(rows: list[tuple[str, dict]], draw: bool) -> list[str]:
    lines = [
        "| model | tokens | model view | head view | neuron view | bertviz default | Explore: the layer's heads "
        "| model view ÷ Explore |" + (" draw: model / head / neuron |" if draw else ""),
        "|---|---:|---:|---:|---:|---:|---:|---:|" + ("---|" if draw else ""),
    ]
    for name, r in rows:
        line = (
            f"| {name} | {r['n']} | {fmt_bytes(r['model'])} | {fmt_bytes(r['head'])} | {fmt_bytes(r['neuron'])} | "
            f"{fmt_bytes(r['default'])} | {fmt_bytes(r['view'])} | {r['model'] / r['view']:.1f}× |"
        )
        if draw:
            line += f" {fmt_s(r.get('t_model'))} / {fmt_s(r.get('t_head'))} / {fmt_s(r.get('t_neuron'))} |"
        lines.append(line)
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="16,32,48,64,128,256", help="token counts")
    parser.add_argument("--shape-sizes", default="16,32,64,128", help="token counts for the 12×12-head shape")
    parser.add_argument("--draw", action="store_true", help="also time drawing in Chromium (sizes ≤ --draw-max)")
    parser.add_argument("--draw-max", type=int, default=64)
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    args = parser.parse_args()

    import engine

    engine.set_threads(1)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    shape_sizes = [int(s) for s in args.shape_sizes.split(",") if s]
    rows = []
    names = ("MiniLM (6 × 12 heads, d_head 32)", "12 × 12 heads, d_head 64 (random Q/K)")
    for name, make, ns in zip(names, (minilm_trace, shape_trace), (sizes, shape_sizes)):
        for i, n in enumerate(ns):
            rows.append((name if i == 0 else "", measure(make(n), args.draw and n <= args.draw_max)))
            print(f"{make.__name__}: {n} tokens measured", flush=True)

    libs = len(bv.offline_document("", title="").encode())
    command = "OMP_WAIT_POLICY=PASSIVE HF_HUB_OFFLINE=1 python -m bench.bench_payload" + (
        " --draw" if args.draw else ""
    )
    lines = [
        SECTION,
        "",
        "Bytes a view sends (kB = 10³, MB = 10⁶). bertviz's columns are the app's offline documents (JSON weights to 4",
        f'decimals, q/k to 3, and {fmt_bytes(libs)} of d3, jQuery and the require shim inlined); "bertviz default" is '
        "`bertviz.model_view`",
        "on float32 tensors (CDN scripts not counted). Explore's column: what its view gets, every head of a layer (uint16",
        "counts of 0.001, deflated; block maxima above 256 tokens)."
        + (" Draw: headless Chromium, `set_content` → drawn SVG." if args.draw else ""),
        "",
        f"`{command}` · {machine()} · load {load_average()}",
        "",
        *table(rows, args.draw),
    ]
    write_section(Path(args.out), "\n".join(lines))  # this section only: the others and hand notes stay
    print("\n".join(lines))


if __name__ == "__main__":
    main()
