"""A class on one server: N simulated students type into Explore at once; rerun latency, failures, CPU, memory.

Each student speaks Streamlit's own websocket protocol (``bench/st_client.py``: no browser, so the load
generator stays light next to the server). A student opens Explore (the default page) with its own
sentence in the URL, learns the id of the text area labelled "Your text" from that first run, types
3 new sentences 1–3 s apart (seeded), and then all students press Enter within the same second (a
barrier; ``--repeats`` bursts). Every rerun is timed from the BackMsg sent to the ``script_finished``
ForwardMsg. A failure is an ``exception`` element or an error box in the run, a compile error, a
timeout (60 s per rerun), a lost connection, or a rerun the case's time limit (5 min) cut off.
Sentences are 20–60 MiniLM tokens and differ per student, so the server cannot answer from its cache
(``--same-text``: everyone types the same sentences). The server's processes are sampled from /proc
every 0.5 s: CPU (user + sys) and resident memory of each.

Run from the repository root::

    python -m bench.bench_class                                   # the app as the README starts it
    python -m bench.bench_class --target streamlit,classroom      # and behind scripts/classroom.sh
    python -m bench.bench_class --url http://127.0.0.1:8501 --server-pid 1234   # a running server

It replaces the section "A class on one server" of docs/BENCHMARKS.md (``--out PATH``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shlex
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from bench.sentences import student_sentences
from bench.serve import (TARGETS, footer, ROOT, ProcSampler, Server, TargetUnavailable, load_average, machine,
                         own_cpu_s, running_server, checkout)
from bench.st_client import Run, Session
from bench.trace_report import _write_section

SECTION = "## A class on one server"
TEXT_LABEL = "Your text"
TYPED = 3  # sentences each student types before the bursts
WARM_UP_TEXT = "The teacher opens the page before the class starts."


@dataclass
class Case:
    """What one class of ``students`` saw on one target."""

    target: str
    students: int
    repeats: int
    opens: list[Run] = field(default_factory=list)
    typed: list[Run] = field(default_factory=list)
    bursts: list[list[Run]] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)
    timed_out: bool = False
    sampler: ProcSampler | None = None
    client_cpu_s: float = 0.0

    def reruns(self) -> list[Run]:
        return self.typed + [run for burst in self.bursts for run in burst]

    def failures(self) -> Counter:
        counts = Counter(r.failure.split(":")[0] for r in self.opens + self.reruns() if r.failure)
        missing = self.students * (1 + TYPED + self.repeats) - len(self.opens) - len(self.reruns())
        if missing > 0:
            counts["case time limit"] += missing
        counts.update("client error" for _ in self.client_errors)
        return counts


async def student(rng: random.Random, url: str, texts: list[str], barrier: asyncio.Barrier, case: Case,
                  args: argparse.Namespace) -> None:
    """One student: open Explore, type ``TYPED`` sentences, then join each burst."""
    session = Session(url, timeout_s=args.rerun_timeout)
    try:
        await asyncio.sleep(rng.uniform(0, args.arrival))  # students arrive over a few seconds
        opened = await session.open({"text": texts[0]})
        box = session.widget_id("text_area", TEXT_LABEL)
        if opened.failure is None and box is None:
            opened.failure = f'no text area labelled "{TEXT_LABEL}"'
        case.opens.append(opened)

        async def send(text: str) -> Run:
            return await session.rerun({box: text}) if box else Run(0.0, "not sent (page did not open)")

        for text in texts[1:1 + TYPED]:
            await asyncio.sleep(rng.uniform(1, 3))
            case.typed.append(await send(text))
        for burst, text in zip(case.bursts, texts[1 + TYPED:]):
            await asyncio.sleep(rng.uniform(1, 3))
            await barrier.wait()  # everyone has finished the previous rerun: Enter together
            await asyncio.sleep(rng.uniform(0, 1))
            burst.append(await send(text))
    finally:
        await session.close()


def class_texts(args: argparse.Namespace, students: int) -> list[list[str]]:
    """Each student's sentences: opening, typed, one per burst (all the same with ``--same-text``)."""
    count = 1 + TYPED + args.repeats
    if args.same_text:
        return [student_sentences(args.seed, count)] * students
    return [student_sentences(args.seed * 1_000_003 + students * 1_000 + i, count) for i in range(students)]


async def run_case(server: Server, students: int, args: argparse.Namespace) -> Case:
    case = Case(server.target, students, args.repeats, bursts=[[] for _ in range(args.repeats)])
    barrier = asyncio.Barrier(students)
    rngs = [random.Random(f"{args.seed}-{students}-{i}") for i in range(students)]
    texts = class_texts(args, students)
    case.sampler = ProcSampler(server.pid).start()
    cpu_before = own_cpu_s()
    tasks = [asyncio.create_task(student(rngs[i], server.url, texts[i], barrier, case, args))
             for i in range(students)]
    try:
        async with asyncio.timeout(args.case_timeout):
            results = await asyncio.gather(*tasks, return_exceptions=True)
        case.client_errors = [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
    except TimeoutError:
        case.timed_out = True
        await asyncio.gather(*tasks, return_exceptions=True)  # cancelled by the timeout; let them close
    finally:
        case.sampler.stop()
        case.client_cpu_s = own_cpu_s() - cpu_before
    return case


async def warm_up(server: Server, args: argparse.Namespace) -> str:
    """One student per server process opens Explore once (the model loads), before any timing."""
    workers = max(1, len(server.worker_ports()))

    async def one() -> tuple[Run, str]:
        session = Session(server.url, timeout_s=max(args.rerun_timeout, 120))
        try:
            return await session.open({"text": WARM_UP_TEXT}), session.cookies
        finally:
            await session.close()

    runs = await asyncio.gather(*(one() for _ in range(workers)))
    failed = [run.failure for run, _ in runs if run.failure]
    text = (f"{workers} student{'s' if workers > 1 else ''} opened Explore once before timing (model load), "
            f"slowest {max(run.seconds for run, _ in runs):.1f} s")
    if workers > 1:
        text += f", {len({cookie for _, cookie in runs})} distinct session cookies"
    return text + (f"; failed: {', '.join(failed)}" if failed else "")


async def run_target(server: Server, args: argparse.Namespace, warm_ups: list[str]) -> list[Case]:
    note = await warm_up(server, args)
    print(f"[{server.target}] warm-up: {note}", flush=True)
    warm_ups.append(f"{server.target}: {note}")
    cases = []
    for students in args.students:
        case = await run_case(server, students, args)
        print(f"[{server.target}] {students} students: {summary_line(case)}", flush=True)
        cases.append(case)
    return cases


# --- report -------------------------------------------------------------------------------------------

def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _p95(values: list[float]) -> float | None:
    if len(values) < 2:
        return values[0] if values else None
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def _s(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _mb(value: float) -> str:
    return f"{value / 1e6:.0f}"


def _failures(case: Case) -> str:
    counts = case.failures()
    total = sum(counts.values())
    return "0" if not total else f"{total} (" + ", ".join(f"{k} {v}" for k, v in counts.most_common()) + ")"


def _bursts(case: Case) -> str:
    """Each burst's slowest successful rerun (failed ones are counted under failures)."""
    return " · ".join(_s(max((r.seconds for r in b if r.failure is None), default=None)) for b in case.bursts)


def summary_line(case: Case) -> str:
    ok = [r.seconds for r in case.reruns() if r.failure is None]
    cpu = case.sampler.cpu_percent() if case.sampler else None
    return (f"{len(ok)} reruns ok, median {_s(_median(ok))} s, "
            f"p95 {_s(_p95(ok))} s, burst slowest {_bursts(case)} s, "
            f"failures {_failures(case)}, server CPU " + ("not sampled" if cpu is None else f"{cpu:.0f}% of one core"))


def tables(cases: list[Case]) -> list[str]:
    lines = [
        "| target | students | reruns timed (ok) | median (s) | p95 (s) | burst slowest, each burst (s) "
        "| page open, median (s) | failures | server CPU (% of one core) | server peak RSS, sum (MB) "
        "| load generator CPU (% of one core) |",
        "|---|---:|---:|---:|---:|---|---:|---|---:|---:|---:|",
    ]
    for c in cases:
        ok = [r.seconds for r in c.reruns() if r.failure is None]
        opens = [r.seconds for r in c.opens if r.failure is None]
        cpu = c.sampler.cpu_percent()
        rss = sum(p.rss_peak_bytes for p in c.sampler.procs.values())
        wall = c.sampler.wall_s or 1.0
        lines.append(
            f"| {c.target} | {c.students} | {len(c.reruns())} ({len(ok)}) | {_s(_median(ok))} "
            f"| {_s(_p95(ok))} | {_bursts(c)} | {_s(_median(opens))} "
            f"| {_failures(c)}{' (case limit hit)' if c.timed_out else ''} | {'–' if cpu is None else f'{cpu:.0f}'} "
            f"| {_mb(rss) if c.sampler.procs else '–'} | {100 * c.client_cpu_s / wall:.0f} |"
        )
    lines += ["", "Per server process (peak resident memory and CPU over the case):", "",
              "| target | students | process | peak RSS (MB) | CPU (% of one core) |", "|---|---:|---|---:|---:|"]
    for c in cases:
        for stats in sorted(c.sampler.procs.values(), key=lambda p: p.label):
            lines.append(f"| {c.target} | {c.students} | {stats.label} | {_mb(stats.rss_peak_bytes)} "
                         f"| {100 * stats.cpu_s / (c.sampler.wall_s or 1.0):.0f} |")
    return lines


def section(cases: list[Case], args: argparse.Namespace, context: dict[str, str]) -> str:
    lines = [
        SECTION, "",
        "N simulated students on Explore at once, speaking Streamlit's websocket protocol (no browsers: twenty "
        "Chromium tabs would saturate 2 cores before the server). Each opens the page with its own sentence "
        f"in the URL, types {TYPED} new sentences 1–3 s apart, then all press Enter within the same second "
        f"({args.repeats} burst{'s' if args.repeats != 1 else ''}). A rerun is timed from the BackMsg sent to "
        "`script_finished`; median and p95 are over the typed and burst reruns that succeeded. "
        + ("Every student types the same sentences (`--same-text`: the server's cache answers after the first). "
           if args.same_text else
           "Sentences are 20–60 MiniLM tokens and differ per student (seeded), so the cache cannot answer. ")
        + f"Per rerun timeout {args.rerun_timeout:.0f} s, per case {args.case_timeout:.0f} s. Server CPU is user + "
        "sys time of every server process (read from /proc every 0.5 s) over the case's wall time, as % of one "
        "core; the load generator runs on the same machine and its own CPU is shown next to it.",
        "",
        *tables(cases),
        "",
        "Warm-up (not timed): " + "; ".join(context["warm_ups"]) + ".",
        *([""] + [f"Not measured: {note}." for note in context["skipped"]] if context["skipped"] else []),
        "",
        *footer(context),
    ]
    return "\n".join(lines) + "\n"


def command(argv: list[str] | None) -> str:
    """This run's command line, with the classroom's worker count when it was set."""
    env = f"AP_WORKERS={os.environ['AP_WORKERS']} " if "AP_WORKERS" in os.environ else ""
    return env + "python -m bench.bench_class " + shlex.join(sys.argv[1:] if argv is None else argv)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--target", default="streamlit",
                        help=f"comma-separated: {', '.join(TARGETS)} (started here, stopped at the end)")
    parser.add_argument("--url", help="use a server that is already running (e.g. http://127.0.0.1:8501)")
    parser.add_argument("--server-pid", type=int, help="with --url: sample this process and its children")
    parser.add_argument("--students", default="1,10,30", help="class sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="synchronized bursts per class")
    parser.add_argument("--same-text", action="store_true", help="every student types the same sentences")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arrival", type=float, default=2.0, help="students arrive within this many seconds")
    parser.add_argument("--rerun-timeout", type=float, default=60.0, help="seconds per rerun")
    parser.add_argument("--case-timeout", type=float, default=300.0, help="seconds per class (hard limit)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    parser.add_argument("--baseline", metavar="REV",
                        help="also run the class against `streamlit run` of git revision REV (a temporary worktree)")
    args = parser.parse_args(argv)
    args.students = [int(s) for s in args.students.split(",") if s.strip()]
    args.targets = [t.strip() for t in args.target.split(",") if t.strip()]
    if args.repeats < 1 or not args.students or min(args.students) < 1:
        parser.error("--students and --repeats must be positive")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    context = {"load_before": load_average(), "warm_ups": [], "skipped": [],
               "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(),
               "command": command(argv)}
    cases: list[Case] = []
    if args.url:
        server = Server(args.url.rstrip("/"), "url", args.server_pid)
        cases += asyncio.run(run_target(server, args, context["warm_ups"]))
    for target in [] if args.url else args.targets:
        try:
            with running_server(target, f"bench-class-{target}.log") as server:
                cases += asyncio.run(run_target(server, args, context["warm_ups"]))
        except TargetUnavailable as err:
            print(f"[{target}] skipped: {err}", flush=True)
            context["skipped"].append(f"{target} ({err})")
    if args.baseline and not args.url:
        with checkout(args.baseline) as (folder, sha):
            with running_server("streamlit", "bench-class-baseline.log", root=folder) as server:
                server.target = f"baseline: streamlit at {sha}"
                cases += asyncio.run(run_target(server, args, context["warm_ups"]))
    if not cases:
        print("nothing measured; docs not written", file=sys.stderr)
        sys.exit(1)
    context["load_after"] = load_average()
    text = section(cases, args, context)
    _write_section(Path(args.out), text)
    print(text)


if __name__ == "__main__":
    main()
