"""What one Explore rerun costs the server, next to the forward pass it shows (a quiet server and a busy one).

The class benchmark measures what students wait; this one measures what a rerun *costs*: the server
process's CPU seconds (user + sys from ``/proc/PID/stat``, every thread, the idle rate subtracted) for
one rerun, against the CPU seconds of the forward pass the rerun draws (``engine.trace`` + one head's
pattern on the same sentence, MiniLM, one torch thread as the server runs it, measured in this
process). Two cases:

- **miss**: a student types a sentence nobody typed before (the server traces it and builds its maps
  and figures);
- **hit**: a second student sends the same sentences (the whole class on the teacher's link): the trace,
  the maps and the figures all come from the per-process caches.

Each case runs in two conditions, each against a forward pass measured in the same condition:

- **one at a time**: a rerun, then a pause of ``SETTLE_S`` (so the CPU read between two samples belongs to that
  rerun and its websocket traffic), as a quiet server sees one student; the forward pass is measured after the
  same pause. An idle core comes back slower: on the AMD EPYC a pass after 0.25 s asleep took 20–21 ms of CPU
  against 17–18 ms in a row, and 17–18 ms after 0.25 s of spinning instead of sleeping. The pass back to back,
  the benchmark's only reference before 2026-11-29, stays in a column beside it;
- **back to back**: the next rerun as soon as the last one finished, as a busy server (a class) sees them; the
  CPU is the process's over the whole case divided by its reruns, against the forward pass back to back (in the
  benchmark's process alone: the server's passes have the page's work between them, which this does not).

``--baseline REV`` measures a second server of git revision REV from a temporary worktree in the same run,
against the same forward passes.

Run from the repository root::

    python -m bench.bench_rerun                       # ~2 min
    python -m bench.bench_rerun --baseline 520ae35    # and the revision before the lecture-hall work
    python -m bench.bench_rerun --profile             # py-spy on the server per case: where a rerun's time goes
    python -m bench.bench_rerun --split               # thread CPU of each part of a rerun (each case), no sampling
    python -m bench.bench_rerun --sentences 40 --rounds 5 --baseline 520ae35   # five rounds, the servers taking turns

``--profile`` records the server with py-spy during each case only (after the students opened the page: no
start-up, imports or model load in it) and prints the script threads' split per rerun (``bench.profile_split``);
the raw files stay in ``test-artifacts/bench-rerun-CASE-*.raw``. py-spy stops the process for each sample, so a
profiled run's CPU figures are not the benchmark's: take those from a run without it.

``--split`` serves this revision with ``bench/split_server.py`` (``streamlit run`` with thread-CPU counters around
the forward pass, the attention maps, the figures and each script thread) and adds per case where the server's
CPU went per rerun: those parts, the rest of the script thread (the page and Streamlit's widgets), the event loop
(the main thread: every message of the run is serialised and sent there) and any other thread. No sampling:
each figure is CPU the kernel counted for that thread (``time.thread_time_ns``, ``/proc/PID/task/TID/stat``).
Around each forward pass it also counts, per pass, the pass thread's page faults, how often another thread took its
core and how long it waited for one, and the event loop's CPU meanwhile (a second table): what the server's pass
meets that the benchmark's own pass does not.

It replaces the section "One rerun against its forward pass" of docs/BENCHMARKS.md (``--out PATH``); a
``--split`` run writes its table as a subsection, which later runs without ``--split`` keep.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import profile_split, self_check
from bench.sentences import student_sentences
from bench.serve import (
    LOGS,
    ROOT,
    checkout,
    footer,
    load_average,
    pace,
    run_context,
    running_server,
    stat_cpu_s,
)
from bench.st_client import Session
from bench.trace_report import publish

SECTION = "## One rerun against its forward pass"
TEXT_LABEL = "Your text"
SETTLE_S = 0.25  # after script_finished: the server's last messages and clean-up are counted too
IDLE_S = 3.0
PROFILE_RATE = 250  # py-spy samples per second (a rerun is ~50 ms: 50/s would give a few samples each)
MAX_TOKENS = 128  # Explore's default token limit


def cpu_s(pid: int) -> float:
    """User + sys CPU seconds of process ``pid`` so far (every thread, finished ones included); raises if it is gone."""
    return stat_cpu_s(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split())


def thread_cpu_s(pid: int, tid: int) -> float:
    """User + sys CPU seconds of thread ``tid`` of process ``pid``."""
    return stat_cpu_s(Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split())


CASES = ("miss", "hit", "miss, back to back", "hit, back to back")
QUIET = CASES[:2]  # one rerun at a time, a pause after each


@dataclass
class Forward:
    """One round's forward passes in the benchmark's process: CPU seconds per sentence (median of the repeats)."""

    paused: list[float]  # the one-at-a-time sentences, each pass after a pause as long as the server's (SETTLE_S)
    in_a_row: list[float]  # the same sentences, the repeats back to back (the reference before 2026-11-29)
    busy: list[float]  # the back-to-back case's sentences, back to back

    def of(self, case: str) -> list[float]:
        """The passes a case is compared with: the same condition as its reruns."""
        return self.paused if case in QUIET else self.busy

    def in_row_of(self, case: str) -> list[float]:
        """The passes back to back for a case's sentences."""
        return self.in_a_row if case in QUIET else self.busy


SPLIT_OUT = ROOT / "test-artifacts" / "bench-rerun-split.json"
SPLIT_PARTS = ("forward pass", "attention maps", "figures")


def read_split(pid: int) -> tuple[dict[str, float], dict[str, int]]:
    """Ask the split server (``bench/split_server.py``) for its counters: ``{label: CPU seconds}``, and its totals
    of what happened around the forward passes (``split_server._INSIDE``)."""
    SPLIT_OUT.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not SPLIT_OUT.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the split server wrote no counters (is it bench.split_server?)")
        time.sleep(0.05)
    data = json.loads(SPLIT_OUT.read_text())
    return {label: ns / 1e9 for label, (ns, _calls) in data["cpu"].items()}, data.get("inside", {})


@dataclass
class Costs:
    """What one server spent: CPU seconds and wall seconds per rerun, per case."""

    label: str
    cpu: dict[str, list[float]] = field(default_factory=lambda: {case: [] for case in CASES})
    wall: dict[str, list[float]] = field(default_factory=lambda: {case: [] for case in CASES})  # one per rerun done
    failures: int = 0
    split: dict[str, dict[str, float]] = field(default_factory=dict)  # case -> part -> ms per rerun (--split)
    inside: dict[str, dict[str, float]] = field(default_factory=dict)  # case -> around each pass (--split, inside_pass)


Round = tuple[list[Costs], Forward]  # a round: each server's costs, and the forward passes of its sentences


async def measure_server(
    url: str,
    pid: int,
    sentences: list[str],
    label: str,
    profile: bool = False,
    split: bool = False,
    busy_sentences: list[str] | None = None,
) -> Costs:
    """Open Explore twice (two students); student 1 types every sentence (misses), student 2 the same (hits), one
    rerun at a time; then the same with ``busy_sentences`` back to back (:func:`back_to_back`).
    ``profile``: py-spy records the server during each one-at-a-time case (:func:`profiled`); ``split``: the server
    is the split server, whose counters give where those cases' CPU went (:func:`split_case`)."""
    costs = Costs(label)
    students = [Session(url, timeout_s=120), Session(url, timeout_s=120)]
    try:
        boxes = []
        for session in students:
            opened = await session.open({"text": "The teacher opens the page."})
            box = session.widget_id("text_area", TEXT_LABEL)
            if opened.failure or box is None:
                raise RuntimeError(f"{label}: Explore did not open ({opened.failure or 'no text area'})")
            boxes.append(box)
        await asyncio.sleep(1.0)
        before, loop_before, start = cpu_s(pid), thread_cpu_s(pid, pid), time.perf_counter()
        await asyncio.sleep(IDLE_S)
        idle_rate = (cpu_s(pid) - before) / (time.perf_counter() - start)
        loop_idle_rate = (thread_cpu_s(pid, pid) - loop_before) / (time.perf_counter() - start)
        for case, session, box in zip(QUIET, students, boxes):
            spy = profile_split.PySpy(
                {pid: "server"}, LOGS, f"bench-rerun-{case}", 60 + 5 * len(sentences), rate=PROFILE_RATE
            )
            if profile:
                spy.start()
            window = await SplitWindow.open(pid, idle_rate, loop_idle_rate) if split else None
            for text in sentences:
                before, start = cpu_s(pid), time.perf_counter()
                run = await session.rerun({box: text})
                await asyncio.sleep(SETTLE_S)
                elapsed = time.perf_counter() - start
                if run.failure:
                    costs.failures += 1
                    continue
                costs.cpu[case].append(max(0.0, cpu_s(pid) - before - idle_rate * elapsed))
                costs.wall[case].append(run.seconds)
            if profile:
                profiled(spy, f"{label}, {case}", len(sentences))
            if window is not None:
                costs.split[case], costs.inside[case] = window.close(len(sentences))
        for case, session, box in zip(CASES[2:], students, boxes):
            if busy_sentences:
                window = await SplitWindow.open(pid, idle_rate, loop_idle_rate) if split else None
                await back_to_back(costs, case, session, box, busy_sentences, pid, idle_rate, window)
    finally:
        for session in students:
            await session.close()
    return costs


async def back_to_back(
    costs: Costs,
    case: str,
    session: Session,
    box: str,
    sentences: list[str],
    pid: int,
    idle_rate: float,
    window: SplitWindow | None = None,
) -> None:
    """Send ``sentences`` one after another with no pause, as a busy server gets reruns; the case's CPU per rerun is
    the process's CPU from the first BackMsg until ``SETTLE_S`` after the last run, the idle rate subtracted,
    divided by the reruns (one value: a rerun's share; single reruns overlap the next one's start).
    ``window`` (the server is the split server, its counters just zeroed): where the case's CPU went, as for the
    one-at-a-time cases."""
    done = 0
    before, start = cpu_s(pid), time.perf_counter()
    for text in sentences:
        run = await session.rerun({box: text})
        if run.failure:
            costs.failures += 1
            continue
        done += 1
        costs.wall[case].append(run.seconds)
    await asyncio.sleep(SETTLE_S)
    elapsed = time.perf_counter() - start
    if done:
        costs.cpu[case].append(max(0.0, cpu_s(pid) - before - idle_rate * elapsed) / done)
        if window is not None:
            costs.split[case], costs.inside[case] = window.close(done)


@dataclass
class SplitWindow:
    """One case on the split server: its counters zeroed when the case starts (:meth:`open`), read when it ends
    (:meth:`close`) with the process's and the event loop's CPU over the same time, the idle rates subtracted."""

    pid: int
    idle_rate: float
    loop_idle_rate: float
    start: float
    cpu: float
    loop: float

    @classmethod
    async def open(cls, pid: int, idle_rate: float, loop_idle_rate: float) -> SplitWindow:
        os.kill(pid, signal.SIGUSR2)  # the counters start from zero
        await asyncio.sleep(0.2)
        return cls(pid, idle_rate, loop_idle_rate, time.perf_counter(), cpu_s(pid), thread_cpu_s(pid, pid))

    def close(self, reruns: int) -> tuple[dict[str, float], dict[str, float]]:
        """:func:`split_case` of the window's ``reruns``, and :func:`inside_pass` of its forward passes."""
        elapsed = time.perf_counter() - self.start
        process = cpu_s(self.pid) - self.cpu - self.idle_rate * elapsed
        loop = thread_cpu_s(self.pid, self.pid) - self.loop - self.loop_idle_rate * elapsed
        counters, inside = read_split(self.pid)
        return split_case(counters, process, loop, reruns), inside_pass(inside)


def split_case(counters: dict[str, float], process: float, loop: float, reruns: int) -> dict[str, float]:
    """Milliseconds per rerun of each part: the counted parts, the rest of the script threads (the page and
    Streamlit's widgets), the event loop, and whatever else the process spent (other threads, ticks)."""
    per = 1000 / max(1, reruns)
    parts = {name: counters.get(name, 0.0) * per for name in SPLIT_PARTS}
    script = counters.get("script thread", 0.0) * per
    out = {**parts, "page and Streamlit (script thread)": script - sum(parts.values())}
    out["event loop (main thread)"] = loop * per
    out["other"] = process * per - script - loop * per
    out["server, all threads"] = process * per
    return out


INSIDE_COLUMNS = {
    "page_faults": "page faults",
    "preempted": "times another thread took its core",
    "waited_ms": "waiting for a core (ms)",
    "loop_ms": "the event loop's CPU meanwhile (ms)",
}


def inside_pass(inside: dict[str, int]) -> dict[str, float]:
    """Per forward pass (mean) of the split server's totals around its passes; empty when no pass ran (a hit)."""
    passes = inside.get("passes", 0)
    if not passes:
        return {}
    return {
        "page_faults": inside.get("page_faults", 0) / passes,
        "preempted": inside.get("preempted", 0) / passes,
        "waited_ms": inside.get("waited_ns", 0) / passes / 1e6,
        "loop_ms": inside.get("loop_ns", 0) / passes / 1e6,
    }


def inside_lines(rounds: list[Round]) -> list[str]:
    """The ``--split`` table of what happened around the server's forward passes, each miss case, each round."""
    rows = [
        (f"round {number}", case, costs.inside[case])
        for number, (results, _forward) in enumerate(rounds, start=1)
        for costs in results
        for case in CASES
        if costs.inside.get(case)
    ]
    if not rows:
        return []
    lines = [
        "",
        "Around each forward pass in the server (mean per pass; the pass's own thread, from `getrusage` and "
        "`/proc/.../schedstat`; the event loop is the main thread):",
        "",
        "| round | case | " + " | ".join(INSIDE_COLUMNS.values()) + " |",
        "|---|---|" + "---:|" * len(INSIDE_COLUMNS),
    ]
    for where, case, inside in rows:
        values = " | ".join(
            f"{inside[name]:.1f}" if name != "page_faults" else f"{inside[name]:.0f}" for name in INSIDE_COLUMNS
        )
        lines.append(f"| {where} | {case} | {values} |")
    return lines


def split_lines(rounds: list[Round]) -> list[str]:
    """The ``--split`` subsection: where the server's CPU went per rerun, each case, each round."""
    rows = [
        (f"round {number}", case, costs.split[case], statistics.median(forward.of(case)))
        for number, (results, forward) in enumerate(rounds, start=1)
        for costs in results
        for case in CASES
        if case in costs.split
    ]
    if not rows:
        return []
    names = list(rows[0][2])
    lines = [
        "",
        "### Where the server's CPU went per rerun (`--split`, thread CPU, no sampling)",
        "",
        "The server is `bench/split_server.py` (`streamlit run` of this revision with thread-CPU counters around the "
        "forward pass, the attention-map and figure caches, and each script thread); the event loop is the main "
        "thread's CPU from `/proc`, its idle rate subtracted. Milliseconds per rerun (mean); the forward pass in the "
        "benchmark's own process beside them, in the case's condition (after the same pause as the server's reruns, "
        "or back to back). **Server ÷ its own "
        "pass**: the server's CPU per rerun over the forward pass that ran in those reruns (the pass the rerun shows, "
        "as the server ran it: whatever slows the server slows both); against the benchmark's pass in the table above. "
        "**Other**: the process's CPU less the script threads' and the event loop's (other threads, the kernel's "
        "ticks); the process's and the event loop's idle rates are subtracted apart, so a case whose other threads "
        "did almost nothing can come out a little below zero.",
        "",
        "| round | case | "
        + " | ".join(names)
        + " | forward pass, same condition, benchmark process | server ÷ its own pass |",
        "|---|---|" + "---:|" * (len(names) + 2),
    ]
    own: dict[str, list[float]] = {}
    for where, case, parts, forward in rows:
        values = " | ".join(f"{parts[name]:.1f}" for name in names)
        ratio_own = own_ratio(parts)
        if ratio_own is not None and case.startswith("miss"):
            own.setdefault(case, []).append(ratio_own)
        shown = "–" if ratio_own is None else f"{ratio_own:.2f}×"
        lines.append(f"| {where} | {case} | {values} | {1000 * forward:.1f} | {shown} |")
    for case, ratios in own.items():
        if len(ratios) > 1:
            where = "A miss" if case == "miss" else "A miss back to back"
            lines += ["", f"{where} over its own pass, each round: {_listed(ratios)}."]
    return lines + inside_lines(rounds)


def own_ratio(parts: dict[str, float]) -> float | None:
    """The server's CPU per rerun over the forward pass inside it (``--split``), or None (no pass: a hit)."""
    forward = parts.get("forward pass", 0.0)
    return parts["server, all threads"] / forward if forward > 0 else None


def profiled(spy: profile_split.PySpy, title: str, reruns: int) -> None:
    """Stop ``spy`` and print where the script threads' samples went, per rerun."""
    recordings = spy.stop()
    written = [rec.path for rec in recordings if rec.problem is None]
    for rec in recordings:
        if rec.problem:
            print(f"--profile ({title}): {rec.problem} (log {rec.log_path})", flush=True)
    if written:
        wall = max(rec.wall_s for rec in recordings if rec.problem is None)
        report = profile_split.report(profile_split.split(written), reruns, spy.rate, wall)
        print(f"### py-spy, {title}: {reruns} reruns\n{report}", flush=True)


def forward_passes(sentences: list[str], busy_sentences: list[str], repeats: int) -> Forward:
    """CPU seconds of ``engine.trace`` + one head's pattern per sentence, one torch thread as the server runs it
    (the median of ``repeats``): ``sentences`` after a pause of ``SETTLE_S`` each (the sentences in turn, so no
    pass follows its own sentence) and back to back, ``busy_sentences`` back to back."""
    import engine

    engine.set_threads(1)
    engine.limit_numpy_threads(1)  # as the server does (app.runtime.models.bound_threads)
    model = engine.load("minilm")
    engine.trace(model, "A warm-up sentence.", max_tokens=MAX_TOKENS).pattern(0, 0)

    def one(text: str) -> float:
        start = time.process_time()
        engine.trace(model, text, causal=False, max_tokens=MAX_TOKENS).pattern(0, 0)
        return time.process_time() - start

    def in_a_row(texts: list[str]) -> list[float]:
        return [statistics.median(one(text) for _ in range(repeats)) for text in texts]

    paused: list[list[float]] = [[] for _ in sentences]
    for _ in range(repeats):
        for runs, text in zip(paused, sentences):
            time.sleep(SETTLE_S)
            runs.append(one(text))
    return Forward([statistics.median(runs) for runs in paused], in_a_row(sentences), in_a_row(busy_sentences))


def _ms(values: list[float], mean: bool = False) -> str:
    if not values:
        return "–"
    return f"{1000 * (statistics.fmean(values) if mean else statistics.median(values)):.1f}"


def ratio(costs: Costs, case: str, forward: list[float]) -> float | None:
    """Server CPU per rerun (mean) over the forward pass (median) of the same sentences, or None."""
    cpu = costs.cpu[case]
    return statistics.fmean(cpu) / statistics.median(forward) if cpu and forward else None


def _ratios(rounds: list[Round], index: int, case: str, in_a_row: bool = False) -> list[float]:
    return [
        r
        for results, forward in rounds
        if (r := ratio(results[index], case, forward.in_row_of(case) if in_a_row else forward.of(case))) is not None
    ]


def _listed(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}×" for v in values) + f"; median **{statistics.median(values):.2f}×**"


def round_summary(rounds: list[Round]) -> list[str]:
    """One line per server and case: its ratio in each round and their median (nothing for a single round); a
    one-at-a-time case adds its ratio against the pass back to back."""
    if len(rounds) < 2:
        return []
    lines = []
    for index, costs in enumerate(rounds[0][0]):
        for case in CASES:
            values = _ratios(rounds, index, case)
            if not values:
                continue
            line = f"- {costs.label}, {case}{' (one at a time)' if case in QUIET else ''}: {_listed(values)}"
            if case in QUIET:
                line += f" (against the pass back to back: {_listed(_ratios(rounds, index, case, in_a_row=True))})"
            lines.append(line)
    return [
        "",
        f"Ratio in each of the {len(rounds)} rounds (new sentences each round, the servers taking turns):",
        *lines,
    ]


def section(rounds: list[Round], args: argparse.Namespace, context: dict) -> str:
    n_sentences = sum(len(forward.paused) for _, forward in rounds)
    several = len(rounds) > 1
    lines = [
        SECTION,
        "",
        "What one Explore rerun costs the server, against the forward pass it shows. **Server CPU** = user + sys "
        "seconds of the Streamlit process (every thread), the idle rate subtracted; **forward pass** = `engine.trace` "
        "+ one head's pattern on the same sentences in the benchmark's own process (MiniLM, one torch thread, as the "
        f"server runs it; median of {args.repeats} per sentence). **miss** = a sentence the server has not seen "
        f"({n_sentences} sentences of 14–38 words in each condition), **hit** = a second student sends the same "
        "sentences (a class on the teacher's link: trace, maps and figures cached). Two conditions, each against "
        "the forward pass in the same condition: **one at a time** (a quiet server: from the rerun's BackMsg until "
        f"{SETTLE_S:.2f} s after its `script_finished`, then the next; the forward pass after a pause as long) and "
        "**back to back** (a busy server: the next rerun as soon as the last finished; the case's CPU divided by its "
        "reruns; the forward pass back to back). A core that idled comes back slower, the pass and the page alike: "
        "the one-at-a-time rows also give the ratio against the pass back to back, the comparison this benchmark "
        "made before 2026-11-29 (an idle rerun against a warm pass). Server CPU is the **mean** per rerun (the "
        "kernel counts CPU in 10 ms ticks: a median of single reruns would round), the forward pass and the wall "
        "time are medians."
        + (
            f" In {len(rounds)} rounds of {args.sentences} new sentences a condition; in a round every server is "
            "measured in turn, then the forward passes of that round's sentences (a machine whose speed drifts moves "
            "them together)."
            if several
            else ""
        ),
        "",
        "| server | case | reruns | server CPU per rerun, mean (ms) | forward pass, same condition, median (ms) "
        "| CPU ÷ forward | forward pass back to back, median (ms) | CPU ÷ that | rerun wall, median (ms) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for number, (results, forward) in enumerate(rounds, start=1):
        for costs in results:
            for case in CASES:
                cpu = costs.cpu[case]
                if not cpu and case not in QUIET:
                    continue
                same, in_row = ratio(costs, case, forward.of(case)), ratio(costs, case, forward.in_row_of(case))
                label = f"{costs.label}, round {number}" if several else costs.label
                lines.append(
                    f"| {label} | {case} | {len(costs.wall[case])} | {_ms(cpu, mean=True)} | "
                    f"{_ms(forward.of(case))} | {'–' if same is None else f'{same:.2f}×'} | "
                    f"{_ms(forward.in_row_of(case))} | {'–' if in_row is None else f'{in_row:.2f}×'} | "
                    f"{_ms(costs.wall[case])} |"
                )
    lines += round_summary(rounds)
    failed = [f"{c.label}: {c.failures}" for results, _ in rounds for c in results if c.failures]
    lines += [
        "",
        "Failed reruns (not counted): " + ("; ".join(failed) if failed else "none") + ".",
        "",
        *footer(context),
    ]
    split = split_lines(rounds)
    if split:  # a subsection of its own after the run's footer: a later run without --split keeps it as it is
        split += ["", f"From the run measured {context['date']} (`{context['command']}`)."]
    return "\n".join(lines + split) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sentences", type=int, default=20, help="sentences per case")
    parser.add_argument("--repeats", type=int, default=3, help="forward passes per sentence (median)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--baseline", metavar="REV", help="also measure a server of git revision REV")
    parser.add_argument("--profile", action="store_true", help="py-spy on the server per case (slows it: see above)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of new sentences, the servers taking turns")
    parser.add_argument("--split", action="store_true", help="where each case's CPU goes, by thread CPU (see above)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.split:
        self_check.check("thread cpu", "page faults")
    sentences = student_sentences(args.seed, args.sentences)
    context = {"pace_before": pace(), **run_context("bench_rerun", argv)}
    rounds = []
    with contextlib.ExitStack() as stack:
        if args.split:
            os.environ["AP_BENCH_SPLIT_OUT"] = str(SPLIT_OUT)  # the split server writes its counters there
        target = "split" if args.split else "streamlit"
        servers = [(stack.enter_context(running_server(target, "bench-rerun.log")), "this revision")]
        if args.baseline:
            folder, sha = stack.enter_context(checkout(args.baseline))
            server = stack.enter_context(running_server("streamlit", "bench-rerun-baseline.log", root=folder))
            servers.append((server, f"baseline {sha}"))
        for number in range(max(1, args.rounds)):
            texts = sentences if number == 0 else student_sentences(args.seed + 1000 * number, args.sentences)
            busy = student_sentences(args.seed + 1000 * number + 500, args.sentences)
            results = [
                asyncio.run(
                    measure_server(server.url, server.pid, texts, label, args.profile, args.split and index == 0, busy)
                )
                for index, (server, label) in enumerate(servers)
            ]
            rounds.append((results, forward_passes(texts, busy, args.repeats)))
    context["load_after"] = load_average()
    context["pace_after"] = pace()
    publish(args.out, section(rounds, args, context))


if __name__ == "__main__":
    main()
