"""A soak run: a class coming and going on the classroom launch for 45 minutes; do memory and threads stay flat?

Simulated students (Streamlit's websocket protocol, ``bench/st_client.py``; no browsers) arrive all the
time: each opens Explore with a sentence of its own, types a new one every 5–20 s, now and then opens the
Heads page (``page_name``), and leaves after 2–6 minutes, closing its tab. About ``--students`` are in
the room at any moment. Every ``--sample-s`` seconds the run records, per server process (HAProxy and
each Streamlit worker): resident memory and threads (``/proc``), and each worker's live sessions
(Streamlit's own ``/_stcore/metrics``, family ``active_sessions``). At the end every student has left;
after ``--settle-s`` seconds the same figures are read again and compared with the baseline taken after
the warm-up and with the peak: flat memory and threads, sessions back to zero.

Loopback only, bounded: the run stops by itself after ``--minutes`` (default 45) plus the settle time.
Writes the section "Soak: a class coming and going on the classroom launch" of docs/BENCHMARKS.md (``--out``)::

    python -m bench.bench_soak                      # 45 minutes on scripts/classroom.sh
    python -m bench.bench_soak --minutes 3 --students 6 --out /tmp/soak.md   # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench.sentences import student_sentences
from bench.serve import ROOT, Server, descendants, footer, label, load_average, run_context, running_server
from bench.st_client import Session
from bench.trace_report import publish

TEXT_LABEL = "Your text"
SECTION = "## Soak: a class coming and going on the classroom launch"


@dataclass
class Window:
    """What happened between two samples."""

    t_s: float
    students: int
    reruns: list[float] = field(default_factory=list)
    failures: int = 0


@dataclass
class Sample:
    t_s: float
    rss: dict[str, int]  # process label → bytes
    threads: dict[str, int]
    sessions: dict[str, int]  # worker label → live sessions (Streamlit's active_sessions)


def rss_and_threads(pid: int) -> tuple[int, int]:
    """A process's resident bytes (VmRSS) and threads from /proc; (0, 0) once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, 0
    rss, threads = (re.search(rf"^{field}:\s+(\d+)", text, re.M) for field in ("VmRSS", "Threads"))
    return (int(rss.group(1)) * 1024 if rss else 0), (int(threads.group(1)) if threads else 0)


def active_sessions(port: int) -> int:
    """Live sessions of one Streamlit worker, from its own metrics endpoint."""
    url = f"http://127.0.0.1:{port}/_stcore/metrics?families=active_sessions"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return -1
    values = [float(m) for m in re.findall(r"^active_sessions\S*\s+([0-9.eE+-]+)", text, re.M)]
    return int(sum(values)) if values else -1


def sample(server: Server, t0: float) -> Sample:
    rss, threads, sessions = {}, {}, {}
    for pid in descendants(server.pid):
        name = label(pid)
        if name.startswith(("streamlit", "haproxy")):
            rss[name], threads[name] = rss_and_threads(pid)
    for port in server.worker_ports():
        sessions[f"streamlit :{port}"] = active_sessions(port)
    return Sample(time.monotonic() - t0, rss, threads, sessions)


class Room:
    """The students in the room now, and what they did in the current window."""

    def __init__(self) -> None:
        self.present = 0
        self.window = Window(0.0, 0)
        self.windows: list[Window] = []

    def close_window(self, t_s: float) -> None:
        self.window.students = self.present
        self.window.t_s = t_s
        self.windows.append(self.window)
        self.window = Window(t_s, self.present)


async def student(k: int, url: str, room: Room, stop_at: float, args: argparse.Namespace) -> None:
    rng = random.Random(f"soak-{args.seed}-{k}")
    texts = student_sentences(args.seed * 7919 + k, 40)
    session = Session(url, timeout_s=args.rerun_timeout)
    room.present += 1
    try:
        opened = await session.open({"text": texts[0]})
        box = session.widget_id("text_area", TEXT_LABEL)
        if opened.failure or box is None:
            room.window.failures += 1
            return
        leave_at = min(stop_at, time.monotonic() + rng.uniform(120, 360))
        i = 1
        while time.monotonic() < leave_at and i < len(texts):
            await asyncio.sleep(rng.uniform(5, 20))
            if rng.random() < 0.15:  # a look at the Heads page, then back to Explore
                run = await session.rerun({}, page_name="heads")
                run2 = await session.rerun({}, page_name="")
                box = session.widget_id("text_area", TEXT_LABEL) or box
                for r in (run, run2):
                    room.window.reruns.append(r.seconds)
                    room.window.failures += bool(r.failure)
                continue
            run = await session.rerun({box: texts[i]})
            i += 1
            room.window.reruns.append(run.seconds)
            room.window.failures += bool(run.failure)
    finally:
        await session.close()
        room.present -= 1


async def soak(server: Server, args: argparse.Namespace) -> tuple[list[Window], list[Sample], Sample, Sample]:
    t0 = time.monotonic()
    # warm-up: every worker loads its model once
    warm = [Session(server.url, timeout_s=180) for _ in range(max(1, len(server.worker_ports())) * 2)]
    await asyncio.gather(*(s.open({"text": "A warm-up sentence."}) for s in warm))
    await asyncio.gather(*(s.close() for s in warm))
    await asyncio.sleep(args.settle_s)
    baseline = sample(server, t0)
    print(f"baseline: {baseline}", flush=True)

    room, samples, tasks = Room(), [], []
    start = time.monotonic()
    stop_at = start + args.minutes * 60
    next_sample = start + args.sample_s
    k = 0
    while time.monotonic() < stop_at:  # bounded by the clock
        while room.present < args.students and time.monotonic() < stop_at - 30:
            tasks.append(asyncio.create_task(student(k, server.url, room, stop_at, args)))
            k += 1
            await asyncio.sleep(random.Random(k).uniform(0.5, 3.0))
        if time.monotonic() >= next_sample:
            room.close_window(time.monotonic() - start)
            samples.append(sample(server, start))
            w = room.windows[-1]
            print(
                f"t={w.t_s / 60:5.1f} min students={w.students} reruns={len(w.reruns)} failures={w.failures} "
                f"rss={ {k2: v // 2**20 for k2, v in samples[-1].rss.items()} } MB "
                f"threads={samples[-1].threads} sessions={samples[-1].sessions}",
                flush=True,
            )
            next_sample += args.sample_s
        tasks = [t for t in tasks if not t.done()]
        await asyncio.sleep(1)
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), args.rerun_timeout + 30)
    room.close_window(time.monotonic() - start)
    await asyncio.sleep(args.settle_s)  # everyone has left
    end = sample(server, start)
    print(f"end: {end}", flush=True)
    return room.windows, samples, baseline, end, k  # type: ignore[return-value]


def _mb(b: int) -> str:
    return f"{b / 1e6:.0f}"


def section(windows, samples, baseline: Sample, end: Sample, students_total: int, args, context) -> str:
    procs = sorted(baseline.rss)
    every = max(1, round(300 / args.sample_s))  # a row every ~5 minutes
    rows = [
        "| minute | students in the room | reruns (window) | p95 rerun (s) | failures | "
        + " | ".join(f"{p} RSS (MB) / threads" for p in procs)
        + " | live sessions |",
        "|---:|---:|---:|---:|---:|" + "---:|" * len(procs) + "---:|",
    ]
    for i in range(0, len(samples), every):
        win = windows[max(0, i - every + 1) : i + 1]
        reruns = [r for w in win for r in w.reruns]
        p95 = statistics.quantiles(reruns, n=20)[-1] if len(reruns) >= 20 else (max(reruns) if reruns else 0.0)
        s = samples[i]
        rows.append(
            f"| {s.t_s / 60:.0f} | {windows[i].students} | {len(reruns)} | {p95:.2f} | "
            f"{sum(w.failures for w in win)} | "
            + " | ".join(f"{_mb(s.rss.get(p, 0))} / {s.threads.get(p, 0)}" for p in procs)
            + f" | {sum(v for v in s.sessions.values() if v >= 0)} |"
        )
    all_reruns = [r for w in windows for r in w.reruns]
    peak_rss = {p: max(s.rss.get(p, 0) for s in samples) for p in procs}
    compare = [
        "| process | RSS after warm-up (MB) | peak during the run (MB) | after everyone left (MB) "
        "| threads after warm-up | peak threads | threads after everyone left |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in procs:
        compare.append(
            f"| {p} | {_mb(baseline.rss[p])} | {_mb(peak_rss[p])} | {_mb(end.rss.get(p, 0))} "
            f"| {baseline.threads[p]} | {max(s.threads.get(p, 0) for s in samples)} "
            f"| {end.threads.get(p, 0)} |"
        )
    sessions_end = sum(v for v in end.sessions.values() if v >= 0)
    lines = [
        SECTION,
        "",
        f"Simulated students (Streamlit's websocket protocol, no browsers) on `scripts/classroom.sh` "
        f"({len(baseline.sessions)} workers behind HAProxy) for {args.minutes} minutes: about {args.students} in the "
        "room at any time, each staying 2–6 minutes, typing a new sentence every 5–20 s (its own, so the cache "
        "cannot answer) and sometimes opening the Heads page; then everyone leaves and the server is left alone "
        f"for {args.settle_s} s. {students_total} students came in all; {len(all_reruns)} reruns, "
        f"{sum(w.failures for w in windows)} failures. Memory (VmRSS) and threads from /proc, live sessions from "
        "each worker's `/_stcore/metrics` (`active_sessions`).",
        "",
        *rows,
        "",
        *compare,
        "",
        f"Live sessions after everyone left: **{sessions_end}** (peak {max(sum(v for v in s.sessions.values() if v >= 0) for s in samples)}).",
        "",
        *footer(context),
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--minutes", type=float, default=45.0)
    parser.add_argument("--students", type=int, default=20, help="students in the room at any time")
    parser.add_argument("--sample-s", type=float, default=30.0)
    parser.add_argument("--settle-s", type=float, default=60.0, help="quiet seconds before the baseline and the end")
    parser.add_argument("--rerun-timeout", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.students < 1 or args.sample_s <= 0:
        parser.error("--minutes, --students and --sample-s must be positive")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    context = run_context("bench_soak", argv)
    with running_server("classroom", "bench-soak.log") as server:
        windows, samples, baseline, end, total = asyncio.run(soak(server, args))
    context["load_after"] = load_average()
    publish(args.out, section(windows, samples, baseline, end, total, args, context))


if __name__ == "__main__":
    main()
