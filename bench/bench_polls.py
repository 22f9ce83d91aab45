"""A class answers a poll at once on the classroom launch: answer latency and answers lost (issue 21).

N simulated students (``bench/st_client.py``: Streamlit's websocket protocol, no browsers) open the join
link ``/?room=CODE`` (the default page, Explore, with the room's panel above it), arriving within
max(2, N / 10) s, each a browser of its own (its own HAProxy cookie, so they spread over the workers). When
all have opened it, the teacher's question is pushed (straight into the class store the server uses: the
teacher's page is not what is measured). Each student fires its page's ``run_every`` timers (as the
frontend does) until the panel shows the question (at most :data:`LOOKS` looks), picks an option (a
fragment rerun, as a click does), and then every student presses **Send my answer** within the same
second (a barrier). An answer's latency is the press's fragment rerun, from the BackMsg sent to its
``script_finished`` (the answer is written to the store inside it). Answers lost = presses sent − answers
the store holds for the question, counted in the store itself after the burst; members counted likewise.

Everything is on 127.0.0.1. The started launch gets a class store of its own (``AP_DATA_DIR`` in a
temporary folder); with ``--url`` (a loopback address only) the bench reads the store the same settings
name (``AP_DATABASE_URL`` or ``AP_DATA_DIR`` in its environment: give it the server's).

Run from the repository root (on a quiet machine: the numbers are the server's under load)::

    python -m bench.bench_polls                         # 100 students on scripts/classroom.sh
    python -m bench.bench_polls --students 10 --out /tmp/check.md   # a quick check

It replaces the section "A class answers a poll at once" of docs/BENCHMARKS.md (``--out PATH``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from streamlit.proto.WidgetStates_pb2 import WidgetState

from app.store import Ask
from bench import self_check
from bench.bench_class import _p95, _s  # the class benchmark's p95 and number format
from bench.serve import ROOT, ProcSampler, Server, footer, load_average, run_context, running_server
from bench.st_client import Run, Session
from bench.trace_report import publish

SECTION = "## A class answers a poll at once"
LOOKS = 10  # most timer rounds a student fires waiting for the question (the panel polls every 2 s)
JOINED = "you are in"  # the panel's caption once the student is in the room
IN = "Your answer is in"  # the panel's words after a sent answer
OPTIONS = ["the keys", "the values", "the queries", "the scores"]
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@dataclass
class Case:
    students: int
    code: str = ""
    opens: list[Run] = field(default_factory=list)
    answers: list[Run] = field(default_factory=list)  # the presses of "Send my answer"
    confirmed: int = 0  # presses whose rerun said the answer is in
    not_seen: int = 0  # students who never saw the question
    members: int = 0  # counted in the store
    stored: int = 0  # answers the store holds for the question
    client_errors: list[str] = field(default_factory=list)
    sampler: ProcSampler | None = None

    @property
    def lost(self) -> int:
        return len(self.answers) - self.stored


class Gate:
    """Every student arrives (or gives up) before anyone goes on: a barrier that a failed student cannot block."""

    def __init__(self, parties: int) -> None:
        self.left = parties
        self.opened = asyncio.Event()

    def arrive(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.opened.set()

    async def wait(self) -> None:
        self.arrive()
        await self.opened.wait()


async def _look_for_question(session: Session) -> str | None:
    """Fire the page's timers (as the frontend's do) until the panel shows the radio; its id, or None."""
    for _ in range(LOOKS):
        if radio := session.widget_id("radio", "Your answer"):
            return radio
        for fragment_id in list(session.auto_reruns):  # the panel's, and any other timer the page keeps
            await session.rerun({}, fragment_id=fragment_id, is_auto_rerun=True)
    return session.widget_id("radio", "Your answer")


async def student(
    i: int, url: str, case: Case, arrival_s: float, rerun_s: float, opened: Gate, pushed: asyncio.Event, picked: Gate
) -> None:
    session = Session(url, timeout_s=rerun_s)
    at_gate = [opened, picked]  # gates this student still owes an arrival
    try:
        await asyncio.sleep(arrival_s * i / max(case.students, 1))
        run = await session.open({"room": case.code})
        case.opens.append(run)
        if run.failure or not any(JOINED in t for t in run.texts):
            return
        at_gate.remove(opened)
        await opened.wait()
        await pushed.wait()
        radio = await _look_for_question(session)
        if radio is None:
            case.not_seen += 1
            return
        proto = next(w for k, w in session.widgets if k == "radio" and w.id == radio)
        # a radio sends the option as it shows it (its formatted label), as the frontend does
        choice = WidgetState(id=radio, string_value=proto.options[i % len(proto.options)])
        pick = await session.rerun({}, states=[choice], fragment_id=session.fragments.get(radio, ""))
        send = session.widget_id("button", "Send my answer")
        if pick.failure or send is None:
            return
        at_gate.remove(picked)
        await picked.wait()  # every student presses within the same second
        run = await session.press(send, values=[choice])
        case.answers.append(run)
        case.confirmed += any(IN in t for t in run.texts)
    finally:
        for gate in at_gate:
            gate.arrive()
        await session.close()


async def run_case(server: Server, store, students: int, args: argparse.Namespace) -> Case:
    case = Case(students)
    room, token = store.create_room("bench-polls-teacher")
    case.code = room.code
    arrival_s, rerun_s = max(2.0, students / 10), max(60.0, 0.6 * students)
    opened, picked, pushed = Gate(students), Gate(students), asyncio.Event()
    case.sampler = ProcSampler(server.pid).start() if server.pid else None
    tasks = [
        asyncio.create_task(student(i, server.url, case, arrival_s, rerun_s, opened, pushed, picked))
        for i in range(students)
    ]
    try:
        async with asyncio.timeout(max(300.0, 4 * students)):
            await opened.opened.wait()
            store.push_question(room.code, token, Ask("choice", "Which vector is compared with the query?", OPTIONS, 0))
            pushed.set()
            results = await asyncio.gather(*tasks, return_exceptions=True)
        case.client_errors += [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
    except TimeoutError:
        case.client_errors.append("the case's time limit cut it off")
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        if case.sampler:
            case.sampler.stop()
    case.members = store.member_count(room.code)
    current = store.current_question(room.code)
    case.stored = sum(store.distribution(current)) if current is not None else 0
    return case


def row(case: Case, target: str) -> str:
    ok = [r.seconds for r in case.answers if not r.failure]
    opens = [r.seconds for r in case.opens if not r.failure]
    failures = [r.failure for r in case.opens + case.answers if r.failure] + case.client_errors
    cpu = case.sampler.cpu_percent() if case.sampler else None
    return (
        f"| {target} | {case.students} | {case.members} | {len(case.answers)} | {case.confirmed} | {case.stored} | {case.lost} "
        f"| {_s(statistics.median(ok) if ok else None)} | {_s(_p95(ok))} | {_s(max(ok, default=None))} "
        f"| {_s(_p95(opens))} | {case.not_seen} | {len(failures)}{': ' + ', '.join(sorted(set(failures))) if failures else ''} "
        f"| {'–' if cpu is None else f'{cpu:.0f}'} |"
    )


def section(cases: list[Case], target: str, context: dict) -> str:
    lines = [
        SECTION,
        "",
        "N simulated students (Streamlit's websocket protocol, `bench/st_client.py`) open the join link "
        "`/?room=CODE` (Explore with the room's panel), arriving within max(2, N / 10) s, each with its own "
        "HAProxy cookie; then the teacher's question is pushed into the class store, each student's panel "
        "finds it on its next timer, the student picks an option, and all press **Send my answer** within the "
        "same second. Latency: the press's fragment rerun, BackMsg to `script_finished` (the answer is written "
        "inside it). Lost: presses sent minus the answers the store holds for the question afterwards. Server "
        "CPU: every process of the launch (workers, HAProxy), as % of one core over the case.",
        "",
        "| target | students | joined (store) | answers sent | confirmed on the page | in the store | lost | answer median (s) "
        "| answer p95 (s) | answer max (s) | open p95 (s) | never saw the question | failures | server CPU (%) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
        *[row(c, target) for c in cases],
        "",
        *footer(context),
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--students", default="100", help="class sizes, comma-separated (default 100)")
    parser.add_argument(
        "--url",
        help="a running launch on this machine (http://127.0.0.1:PORT); the bench reads "
        "the store named by AP_DATABASE_URL / AP_DATA_DIR in its environment",
    )
    parser.add_argument("--server-pid", type=int, help="with --url: sample this process and its children")
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    args.students = [int(s) for s in args.students.split(",") if s.strip()]
    if not args.students or min(args.students) < 1 or max(args.students) > 1000:
        parser.error("--students: class sizes from 1 to 1000")
    if args.url and urllib.parse.urlparse(args.url).hostname not in LOOPBACK:
        parser.error("--url must be a loopback address (127.0.0.1): this bench never loads another machine")
    return args


async def _run(server: Server, store, args: argparse.Namespace) -> list[Case]:
    # each student GETs the page in a thread first (st_client): enough threads for the whole class at the door
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=max(args.students) + 4))
    cases = []
    for students in args.students:
        case = await run_case(server, store, students, args)
        print(f"{students} students: {row(case, server.target)}", flush=True)
        cases.append(case)
    return cases


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    self_check.check("sampler")
    context = run_context("bench_polls", argv)
    from app.store import open_store, settings

    if args.url:
        server = Server(args.url.rstrip("/"), "url", args.server_pid)
        cases = asyncio.run(_run(server, open_store(*settings()), args))
    else:
        with tempfile.TemporaryDirectory(prefix="bench-polls-") as data:
            os.environ.pop("AP_DATABASE_URL", None)
            os.environ["AP_DATA_DIR"] = data  # the launch's workers inherit it: a class store of its own
            with running_server("classroom", "bench-polls-classroom.log") as server:
                cases = asyncio.run(_run(server, open_store(None, data), args))
    context["load_after"] = load_average()
    publish(args.out, section(cases, "url" if args.url else "classroom", context))


if __name__ == "__main__":
    main()
