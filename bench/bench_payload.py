"""Bytes sent to the browser: bertviz's views (offline HTML) vs the app's own Plotly views.

bertviz ships every layer × head × n² weight as JSON text inside its HTML (the model view and the
head view alike); Explore sends one head as a Plotly heatmap (base64 float32) plus one layer's grid
of heads as one PNG (at most 48×48 cells per head). For MiniLM (6 × 12 heads, d_head 32) at n tokens, and
for a 12 × 12-head, d_head 64 shape (BERT-base/GPT-2-small; random Q/K, the sizes do not depend on
the values), this measures, in one run:

- our offline bertviz documents (weights rounded to 4 decimals, q/k to 3; + ~330 kB of inlined d3
  and jQuery), and bertviz called the usual way on float32 tensors (CDN JS, not counted);
- Explore's one-head figure (``plotly.io.to_json``, what ``st.plotly_chart`` sends) and its grid of heads (the
  PNG, sent to ``st.image`` as a ``data:`` URL: a third more as base64);
- with ``--draw``, the time Chromium takes to load and draw each offline document (network off).

Run from the repository root::

    OMP_WAIT_POLICY=PASSIVE HF_HUB_OFFLINE=1 python -m bench.bench_payload --draw

It replaces the section "bertviz views: payload" at the end of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

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


def own_bytes(trace: AttentionTrace) -> tuple[int, int]:
    """Explore's payload: (one head's map as the JSON bytes ``st.plotly_chart`` sends, one layer's grid of heads as
    PNG bytes; the page sends them base64-encoded in a ``data:`` URL, a third more).

    Built as Explore builds them, in the default theme: ``head_map`` → ``map_spec`` (exact weights up to 256 tokens a
    side, block maxima above) through ``charts.ready``, and the layer's tiles (``layer_tiles`` at ``grid_cells``) →
    ``grid_png`` (six heads a row for MiniLM's twelve)."""
    import plotly.io as pio

    from app.runtime.maps import grid_cells
    from app.ui import charts, theme
    from app.ui.heatmap import map_spec
    from app.ui.map_data import MapView, head_map, layer_tiles
    from app.views.explore.grid_picture import grid_per_row, grid_png

    with theme.looking(theme.DEFAULT):
        head = charts.ready(map_spec(head_map(trace, MapView(0, 0)), title="Layer 0, head 0"))
        tiles = layer_tiles(trace, 0, grid_cells(trace.n_heads, max(trace.n_queries, trace.n_keys)))
        grid = grid_png(tiles[None], 0, grid_per_row(trace.n_heads))
    return len(pio.to_json(head, validate=False).encode()), len(grid)


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
    one_head, grid = own_bytes(trace)
    row = {
        "n": n,
        "model": len(model.encode()),
        "head": len(head.encode()),
        "neuron": len(neuron.encode()),
        "default": bertviz_default_bytes(trace),
        "one_head": one_head,
        "grid": grid,
    }
    if draw:
        times = draw_seconds({"model": model, "head": head, "neuron": neuron})
        row.update({f"t_{k}": v for k, v in times.items()})
    return row


def load_average() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in __import__("os").getloadavg()) + " (1 / 5 / 15 min)"
    except OSError:
        return "unknown"


def fmt_bytes(b: float) -> str:
    return f"{b / 1e6:.2f} MB" if b >= 1e6 else f"{b / 1e3:.0f} kB"


def fmt_s(t) -> str:
    return "—" if t is None else f"{t:.2f} s"


def table(title: str, rows: list[dict], draw: bool) -> list[str]:
    lines = [
        f"**{title}**",
        "",
        "| tokens | bertviz model view | bertviz head view | neuron view | bertviz default (float32, CDN) "
        "| Explore: one head | Explore: head grid | model view ÷ (head + grid) |"
        + (" draw: model / head / neuron |" if draw else ""),
        "|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---|" if draw else ""),
    ]
    for r in rows:
        ratio = r["model"] / (r["one_head"] + r["grid"])
        line = (
            f"| {r['n']} | {fmt_bytes(r['model'])} | {fmt_bytes(r['head'])} | {fmt_bytes(r['neuron'])} | "
            f"{fmt_bytes(r['default'])} | {fmt_bytes(r['one_head'])} | {fmt_bytes(r['grid'])} | {ratio:.1f}× |"
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
    minilm_rows, shape_rows = [], []
    for rows, make, ns in ((minilm_rows, minilm_trace, sizes), (shape_rows, shape_trace, shape_sizes)):
        for n in ns:
            rows.append(measure(make(n), args.draw and n <= args.draw_max))
            print(f"{make.__name__}: {n} tokens measured", flush=True)

    libs = sum(len(bv.offline_document("", title="").encode()) for _ in range(1))
    lines = [
        SECTION,
        "",
        "Bytes one view sends to the browser (MB = 10⁶ bytes). bertviz columns are the app's offline documents: "
        f"JSON weights rounded to 4 decimals (q/k to 3) + {fmt_bytes(libs)} of d3, jQuery and the require shim "
        'inlined in every document. "bertviz default" is `bertviz.model_view` on float32 tensors as its docs '
        "call it (full-precision numbers; its CDN scripts not counted). Explore's figures are "
        "`plotly.io.to_json` of the figures Explore draws: one head (`map_spec`, base64 float32, block maxima above "
        "256 tokens a side) and the layer's grid of heads (`grid_png`, the PNG's bytes; the page sends them as a "
        "base64 `data:` URL, a third more: exact tiles up to 48 tokens, 32 × 32 block maxima above)."
        + (
            " Draw: Chromium (headless, network aborted), from `set_content` to "
            "drawn SVG; — = not timed (above `--draw-max`) or not drawn within 60 s. "
            "Draw times are upper bounds on a shared machine: see the load average "
            "below."
            if args.draw
            else ""
        ),
        "",
        *table("MiniLM (6 layers × 12 heads, d_head 32)", minilm_rows, args.draw),
        *table("12 layers × 12 heads, d_head 64 (BERT-base / GPT-2-small shape, random Q/K)", shape_rows, args.draw),
        f"Limits used by the bertviz views page (engine/views/bertviz_html.py): tokens {bv.MAX_TOKENS}, "
        f"numbers per payload {bv.MAX_CELLS}.",
        "",
        f"Load average while measuring: {load_average()}.",
        "",
        "Reproduce (from the repository root; ~5 min on 2 cores): "
        "`OMP_WAIT_POLICY=PASSIVE HF_HUB_OFFLINE=1 python -m bench.bench_payload"
        + (" --draw" if args.draw else "")
        + "`",
    ]
    write_section(Path(args.out), "\n".join(lines))  # this section only: the others and hand notes stay
    print("\n".join(lines))


if __name__ == "__main__":
    main()
