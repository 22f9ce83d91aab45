"""A class on one server: N simulated students type into Explore at once; rerun latency, failures, CPU, memory.

Each student speaks Streamlit's own websocket protocol (``bench/st_client.py``: no browser, so the load
generator stays light next to the server). A student opens Explore (the default page) with its own
sentence in the URL, learns the id of the text area labelled "Your text" from that first run, types
3 new sentences 1–3 s apart (seeded), and then all students press Enter within the same second (a
barrier; ``--repeats`` bursts). Every rerun is timed from the BackMsg sent to the ``script_finished``
ForwardMsg. A failure is an ``exception`` element or an error box in the run, a compile error, a
timeout (per rerun: max(60, 0.6 × students) s), a lost connection, or a rerun the case's time limit
cut off (max(300, 4 × students) s). Students arrive within max(2, students / 10) s.
Sentences are 20–60 MiniLM tokens and differ per student, so the server cannot answer from its cache
(``--same-link``, alias ``--same-text``: the whole class opens the teacher's link, one sentence, and
types the same sentences). The server's processes are sampled from /proc every 0.5 s: CPU (user +
sys) and resident memory of each.

``--profile`` also records every Streamlit server process with py-spy while each class runs
(``bench/profile_split.py``: raw files and a text report per case in ``test-artifacts/``) and adds
where the script threads' CPU goes (forward pass, attention maps, figure building, serialisation,
imports, Streamlit and page code) per script run to the section. py-spy stops the process for each
sample (50 a second), so a profiled class is a little slower than an unprofiled one.

Run from the repository root::

    python -m bench.bench_class                                   # the app as the README starts it
    python -m bench.bench_class --target streamlit,classroom      # and behind scripts/classroom.sh
    python -m bench.bench_class --url http://127.0.0.1:8501 --server-pid 1234   # a running server
    python -m bench.bench_class --students 30 --profile                  # and where the time goes

It replaces the section "A class on one server" of docs/BENCHMARKS.md (``--out PATH``).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import shutil
import statistics
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench import profile_split, self_check
from bench.profile_split import PySpy, Recording, Split
from bench.sentences import student_sentences
from bench.serve import (
    LOGS,
    ROOT,
    TARGETS,
    ProcSampler,
    Server,
    TargetUnavailable,
    checkout,
    footer,
    load_average,
    own_cpu_s,
    pace,
    run_context,
    running_server,
)
from bench.st_client import Run, Session
from bench.trace_report import write_section, write_subsection

SECTION = "## A class on one server"
TEXT_LABEL = "Your text"
TYPED = 3  # sentences each student types before the bursts
WARM_UP_TEXT = "The teacher opens the page before the class starts."
SAME_LINK = "same link (the teacher's link, one sentence)"


@dataclass(frozen=True)
class Limits:
    """A class's time limits, scaled with its size unless given on the command line."""

    arrival_s: float  # students arrive within this many seconds (100 connections are not opened at once)
    rerun_s: float  # one rerun, BackMsg to script_finished (and the page's GET and the websocket handshake)
    case_s: float  # the whole class: a hard limit

    @classmethod
    def of(cls, args: argparse.Namespace, students: int) -> Limits:
        """``--arrival``, ``--rerun-timeout``, ``--case-timeout``, or by default: max(2, students / 10) s
        to arrive (10 connections a second); max(60, 0.6 × students) s a rerun (in a burst the last
        rerun waits for everyone else's: the published baseline, 2b34314, took 8.3 s for a burst of 30
        on 2 cores, 0.28 s a student; twice that); max(300, 4 × students) s a class (a class of 100
        needs ~40 s without load)."""
        return cls(
            args.arrival if args.arrival is not None else max(2.0, students / 10),
            args.rerun_timeout if args.rerun_timeout is not None else max(60.0, 0.6 * students),
            args.case_timeout if args.case_timeout is not None else max(300.0, 4.0 * students),
        )


@dataclass
class Case:
    """What one class of ``students`` saw on one target."""

    target: str
    students: int
    repeats: int
    limits: Limits = Limits(2.0, 60.0, 300.0)  # a small class's (Limits.of gives each class its own)
    opens: list[Run] = field(default_factory=list)
    typed: list[Run] = field(default_factory=list)
    bursts: list[list[Run]] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)
    timed_out: bool = False
    sampler: ProcSampler | None = None
    client_cpu_s: float = 0.0
    recordings: list[Recording] = field(default_factory=list)  # --profile: one per server process
    split: Split | None = None  # --profile: the script threads' samples of every recording that wrote

    def reruns(self) -> list[Run]:
        return self.typed + [run for burst in self.bursts for run in burst]

    def script_runs(self) -> int:
        """Script runs the server was asked for: page opens and reruns the students timed, failed ones
        too, but not those never sent (no page, no connection)."""
        return sum(1 for r in self.opens + self.reruns() if not (r.failure or "").startswith(("not sent", "connect:")))

    def failures(self) -> Counter:
        counts = Counter(r.failure.split(":")[0] for r in self.opens + self.reruns() if r.failure)
        missing = self.students * (1 + TYPED + self.repeats) - len(self.opens) - len(self.reruns())
        if missing > 0:
            counts["case time limit"] += missing
        counts.update("client error" for _ in self.client_errors)
        return counts


async def student(rng: random.Random, url: str, texts: list[str], barrier: asyncio.Barrier, case: Case) -> None:
    """One student: open Explore, type ``TYPED`` sentences, then join each burst.

    A student whose client raises (a bug or an unexpected reply, not a failed run: those are ``Run``
    failures) records the error, counts its remaining runs as not sent, and still passes the remaining
    barriers, so the rest of the class goes on pressing Enter together."""
    session = Session(url, timeout_s=case.limits.rerun_s)
    opened, typed, joined, pressed = False, 0, 0, 0
    try:
        await asyncio.sleep(rng.uniform(0, case.limits.arrival_s))  # students arrive over a few seconds
        run = await session.open({"text": texts[0]})
        box = session.widget_id("text_area", TEXT_LABEL)
        if run.failure is None and box is None:
            run.failure = f'no text area labelled "{TEXT_LABEL}"'
        case.opens.append(run)
        opened = True

        async def send(text: str) -> Run:
            return await session.rerun({box: text}) if box else Run(0.0, "not sent (page did not open)")

        for text in texts[1 : 1 + TYPED]:
            await asyncio.sleep(rng.uniform(1, 3))
            case.typed.append(await send(text))
            typed += 1
        for burst, text in zip(case.bursts, texts[1 + TYPED :]):
            await asyncio.sleep(rng.uniform(1, 3))
            await barrier.wait()  # everyone has finished the previous rerun: Enter together
            joined += 1
            await asyncio.sleep(rng.uniform(0, 1))
            burst.append(await send(text))
            pressed += 1
    except Exception as err:  # noqa: BLE001 - a client error is a row of the table, not the end of the class
        case.client_errors.append(f"{type(err).__name__}: {err}")
        case.opens += [] if opened else [Run(0.0, "not sent (client error)")]
        case.typed += [Run(0.0, "not sent (client error)") for _ in range(TYPED - typed)]
        for burst in case.bursts[pressed:]:
            burst.append(Run(0.0, "not sent (client error)"))
        for _ in range(len(case.bursts) - joined):
            await barrier.wait()
    finally:
        await session.close()


def same_link(args: argparse.Namespace) -> bool:
    """``--same-link`` (``--same-text``; an older caller's namespace may name it ``same_text``)."""
    return bool(getattr(args, "same_link", getattr(args, "same_text", False)))


def class_texts(args: argparse.Namespace, students: int) -> list[list[str]]:
    """Each student's sentences: opening (the link's), typed, one per burst. With ``--same-link`` every
    student has the same list: the whole class opens the teacher's link and types the same sentences."""
    count = 1 + TYPED + args.repeats
    if same_link(args):
        return [student_sentences(args.seed, count)] * students
    return [student_sentences(args.seed * 1_000_003 + students * 1_000 + i, count) for i in range(students)]


def profile_prefix(case: Case) -> str:
    """Stem of a case's profile files in ``test-artifacts/``: ``bench-class-TARGET-STUDENTS``."""
    return f"bench-class-{profile_split.slug(case.target)}-{case.students}"


def start_profile(server: Server, case: Case, rate: int) -> PySpy | None:
    """py-spy on every Streamlit process of ``server``, sampling when this returns. Its ``-d`` is the
    case's time limit + 10 s, a safety net: :func:`finish_profile` stops it when the case ends. None
    when there is no process to record (printed; the report says so)."""
    pids = server.streamlit_pids()
    if not pids:
        print(f"[{case.target}] --profile: no Streamlit process to record (give --server-pid with --url)", flush=True)
        return None
    return PySpy(pids, LOGS, profile_prefix(case), duration_s=math.ceil(case.limits.case_s) + 10, rate=rate).start()


def finish_profile(spy: PySpy, case: Case) -> None:
    """Stop py-spy, split what it wrote, print the split and keep it next to the raw files."""
    case.recordings = spy.stop()
    for rec in case.recordings:
        if rec.problem:
            print(f"[{case.target}] --profile: {rec.label}: {rec.problem} (log {rec.log_path})", flush=True)
    written = [rec.path for rec in case.recordings if rec.problem is None]
    if not written:
        return
    case.split = profile_split.split(written)
    wall = max(rec.wall_s for rec in case.recordings if rec.problem is None)
    text = (
        f"{case.target}, {case.students} students: {len(written)} process(es) sampled for {wall:.1f} s; "
        f"{case.script_runs()} script runs (page opens and reruns)\n"
        + profile_split.report(case.split, case.script_runs(), spy.rate, wall)
    )
    (LOGS / f"{profile_prefix(case)}.txt").write_text(text + "\n", encoding="utf-8")
    print(text, flush=True)


async def run_case(server: Server, students: int, args: argparse.Namespace) -> Case:
    case = Case(
        server.target, students, args.repeats, Limits.of(args, students), bursts=[[] for _ in range(args.repeats)]
    )
    barrier = asyncio.Barrier(students)
    rngs = [random.Random(f"{args.seed}-{students}-{i}") for i in range(students)]
    texts = class_texts(args, students)
    spy = start_profile(server, case, args.rate) if args.profile else None  # waits until py-spy samples
    case.sampler = ProcSampler(server.pid).start()
    cpu_before = own_cpu_s()
    tasks = [asyncio.create_task(student(rngs[i], server.url, texts[i], barrier, case)) for i in range(students)]
    try:
        async with asyncio.timeout(case.limits.case_s):
            results = await asyncio.gather(*tasks, return_exceptions=True)
        case.client_errors += [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
    except TimeoutError:
        case.timed_out = True
        await asyncio.gather(*tasks, return_exceptions=True)  # cancelled by the timeout; let them close
    finally:
        case.sampler.stop()
        case.client_cpu_s = own_cpu_s() - cpu_before
        if spy is not None:
            finish_profile(spy, case)
    return case


async def warm_up(server: Server, args: argparse.Namespace) -> str:
    """One student per server process opens Explore once (the model loads), before any timing: on each worker's
    own port where the classroom's workers can be seen (through HAProxy, three students at once sometimes all
    landed on one worker, and the others loaded their model during the first timed class)."""
    ports = server.worker_ports()
    urls = [f"http://127.0.0.1:{port}" for port in ports] or [server.url]

    async def one(url: str) -> Run:
        session = Session(url, timeout_s=max(Limits.of(args, 1).rerun_s, 120))
        try:
            return await session.open({"text": WARM_UP_TEXT})
        finally:
            await session.close()

    runs = await asyncio.gather(*(one(url) for url in urls))
    failed = [run.failure for run in runs if run.failure]
    text = (
        f"{len(runs)} student{'s' if len(runs) > 1 else ''} opened Explore once before timing (model load)"
        + (", one on each worker's own port" if ports else "")
        + f", slowest {max(run.seconds for run in runs):.1f} s"
    )
    return text + (f"; failed: {', '.join(failed)}" if failed else "")


async def run_target(server: Server, args: argparse.Namespace, warm_ups: list[str]) -> list[Case]:
    # Each student GETs the page in a thread before its websocket (st_client): asyncio's default pool has
    # cpu_count + 4 threads, which would queue a class of 100 at the door. asyncio.run shuts it down.
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=max(args.students) + 4, thread_name_prefix="student-get")
    )
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
    return (
        f"{len(ok)} reruns ok, median {_s(_median(ok))} s, "
        f"p95 {_s(_p95(ok))} s, burst slowest {_bursts(case)} s, "
        f"failures {_failures(case)}, server CPU " + ("not sampled" if cpu is None else f"{cpu:.0f}% of one core")
    )


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
    lines += [
        "",
        "Per server process (peak resident memory and CPU over the case):",
        "",
        "| target | students | process | peak RSS (MB) | CPU (% of one core) |",
        "|---|---:|---|---:|---:|",
    ]
    for c in cases:
        for stats in sorted(c.sampler.procs.values(), key=lambda p: p.label):
            lines.append(
                f"| {c.target} | {c.students} | {stats.label} | {_mb(stats.rss_peak_bytes)} "
                f"| {100 * stats.cpu_s / (c.sampler.wall_s or 1.0):.0f} |"
            )
    return lines


def _limits(cases: list[Case]) -> str:
    """The time limits, once when every class had the same, else per class size."""

    def text(limits: Limits) -> str:
        return (
            f"students arrive within {limits.arrival_s:.0f} s; per rerun timeout {limits.rerun_s:.0f} s, "
            f"per case {limits.case_s:.0f} s"
        )

    by_size = {c.students: c.limits for c in cases}
    if len(set(by_size.values())) == 1:
        once = text(next(iter(by_size.values())))
        return once[0].upper() + once[1:] + "."
    return "Limits: " + "; ".join(f"{n} students: {text(lim)}" for n, lim in sorted(by_size.items())) + "."


def _streamlit_cpu_s(case: Case) -> float:
    """CPU seconds of the case's Streamlit processes from /proc (all their threads; not HAProxy or the shell)."""
    return sum(p.cpu_s for p in case.sampler.procs.values() if p.label.startswith("streamlit")) if case.sampler else 0.0


def profile_table(cases: list[Case], rate: int) -> list[str]:
    """``--profile``: the script threads' CPU per script run by bucket, one row per class."""
    buckets = profile_split.CPU_BUCKETS
    lines = [
        "### Where a rerun's time goes (py-spy, server script threads)",
        "",
        f"py-spy (`py-spy record -r {rate} -f raw`, blocking: each process is stopped for each sample) recorded "
        "every Streamlit server process while the class ran. The samples of script threads (stacks through "
        "`ScriptRunner._run_script`) go to the first bucket whose rule matches anywhere in the stack: "
        "imports (`_find_and_load`); forward pass (`engine.trace`, `engine/model.py`, `engine/families/`, "
        "`engine/capture/`, torch, transformers); attention maps (`engine/analysis/`, `engine/traces/`); "
        "serialisation (`st.plotly_chart`'s `to_json`, then `json`, protobuf); figure building (plotly, "
        "`app/ui/` heatmap, theme, head_views, map_data, and charts but its `show_chart`; `app/figures.py`); the rest "
        f"is Streamlit and page code. A cell is CPU milliseconds per script run (a sample stands for 1/{rate} s; "
        "script runs: the page opens and reruns the students timed) and, in brackets, its share of the script "
        "threads' samples. The sampled milliseconds are an estimate: py-spy leaves out most samples of a waiting "
        "thread (the waits it still catches are left out here), but counts part of the time a thread waits for "
        "the GIL as running, so when many script threads run at once (a large class's bursts) they run high, "
        "above what the processes used; with few, short runs they ran ~20% low here. Compare them with the "
        "Streamlit processes' CPU from /proc (every thread, the idle server's ~0.5% of a core included) and "
        "read the shares. Other threads (the event loop's websocket "
        "writes, …) are not split. Profiling slows the server a little: compare latencies with an unprofiled run. "
        "Per case, the raw files and the top 15 functions of the page code and figure buckets are in "
        "`test-artifacts/bench-class-TARGET-STUDENTS*` (`python -m bench.profile_split FILE… --reruns N` "
        "prints them again).",
        "",
        "| target | students | script runs | processes, sampled (s) | Streamlit processes, /proc (ms per run) "
        "| script threads, sampled (ms per run) | " + " | ".join(buckets) + " | other threads, sampled (ms per run) |",
        "|---|---:|---:|---|---:|---:|" + "---:|" * len(buckets) + "---:|",
    ]
    notes = []
    for c in cases:
        runs = c.script_runs()
        notes += [
            f"{c.target}, {c.students} students, {rec.label}: not recorded: {rec.problem}"
            for rec in c.recordings
            if rec.problem
        ]
        notes += [
            f"{c.target}, {c.students} students, {rec.label}: py-spy fell behind by up to {rec.behind_s:.1f} s "
            "(its milliseconds are low by about that much)"
            for rec in c.recordings
            if rec.behind_s >= 0.5
        ]
        notes += [
            f"{c.target}, {c.students} students, {rec.label}: py-spy could not read {rec.errors} of "
            f"{rec.samples + rec.errors} samples"
            for rec in c.recordings
            if rec.problem is None and rec.errors
        ]
        if c.split is None or not runs:
            why = "no Streamlit process found (with --url give --server-pid)" if not c.recordings else "see below"
            lines.append(f"| {c.target} | {c.students} | {runs} | not recorded: {why} |" + " |" * (len(buckets) + 3))
            continue
        ok = [rec for rec in c.recordings if rec.problem is None]
        ms = 1000 / rate / runs
        cells = [
            f"{c.split.samples[name] * ms:.1f} ({100 * c.split.samples[name] / (c.split.cpu or 1):.0f}%)"
            for name in buckets
        ]
        lines.append(
            f"| {c.target} | {c.students} | {runs} | {len(ok)}, {max(r.wall_s for r in ok):.0f} "
            f"| {1000 * _streamlit_cpu_s(c) / runs:.1f} | {c.split.cpu * ms:.1f} | "
            + " | ".join(cells)
            + f" | {c.split.other_threads * ms:.1f} |"
        )
    return lines + ([""] + [f"Profile: {note}." for note in notes] if notes else [])


def section(cases: list[Case], args: argparse.Namespace, context: dict[str, str]) -> str:
    lines = [
        SECTION,
        "",
        "N simulated students on Explore at once, speaking Streamlit's websocket protocol (no browsers: twenty "
        "Chromium tabs would saturate 2 cores before the server). Each opens the page with its own sentence "
        f"in the URL, types {TYPED} new sentences 1–3 s apart, then all press Enter within the same second "
        f"({args.repeats} burst{'s' if args.repeats != 1 else ''}). A rerun is timed from the BackMsg sent to "
        "`script_finished`; median and p95 are over the typed and burst reruns that succeeded. "
        + (
            f"Class: {SAME_LINK}: every student opens the teacher's link (the same sentence in the URL) and types "
            "the same sentences (`--same-link`), so the server's cache answers after the first. "
            if same_link(args)
            else "Sentences are 20–60 MiniLM tokens and differ per student (seeded), so the cache cannot answer. "
        )
        + _limits(cases)
        + " Server CPU is user + "
        "sys time of every server process (read from /proc every 0.5 s) over the case's wall time, as % of one "
        "core; the load generator runs on the same machine and its own CPU is shown next to it.",
        "",
        *tables(cases),
        *([""] + profile_table(cases, args.rate) if getattr(args, "profile", False) else []),
        "",
        "Warm-up (not timed): " + "; ".join(context["warm_ups"]) + ".",
        *([""] + [f"Not measured: {note}." for note in context["skipped"]] if context["skipped"] else []),
        "",
        *footer(context),
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--target",
        default="streamlit",
        help=f"comma-separated: {', '.join(TARGETS)} (started here, stopped at the end)",
    )
    parser.add_argument("--url", help="use a server that is already running (e.g. http://127.0.0.1:8501)")
    parser.add_argument("--server-pid", type=int, help="with --url: sample this process and its children")
    parser.add_argument("--students", default="1,10,30", help="class sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="synchronized bursts per class")
    parser.add_argument(
        "--same-link",
        "--same-text",
        dest="same_link",
        action="store_true",
        help=f"{SAME_LINK}: every student opens the teacher's link and types the same sentences",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--arrival", type=float, help="students arrive within this many seconds (default: max(2, students / 10))"
    )
    parser.add_argument("--rerun-timeout", type=float, help="seconds per rerun (default: max(60, 0.6 × students))")
    parser.add_argument(
        "--case-timeout", type=float, help="seconds per class, a hard limit (default: max(300, 4 × students))"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="record each Streamlit server process with py-spy during each class; split its time",
    )
    parser.add_argument("--rate", type=int, default=profile_split.RATE, help="with --profile: py-spy samples/s")
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also run the class against `streamlit run` of git revision REV (a temporary worktree)",
    )
    args = parser.parse_args(argv)
    args.students = [int(s) for s in args.students.split(",") if s.strip()]
    args.targets = [t.strip() for t in args.target.split(",") if t.strip()]
    if args.repeats < 1 or not args.students or min(args.students) < 1:
        parser.error("--students and --repeats must be positive")
    if args.profile and shutil.which("py-spy") is None:
        parser.error("--profile needs py-spy on PATH (pip install py-spy)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    self_check.check("sampler")
    context = {"pace_before": pace(), **run_context("bench_class", argv), "warm_ups": [], "skipped": []}
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
    context["pace_after"] = pace()
    text = section(cases, args, context)
    if same_link(args):  # a subsection of its own under the plain class's section, which stays as it is
        text = text.replace(SECTION, same_link_header(args), 1)
        write_subsection(Path(args.out), text, SECTION)
    else:
        write_section(Path(args.out), text)
    print(text)


def same_link_header(args: argparse.Namespace) -> str:
    """The ``### `` header of a ``--same-link`` class, e.g. "… (100 students, one sentence)"."""
    sizes = ", ".join(str(n) for n in args.students)
    return f"### The whole class on the teacher's link ({sizes} students, one sentence)"


if __name__ == "__main__":
    main()
