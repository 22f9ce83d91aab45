"""Server start → first page usable → first chart, against the time Python needs to import torch and transformers.

A fresh server started with the README's command (``python -m app``: the launcher, whose child process traces
the landing page while the server starts, :mod:`engine.prefetch`) is timed from the moment its process is
started: **healthy** when ``/_stcore/health`` answers ``ok``; then one student connects at once (a teacher who
opens the page as soon as the server is up) and the run is timed: **page usable** when the landing page's
sentence box arrives, **first chart** when the first Plotly chart arrives, **run finished** at
``script_finished``. The alternative, started alternately in the same run: plain ``streamlit run
app/streamlit_app.py`` (no launcher, no prefetch: the warm-up imports start with the first page run). The
reference is measured in the same run too: a fresh Python process importing ``torch`` and ``transformers``
(with the BERT model classes) and loading MiniLM through ``engine.load``. Median of ``--repeats`` starts each.

Run from the repository root::

    python -m bench.bench_start            # ~2 min

It replaces the section "Server start to first chart" of docs/BENCHMARKS.md (``--out PATH``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect

from bench.serve import (
    ROOT,
    STREAMLIT_RUN,
    _command,
    _stop_group,
    footer,
    free_port,
    healthy,
    load_average,
    run_context,
)
from bench.st_client import SUBPROTOCOL, Session
from bench.trace_report import publish

SECTION = "## Server start to first chart"
SENTENCE_BOX = "Your text"  # the landing page's sentence box: the page is usable once it has arrived
IMPORTS = (
    "import time; t = time.perf_counter(); import torch, transformers; "
    "from transformers import BertModel; t1 = time.perf_counter(); import engine; engine.load('minilm'); "
    "print(t1 - t, time.perf_counter() - t)"
)


class _Timed:
    """A websocket whose received messages are timestamped: first widget, first chart."""

    def __init__(self, ws, start: float) -> None:
        self.ws, self.start, self.first = ws, start, {}

    async def recv(self):
        data = await self.ws.recv()
        msg = ForwardMsg()
        msg.ParseFromString(data)
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            kind = element.WhichOneof("type")
            box = kind == "text_area" and element.text_area.label == SENTENCE_BOX
            label = "chart" if kind == "plotly_chart" else "widget" if box else None
            if label and label not in self.first:
                self.first[label] = time.perf_counter() - self.start
        return data

    async def send(self, data) -> None:
        await self.ws.send(data)

    async def close(self) -> None:
        await self.ws.close()


async def first_run(url: str, start: float) -> dict[str, float]:
    """Connect one student at once and time its first run's widget, chart and end from ``start``."""
    session = Session(url, timeout_s=180)
    session.cookies = await asyncio.to_thread(session._get_cookies)
    ws = await connect(
        "ws" + url[len("http") :] + "/_stcore/stream",
        subprotocols=[SUBPROTOCOL],
        origin=url,
        max_size=None,
        open_timeout=60,
        ping_interval=None,
    )
    timed = _Timed(ws, start)
    session._ws = timed
    try:
        run = await session.rerun({})
    finally:
        await session.close()
    if run.failure:
        raise RuntimeError(f"the first run failed: {run.failure}")
    return {**timed.first, "finished": time.perf_counter() - start}


def one_start(plain: bool = False) -> dict[str, float]:
    """Start the app (the README's command, or ``plain`` streamlit run), wait for health, time the first student's
    run; stop the server."""
    port = free_port()
    cmd, env = _command("streamlit", port)
    if plain:
        cmd = [cmd[0], "-m", *STREAMLIT_RUN, *cmd[cmd.index("--server.port") :]]  # no launcher, so no prefetch
    url = f"http://127.0.0.1:{port}"
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        while not healthy(url):
            if proc.poll() is not None or time.perf_counter() - start > 120:
                raise RuntimeError("the server did not become healthy")
            time.sleep(0.05)
        times = {"healthy": time.perf_counter() - start}
        times.update(asyncio.run(first_run(url, start)))
        return times
    finally:
        _stop_group(proc)


def reference() -> tuple[float, float]:
    """Seconds a fresh Python needs to import torch + transformers, and to also load MiniLM."""
    out = subprocess.run([sys.executable, "-c", IMPORTS], cwd=ROOT, capture_output=True, text=True, check=True)
    imports, loaded = (float(x) for x in out.stdout.split()[-2:])
    return imports, loaded


def section(
    starts: list[dict[str, float]], plain: list[dict[str, float]], refs: list[tuple[float, float]], context: dict
) -> str:
    def med(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(s[key] for s in runs)

    imports = statistics.median(r[0] for r in refs)
    loaded = statistics.median(r[1] for r in refs)
    lines = [
        SECTION,
        "",
        "A fresh server timed from its process start, started with the README's command (`python -m app`: the "
        "launcher, whose child process imports torch, loads MiniLM and traces the landing page while the server "
        "starts) and, alternately, with plain `streamlit run app/streamlit_app.py` (no child: the server's own "
        "warm-up imports start with the first page run); one student connects as soon as `/_stcore/health` says "
        "ok. **Page usable**: the landing page's sentence box has arrived (the page can be read and typed into); "
        "**first chart**: the first Plotly chart has arrived. The reference is a fresh Python importing torch and "
        "transformers (with BERT's model classes), and then loading MiniLM with `engine.load`, measured in the "
        f"same run. Median of {len(starts)} starts of each (a reference run before each pair).",
        "",
        "| step | `python -m app` (s after process start, median) | each start | plain `streamlit run` | each start |",
        "|---|---:|---|---:|---|",
    ]
    for key, name in (
        ("healthy", "health check answers ok"),
        ("widget", "page usable (the sentence box)"),
        ("chart", "first chart"),
        ("finished", "first run finished"),
    ):
        lines.append(
            f"| {name} | {med(starts, key):.2f} | {' · '.join(f'{s[key]:.2f}' for s in starts)} "
            f"| {med(plain, key):.2f} | {' · '.join(f'{s[key]:.2f}' for s in plain)} |"
        )
    lines += [
        "",
        f"Reference, same run: import torch + transformers **{imports:.2f} s**; with MiniLM loaded "
        f"{loaded:.2f} s. First chart − imports = **{med(starts, 'chart') - imports:.2f} s** (target ≤ 1 s; plain "
        f"`streamlit run` {med(plain, 'chart') - imports:.2f} s); page usable − server start = "
        f"**{med(starts, 'widget'):.2f} s** (target ≤ 2 s; plain `streamlit run` {med(plain, 'widget'):.2f} s).",
        "",
        *footer(context),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    context = run_context("bench_start", argv)
    starts, plain, refs = [], [], []
    for _ in range(args.repeats):
        refs.append(reference())
        starts.append(one_start())
        plain.append(one_start(plain=True))
        print(starts[-1], plain[-1], refs[-1], flush=True)
    context["load_after"] = load_average()
    publish(args.out, section(starts, plain, refs, context))


if __name__ == "__main__":
    main()
