"""Long work next to a class: does a student who only types stay quick while others train, fine-tune and write?

The issue's bar: "With one Train live job running, and with five students fine-tuning or writing at once,
another student's rerun p95 ≤ 1.5× its value without them; server memory back within 10% of its level
afterwards."

One server (``--target streamlit``, the app as the README starts it, or ``classroom``), four cases in turn.
In each an *observer* student opens Explore (MiniLM, its own seeded sentence in the URL) and types a new
sentence (``bench/sentences.py``) ``--pause`` s after each rerun ends, ``--reruns`` times; every rerun is
timed from the BackMsg to ``script_finished`` (``bench/st_client.py``). Meanwhile:

1. quiet: nothing else.
2. train: one student opens Train live (default settings) and presses Start; the observer starts typing
   once that student's page shows the job training.
3. finetune ×5: five students open Pretraining objectives on the fine-tuning tab
   (``pretraining_tab=finetune``) and press Fine-tune at the same moment.
4. write ×5: five students open Explore on tiny-gpt-stories (``--write-model``) with a long prompt
   (``--prompt-chars`` characters of generated stories, different per student) on the Write more tab
   (``explore_tab=write``, token limit ``--write-max-tokens``) and submit the form at the same moment,
   asking for 128 new tokens (the form's maximum). tiny-gpt-stories has 96 positions: the prompt is cut
   to the token limit (default 48) and prompt + new tokens fit in 96; it also writes its end-of-text
   token after a few words, so its jobs take ~0.1 s. ``--write-model tiny-random-gpt2`` (16,384
   positions, random weights, key/value cache) reads the whole prompt and writes all 128 tokens.

Every student's page follows its job as a browser does: its ``st.fragment(run_every=…)`` timer fires
(``Session.auto_rerun``) until the page stops polling, and the page's words say how the job ended
(the accuracy after fine-tuning, "The model wrote N tokens", "Done: N steps"). Resident memory of the
server's processes (summed, from /proc) is read before the case, sampled every 0.5 s during it (peak), and
read again ``--settle`` s after the last job ended (the students still connected); then they leave.
"After" includes what the server keeps on purpose: its trace cache holds each page's and each writer's trace.

Run from the repository root::

    python -m bench.bench_jobs                      # ~3-4 min on 2 cores
    python -m bench.bench_jobs --target classroom   # behind scripts/classroom.sh

It replaces the section "Long work next to a class" of docs/BENCHMARKS.md (``--out PATH``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import self_check
from bench.bench_class import _median, _p95, _s
from bench.sentences import student_sentences
from bench.serve import (
    PAGE_BYTES,
    ROOT,
    TARGETS,
    ProcSampler,
    Server,
    _stat,
    descendants,
    footer,
    load_average,
    run_context,
    running_server,
)
from bench.st_client import Run, Session, value_state
from bench.trace_report import write_section

SECTION = "## Long work next to a class"
AFTER = "## A class on one server"
TEXT_LABEL = "Your text"
CASES = ("quiet", "train", "finetune", "write")
TITLES = {
    "quiet": "quiet (observer alone)",
    "train": "Train live ×1",
    "finetune": "fine-tune ×5",
    "write": "Write more ×5",
}
STUDENTS = {"quiet": 0, "train": 1, "finetune": 5, "write": 5}
WRITE_MODELS = {"tiny-gpt-stories": 96, "tiny-random-gpt2": 16_384}  # decoder -> its positions
NEW_TOKENS = 128  # the Write more form's maximum (engine.generation.MAX_NEW_TOKENS)
#: the button each kind of student presses, and the words on its page that say the job is done
BUTTONS = {"train": "Start", "finetune": "Fine-tune", "write": "Write more"}
DONE = {"train": "Status: Done", "finetune": "Accuracy after", "write": "The model wrote"}
RUNNING = {"train": "Status: Training on"}  # the train case waits for this before the observer types
BAR_P95, BAR_MEMORY = 1.5, 0.10  # the bar


KEPT = ("st_cache_data", "st_session_state")  # Streamlit's own counts, next to the app's playground_cache_bytes


def kept_now(url: str) -> int | None:
    """Bytes the server says it keeps on purpose (``/_stcore/metrics``): the app's trace, map and figure
    caches (``playground_cache_bytes``, live) and Streamlit's ``st.cache_data`` and session state
    (``cache_memory_bytes``, refreshed every 5 s); None when it cannot say."""
    import urllib.request

    try:
        with urllib.request.urlopen(url.rstrip("/") + "/_stcore/metrics", timeout=10) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    total = 0
    for line in text.splitlines():
        if line.startswith("playground_cache_bytes{") or (
            line.startswith("cache_memory_bytes{") and any(f'cache_type="{kind}"' in line for kind in KEPT)
        ):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def rss_now(root: int | None) -> int:
    """Resident bytes of ``root`` and every process below it, now (0 when unknown)."""
    total = 0
    for pid in descendants(root) if root else []:
        fields = _stat(pid)
        if fields:
            total += int(fields[21]) * PAGE_BYTES
    return total


@dataclass
class TotalSampler(ProcSampler):
    """:class:`ProcSampler` that also keeps the peak of the processes' summed resident memory."""

    total_peak: int = 0

    def _sample(self) -> None:
        super()._sample()
        self.total_peak = max(self.total_peak, rss_now(self.root))


# --- the students ---------------------------------------------------------------------------------------------


@dataclass
class Student:
    """One student with a long job: opens its page, presses the button, follows the job like a browser."""

    kind: str  # train | finetune | write
    name: str
    url: str
    page: str  # URL path ("" = Explore)
    query: dict[str, str]
    timeout_s: float
    session: Session | None = None
    opened: Run | None = None
    pressed: Run | None = None
    pressed_at: float | None = None  # monotonic, when the press was sent
    running_at: float | None = None  # when its page first showed the job running (not queued)
    ended_at: float | None = None  # when its page stopped polling (or the deadline)
    outcome: str = "not started"
    detail: str = ""
    polls: int = 0
    poll_seconds: list[float] = field(default_factory=list)  # each poll's rerun, BackMsg to script_finished
    poll_failures: list[str] = field(default_factory=list)
    running: asyncio.Event = field(default_factory=asyncio.Event)

    async def open(self) -> None:
        self.session = Session(self.url, timeout_s=self.timeout_s)
        self.opened = await self.session.open(self.query, page_name=self.page)
        if self.opened.failure:
            self.outcome = f"page did not open: {self.opened.failure}"

    def _button(self) -> tuple[str | None, list]:
        """The button's id and, for the Write more form, the form's token count."""
        button = self.session.widget_id("button", BUTTONS[self.kind])
        values = []
        if self.kind == "write":
            tokens = self.session.widget_id("number_input", "Tokens to write")
            widget = next((w for k, w in self.session.widgets if w.id == tokens), None)
            if widget is not None:
                values.append(value_state(widget, NEW_TOKENS))
        return button, values

    async def press(self) -> None:
        if self.opened is None or self.opened.failure:
            return
        button, values = self._button()
        if button is None:
            self.outcome = f'no "{BUTTONS[self.kind]}" button on the page'
            return
        self.pressed_at = time.monotonic()
        self.pressed = await self.session.press(button, values)
        if self.pressed.failure:
            self.outcome = f"press failed: {self.pressed.failure}"
            self.ended_at = time.monotonic()
            return
        self.outcome = "pressed"
        self._read(self.pressed)

    def _read(self, run: Run) -> None:
        """What a run of the page says about the job: running yet? ended, and how?"""
        texts = run.texts
        now = time.monotonic()
        queued = any(": queued, position" in t or t.startswith("Queued:") for t in texts)
        mark = RUNNING.get(self.kind)
        if (
            self.running_at is None
            and not queued
            and (any(t.startswith(mark) for t in texts) if mark else bool(self.session.auto_reruns))
        ):
            self.running_at = now
            self.running.set()
        if self.session.auto_reruns:  # the page still polls its job
            return
        self.ended_at = now
        self.running.set()
        done = [t for t in texts if t.startswith(DONE[self.kind]) or DONE[self.kind] in t]
        if done:
            self.outcome, self.detail = "done", _short(done[0])
        else:
            self.outcome = "ended without a result"
            self.detail = _short(
                " / ".join(t for t in texts if "stopped" in t.lower() or "fail" in t.lower()) or " / ".join(texts[-2:])
            )

    async def follow(self, deadline: float) -> None:
        """Fire the page's polling timer until the page stops polling (the job ended) or ``deadline``."""
        if self.outcome != "pressed":
            self.running.set()
            return
        while self.ended_at is None:
            if time.monotonic() > deadline:
                self.outcome, self.ended_at = "still running at the deadline", time.monotonic()
                self.running.set()
                return
            await asyncio.sleep(min(self.session.auto_reruns.values(), default=0.75))
            run = await self.session.auto_rerun()
            if run is None:
                continue
            self.polls += 1
            self.poll_seconds.append(run.seconds)
            if run.failure:
                self.poll_failures.append(run.failure)
                if self.session._ws is None:  # lost the connection: the job stops with the session
                    self.outcome, self.ended_at = f"poll failed: {run.failure}", time.monotonic()
                    self.running.set()
                    return
                continue
            self._read(run)

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()


def _short(text: str, limit: int = 110) -> str:
    text = " ".join(text.replace("\\", "").replace("*", "").replace("|", "/").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def long_prompt(seed: int, chars: int) -> str:
    """``chars`` characters (cut at a word) of generated stories: the words tiny-gpt-stories knows."""
    from engine.corpora.stories import generate_stories

    stories, n = [], 0
    while n < chars:
        more = generate_stories(50, seed=seed * 1000 + len(stories))
        stories += more
        n = sum(len(s) + 1 for s in stories)
    return " ".join(stories)[:chars].rsplit(" ", 1)[0]


def make_students(kind: str, url: str, args: argparse.Namespace) -> list[Student]:
    if kind == "quiet":
        return []
    if kind == "train":
        query = {"train_steps": str(args.train_steps)} if args.train_steps else {}
        return [Student("train", "trainer", url, "train", query, args.rerun_timeout)]
    if kind == "finetune":
        query = {"pretraining_tab": "finetune"}
        if args.finetune_steps:
            query["finetune_steps"] = str(args.finetune_steps)
        return [
            Student("finetune", f"fine-tuner {i + 1}", url, "pretraining", dict(query), args.rerun_timeout)
            for i in range(STUDENTS[kind])
        ]
    return [
        Student(
            "write",
            f"writer {i + 1}",
            url,
            "",
            {
                "model": args.write_model,
                "explore_tab": "write",
                "max_tokens": str(args.write_max_tokens),
                "text": long_prompt(args.seed * 100 + i, args.prompt_chars),
            },
            args.rerun_timeout,
        )
        for i in range(STUDENTS[kind])
    ]


# --- the observer and a case --------------------------------------------------------------------------------


@dataclass
class Case:
    kind: str
    reruns: list[tuple[float, Run]] = field(default_factory=list)  # (monotonic when sent, run)
    opened: Run | None = None
    students: list[Student] = field(default_factory=list)
    rss_before: int = 0
    rss_peak: int = 0
    rss_after: int = 0
    kept_before: int | None = None  # what the server's caches and session state held (kept_now)
    kept_after: int | None = None
    cpu_percent: float | None = None
    typing: tuple[float, float] = (0.0, 0.0)  # the observer's first send and last reply (monotonic)
    jobs_end: float | None = None
    waited_running_s: float | None = None
    client_error: str = ""

    def ok(self) -> list[float]:
        return [r.seconds for _, r in self.reruns if r.failure is None]

    def failures(self) -> str:
        bad = [r.failure.split(":")[0] for _, r in self.reruns if r.failure]
        if self.opened is not None and self.opened.failure:
            bad.append(f"page open {self.opened.failure}")
        return str(len(bad)) + (f" ({', '.join(sorted(set(bad)))})" if bad else "")

    def during(self) -> list[Run]:
        """Observer reruns sent while a job was queued or running (the train job: running)."""

        def active(s: Student, t: float) -> bool:
            begin = s.running_at if s.kind == "train" else s.pressed_at
            return begin is not None and begin <= t and (s.ended_at is None or t < s.ended_at)

        return [r for t, r in self.reruns if any(active(s, t) for s in self.students)]

    def ok_during(self) -> list[float]:
        return [r.seconds for r in self.during() if r.failure is None]


async def run_case(server: Server, kind: str, args: argparse.Namespace) -> Case:
    case = Case(kind, rss_before=rss_now(server.pid), kept_before=kept_now(server.url))
    sampler = TotalSampler(server.pid).start()
    texts = student_sentences(args.seed * 1000 + CASES.index(kind), args.reruns + 1)
    observer = Session(server.url, timeout_s=args.rerun_timeout)
    case.students = make_students(kind, server.url, args)
    try:
        case.opened = await observer.open({"text": texts[0]})
        box = observer.widget_id("text_area", TEXT_LABEL)
        await asyncio.gather(*(s.open() for s in case.students))
        await asyncio.gather(*(s.press() for s in case.students))  # the same moment
        deadline = time.monotonic() + args.job_timeout
        followers = [asyncio.create_task(s.follow(deadline)) for s in case.students]
        if kind == "train":  # the observer types while the job trains
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(case.students[0].running.wait(), args.rerun_timeout)
            except TimeoutError:
                pass
            case.waited_running_s = time.monotonic() - t0
        start = time.monotonic()
        for text in texts[1:]:
            if box is None:
                case.reruns.append((time.monotonic(), Run(0.0, f'not sent (no "{TEXT_LABEL}" box)')))
                continue
            sent = time.monotonic()
            case.reruns.append((sent, await observer.rerun({box: text})))
            await asyncio.sleep(args.pause)
        case.typing = (start, time.monotonic())
        await asyncio.gather(*followers)
        ends = [s.ended_at for s in case.students if s.ended_at is not None]
        case.jobs_end = max(ends) if ends else None
        await asyncio.sleep(max(0.0, max(case.jobs_end or 0.0, case.typing[1]) + args.settle - time.monotonic()))
        case.rss_after, case.kept_after = rss_now(server.pid), kept_now(server.url)
    except Exception as err:  # noqa: BLE001 - a client error is a line of the report, not the end of the run
        case.client_error = f"{type(err).__name__}: {err}"
        case.rss_after, case.kept_after = rss_now(server.pid), kept_now(server.url)
    finally:
        sampler.stop()
        case.rss_peak, case.cpu_percent = sampler.total_peak, sampler.cpu_percent()
        await observer.close()
        await asyncio.gather(*(s.close() for s in case.students))
    return case


async def warm_up(server: Server, args: argparse.Namespace) -> str:
    """Each page the cases use, opened once before any timing (models load, the Train page times its steps)."""
    pages = [
        ("Explore", "", {"text": "The teacher opens the page before the class starts."}),
        (
            f"Explore on {args.write_model}, Write more",
            "",
            {"model": args.write_model, "explore_tab": "write", "text": "lily found a red ball ."},
        ),
        ("Pretraining objectives (fill in the blank)", "pretraining", {}),
        ("Pretraining objectives (fine-tuning)", "pretraining", {"pretraining_tab": "finetune"}),
        ("Train live", "train", {}),
    ]
    notes = []
    for title, page, query in pages:
        session = Session(server.url, timeout_s=max(args.rerun_timeout, 120))
        try:
            run = await session.open(query, page_name=page)
        finally:
            await session.close()
        notes.append(f"{title} {run.seconds:.1f} s" + (f" (failed: {run.failure})" if run.failure else ""))
    firsts = []
    if not args.no_first_jobs:  # a server's first job of a kind pays one-time costs (imports, torch's buffers)
        first = [
            Student("train", "first trainer", server.url, "train", {"train_steps": "20"}, args.rerun_timeout),
            Student(
                "finetune",
                "first fine-tuner",
                server.url,
                "pretraining",
                {"pretraining_tab": "finetune", "finetune_steps": "50"},
                args.rerun_timeout,
            ),
            Student(
                "write",
                "first writer",
                server.url,
                "",
                {"model": args.write_model, "explore_tab": "write", "text": "lily found a red ball ."},
                args.rerun_timeout,
            ),
        ]
        for student in first:
            await student.open()
            await student.press()
            await student.follow(time.monotonic() + args.job_timeout)
            await student.close()
            firsts.append(f"{student.name}: {student.outcome}")
    return (
        "opened once before timing: "
        + ", ".join(notes)
        + (
            "; then one small job of each kind, one after another (a server's first job of a kind pays "
            "one-time costs: the training code's imports, torch's first-use buffers, ~100 MB here, which "
            "later jobs reuse): " + "; ".join(firsts)
            if firsts
            else ""
        )
    )


async def run_all(server: Server, args: argparse.Namespace, context: dict) -> list[Case]:
    context["warm_up"] = await warm_up(server, args)
    print(f"[{server.target}] warm-up: {context['warm_up']}", flush=True)
    cases = []
    for kind in args.cases:
        case = await run_case(server, kind, args)
        cases.append(case)
        print(f"[{server.target}] {TITLES[kind]}: {summary_line(case, cases)}", flush=True)
        for s in case.students:
            print(f"    {s.name}: {job_line(s)}", flush=True)
        print(f"    slowest reruns: {slowest(case)}", flush=True)
    return cases


def slowest(case: Case, n: int = 6) -> str:
    """The case's ``n`` slowest observer reruns: when each was sent (from the presses) and which job ran then."""
    pressed = min((s.pressed_at for s in case.students if s.pressed_at is not None), default=None)
    origin = pressed if pressed is not None else min((t for t, _ in case.reruns), default=0.0)
    parts = []
    for sent, run in sorted(case.reruns, key=lambda item: -item[1].seconds)[:n]:
        running = [
            s.name
            for s in case.students
            if s.running_at is not None and s.running_at <= sent <= (s.ended_at or float("inf"))
        ]
        parts.append(f"+{sent - origin:.1f} s: {run.seconds * 1000:.0f} ms ({', '.join(running) or 'no job running'})")
    return "; ".join(parts) or "none"


# --- report -------------------------------------------------------------------------------------------------


def _mb(value: int) -> str:
    return f"{value / 1e6:.0f}"


def _quiet_p95(cases: list[Case]) -> float | None:
    quiet = next((c for c in cases if c.kind == "quiet"), None)
    return _p95(quiet.ok()) if quiet else None


def _ratio(case: Case, cases: list[Case], during: bool = False) -> str:
    base, p95 = _quiet_p95(cases), _p95(case.ok_during() if during else case.ok())
    return "–" if not base or p95 is None else f"{p95 / base:.2f}"


def _memory(case: Case) -> tuple[str, bool]:
    """RSS after against before, and whether it is back within the bar once what the server keeps on
    purpose (its caches' and session state's own byte counts, both times) is left out."""
    if not case.rss_before:
        return "–", False
    change = case.rss_after / case.rss_before - 1
    if case.kept_before is None or case.kept_after is None:
        return f"{change:+.1%}", abs(change) <= BAR_MEMORY
    rest = (case.rss_after - case.kept_after) / (case.rss_before - case.kept_before) - 1
    return f"{change:+.1%}; without caches {rest:+.1%}", abs(rest) <= BAR_MEMORY


def _kept(case: Case) -> str:
    if case.kept_before is None or case.kept_after is None:
        return "–"
    return f"{_mb(case.kept_before)} → {_mb(case.kept_after)}"


def _jobs(case: Case) -> str:
    if not case.students:
        return "–"
    done = sum(1 for s in case.students if s.outcome == "done")
    return f"{done} of {len(case.students)} done"


def job_line(s: Student) -> str:
    """One student's job: how it ended, and when (from the press)."""
    parts = [s.outcome + (f": {s.detail}" if s.detail else "")]
    if s.pressed_at is not None and s.running_at is not None:
        parts.append(f"running from +{s.running_at - s.pressed_at:.1f} s")
    if s.pressed_at is not None and s.ended_at is not None:
        parts.append(f"ended +{s.ended_at - s.pressed_at:.1f} s")
    parts.append(f"{s.polls} polls" + (f", {len(s.poll_failures)} failed" if s.poll_failures else ""))
    if s.poll_seconds:
        parts.append(f"a poll's rerun median {statistics.median(s.poll_seconds) * 1000:.0f} ms")
    if s.opened is not None and s.opened.failure is None:
        parts.append(f"page opened in {s.opened.seconds:.1f} s")
    return "; ".join(parts)


def summary_line(case: Case, cases: list[Case]) -> str:
    ok = case.ok()
    memory, _ = _memory(case)
    return (
        f"{len(ok)} reruns ok, median {_s(_median(ok))} s, p95 {_s(_p95(ok))} s (× quiet {_ratio(case, cases)}), "
        f"failures {case.failures()}, jobs {_jobs(case)}, {len(case.during())} reruns sent while a job ran "
        f"(p95 {_s(_p95(case.ok_during()))} s, × quiet {_ratio(case, cases, during=True)}), "
        f"RSS {_mb(case.rss_before)} → peak {_mb(case.rss_peak)} → after {_mb(case.rss_after)} MB ({memory})"
        + (f"; client error: {case.client_error}" if case.client_error else "")
    )


def table(cases: list[Case]) -> list[str]:
    lines = [
        (
            "| case | observer reruns (ok) | median (s) | p95 (s) | p95 / quiet p95 | failures | jobs "
            "| reruns sent while a job ran | their p95 (s) | their p95 / quiet p95 | server CPU (% of one core) "
            "| RSS before (MB) | peak (MB) | after (MB) | kept in caches, before → after (MB) | after vs before "
            f"| within {BAR_MEMORY:.0%} (without caches) |"
        ),
        "|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in cases:
        ok = c.ok()
        memory, within = _memory(c)
        cpu = "–" if c.cpu_percent is None else f"{c.cpu_percent:.0f}"
        lines.append(
            f"| {TITLES[c.kind]} | {len(c.reruns)} ({len(ok)}) | {_s(_median(ok))} | {_s(_p95(ok))} "
            f"| {_ratio(c, cases)} | {c.failures()} | {_jobs(c)} | {len(c.during())} of {len(c.reruns)} "
            f"| {_s(_p95(c.ok_during()))} | {_ratio(c, cases, during=True)} | {cpu} | {_mb(c.rss_before)} | {_mb(c.rss_peak)} | {_mb(c.rss_after)} | {_kept(c)} | {memory} "
            f"| {'yes' if within else 'no'} |"
        )
    return lines


def verdict(cases: list[Case]) -> str:
    base = _quiet_p95(cases)
    parts = []
    for c in cases:
        if c.kind == "quiet":
            continue
        p95 = _p95(c.ok())
        memory, within = _memory(c)
        fast = "–" if not base or p95 is None else ("met" if p95 <= BAR_P95 * base else "missed")
        parts.append(
            f"{TITLES[c.kind]}: p95 bar {fast} ({_ratio(c, cases)}×; reruns sent while a job ran: "
            f"{_ratio(c, cases, during=True)}×, {len(c.during())} of {len(c.reruns)}), memory bar "
            f"{'met' if within else 'missed'} ({memory})"
        )
    if not parts:
        return ""
    first, last = cases[0], cases[-1]
    overall = (
        f" Over the whole run, server RSS went {_mb(first.rss_before)} → {_mb(last.rss_after)} MB "
        f"({last.rss_after / first.rss_before - 1:+.1%})."
        if first.rss_before
        else ""
    )
    return (
        "The issue's bar (p95 ≤ 1.5 × the quiet p95; RSS after within 10% of before, leaving out what the "
        "server's caches and session state hold, by their own count): " + "; ".join(parts) + "." + overall
    )


def jobs_detail(cases: list[Case]) -> list[str]:
    lines = []
    for c in cases:
        if not c.students:
            continue
        typing_s = c.typing[1] - c.typing[0]
        head = f"- {TITLES[c.kind]} (the observer typed for {typing_s:.0f} s"
        if c.waited_running_s is not None:
            head += f", after waiting {c.waited_running_s:.1f} s for the job to show it was training"
        if c.jobs_end is not None:
            lag = c.jobs_end - c.typing[0]
            head += (
                f"; the last job ended {lag:.1f} s after its first rerun"
                if lag >= 0
                else f"; the last job ended {-lag:.1f} s before its first rerun"
            )
        lines.append(head + "):")
        lines += [f"  - {s.name}: {job_line(s)}" for s in c.students]
        if c.client_error:
            lines.append(f"  - client error: {c.client_error}")
    return lines


def section(cases: list[Case], args: argparse.Namespace, context: dict) -> str:
    from engine.job_limits import default_workers

    train = f"{args.train_steps} steps" if args.train_steps else "default settings: reverse, 500 steps"
    finetune = f"{args.finetune_steps} steps" if args.finetune_steps else "default settings: 200 steps, lr 0.001"
    positions = WRITE_MODELS[args.write_model]
    lines = [
        SECTION,
        "",
        (
            'The issue: "With one Train live job running, and with five students fine-tuning or writing at once, another '
            "student's rerun p95 ≤ 1.5× its value without them; server memory back within 10% of its level afterwards.\""
        ),
        "",
        (
            f"One server ({context['target']}), four cases in turn. In each, an observer student opens Explore (MiniLM) and "
            f"types a new seeded sentence {args.pause:g} s after each rerun ends, {args.reruns} times; a rerun is timed "
            "from the BackMsg to `script_finished` (`bench/st_client.py`, no browser). Alongside: nothing (quiet); one "
            f"student on Train live pressing Start ({train}; the observer starts once that page shows the job "
            f"training); five students on Pretraining objectives' fine-tuning tab pressing Fine-tune at the same "
            f"moment ({finetune}); five students on Explore with {args.write_model}, a {args.prompt_chars:,}-character "
            f"prompt of generated stories each (different), token limit {args.write_max_tokens:,} (the model has "
            f"{positions:,} positions: the prompt is cut to at most {args.write_max_tokens:,} tokens and at most "
            f"{min(NEW_TOKENS, positions - args.write_max_tokens)} can be written after it), submitting the Write more "
            f"form at the same moment with {NEW_TOKENS} new tokens asked. Each "
            "student's page follows its job as a browser does (its `run_every` fragment timer fires until the page "
            "stops polling) and says how it ended. The long-work lane runs "
            f"{default_workers()} job(s) at a time here (`AP_LONG_JOBS`, default half the cores); the rest queue. Server "
            "RSS is the sum over the server's processes from /proc: before the case, the peak of 0.5 s samples, and "
            f'{args.settle:g} s after the last job ended (the students still connected; "after" includes what the server '
            "keeps on purpose, e.g. its trace cache of each page's and each writer's trace). **Kept in caches**: what the server's "
            "own counters say its caches and session state hold (`/_stcore/metrics`: `playground_cache_bytes`, the "
            "app's trace, map and figure caches, bounded by `AP_TRACE_CACHE_MB` and 64 MB each; Streamlit's "
            '`cache_memory_bytes` of `st.cache_data` and session state), read at the same moments; "without caches" compares RSS minus that count. "Observer reruns sent while a '
            'job ran": sent between a press and the end its page showed (Train live: from the first "Training on").'
        ),
        "",
        *table(cases),
        "",
        verdict(cases),
        "",
        "Jobs, as the students' pages showed them (times from the press):",
        "",
        *jobs_detail(cases),
        "",
        f"Warm-up (not timed): {context['warm_up']}.",
        "",
        *footer(context),
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--target", default="streamlit", choices=TARGETS, help="the one server to start")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, from {', '.join(CASES)}")
    parser.add_argument("--reruns", type=int, default=40, help="the observer's reruns per case")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between a rerun's reply and the next")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-steps", type=int, help="Train live steps (default: the page's, 500)")
    parser.add_argument("--finetune-steps", type=int, help="fine-tuning steps, 50–500 (default: the page's, 200)")
    parser.add_argument("--prompt-chars", type=int, default=15_000, help="the writers' prompt length")
    parser.add_argument(
        "--write-model", default="tiny-gpt-stories", choices=list(WRITE_MODELS), help="the writers' decoder"
    )
    parser.add_argument(
        "--write-max-tokens",
        type=int,
        help="the writers' token limit; prompt + new tokens fit in the model's positions "
        "(default: 48 of tiny-gpt-stories' 96; 16,256 for tiny-random-gpt2)",
    )
    parser.add_argument(
        "--no-first-jobs",
        action="store_true",
        help="skip the warm-up's small first job of each kind (then the first case pays one-time costs)",
    )
    parser.add_argument("--settle", type=float, default=10.0, help="seconds after the last job before 'after' RSS")
    parser.add_argument("--job-timeout", type=float, default=300.0, help="seconds from the presses to give up on jobs")
    parser.add_argument("--rerun-timeout", type=float, default=60.0)
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    if unknown := set(args.cases) - set(CASES):
        parser.error(f"unknown case(s) {', '.join(sorted(unknown))}")
    positions = WRITE_MODELS[args.write_model]
    if args.write_max_tokens is None:
        args.write_max_tokens = 48 if positions < 2 * NEW_TOKENS else positions - NEW_TOKENS
    if args.reruns < 2 or not 4 <= args.write_max_tokens < positions:
        parser.error(f"--reruns ≥ 2 and 4 ≤ --write-max-tokens < {positions} ({args.write_model}'s positions)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    self_check.check("sampler")
    context = {
        **run_context("bench_jobs", argv),
        "warm_up": "",
        "target": "`streamlit run`, one process"
        if args.target == "streamlit"
        else "`scripts/classroom.sh`: HAProxy and one Streamlit process per core",
    }
    with running_server(args.target, f"bench-jobs-{args.target}.log") as server:
        cases = asyncio.run(run_all(server, args, context))
    context["load_after"] = load_average()
    text = section(cases, args, context)
    write_section(Path(args.out), text, after=AFTER)
    print(text)


if __name__ == "__main__":
    main()
