"""How quickly the server answers what the tests check only for behaviour (they used to time it).

The tests assert *what* happens (a refusal names the id and never reaches the network; a control's
rerun is clean; an abandoned training job is stopped); how long it takes moved here, where a busy
shared machine makes a number slow instead of a test red. Cases (``--cases``, all by default):

- ``refusals``: ``engine.load`` of an unknown Hub id offline (``HF_HUB_OFFLINE=1``: the local cache only),
  the same id online where the Hub cannot be reached (one probe with a 5 s timeout), and ten invalid ids
  (empty, a NUL, ``..``, 300 characters, …); the tests' old bounds were 5 s, 15 s and 2 s;
- ``reaper``: a live-training job whose page stops polling (``heartbeat_timeout`` 1 s, the reaper every
  0.1 s) and one whose browser disconnects (``grace`` 0.5 s, then the server's default 3 s): seconds
  from the last heartbeat / the disconnect to the job's end (old bounds: 4 s and 3 s);
- ``pages`` (AppTest, no browser): Explore's run after typing an unknown Hub id (old bound 15 s) and
  every control of the Positional encodings page, one rerun each with warm caches (old bounds: median
  under 1 s, slowest under 3 s).

Run from the repository root::

    HF_HUB_OFFLINE=1 python -m bench.bench_responsiveness          # ~1 min on 2 cores

It replaces the section "Responsiveness the tests do not time" of docs/BENCHMARKS.md (``--out PATH``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from bench.serve import ROOT, footer, load_average, machine
from bench.trace_report import write_section

SECTION = "## Responsiveness the tests do not time"
INVALID_IDS = [
    "",
    "   ",
    None,
    123,
    "../etc",
    "gpt2/../../etc",
    "x y",
    "a" * 300,
    "bad\x00id",
    "~nobody-home-xyz/model",
]


def _seconds(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _refused(model_id) -> None:
    import engine

    try:
        engine.load(model_id)
    except engine.ModelUnavailableError:
        return
    raise AssertionError(f"{model_id!r} loaded")


def refusals(repeats: int) -> list[tuple[str, list[float], float]]:
    """(case, seconds per repeat, the tests' old bound) for each kind of refused id."""
    import huggingface_hub.constants

    rows = []
    os.environ["HF_HUB_OFFLINE"] = "1"
    rows.append(
        ("unknown Hub id, offline", [_seconds(lambda: _refused("no-such-model-xyz")) for _ in range(repeats)], 5)
    )
    saved = huggingface_hub.constants.HF_HUB_OFFLINE
    del os.environ["HF_HUB_OFFLINE"]
    huggingface_hub.constants.HF_HUB_OFFLINE = False  # read at import: switch its copy off too
    try:
        rows.append(
            (
                "unknown Hub id, online without a network",
                [_seconds(lambda: _refused("no-such-model-xyz")) for _ in range(repeats)],
                15,
            )
        )
    finally:
        os.environ["HF_HUB_OFFLINE"] = "1"
        huggingface_hub.constants.HF_HUB_OFFLINE = saved
    times = [_seconds(lambda m=m: _refused(m)) for _ in range(repeats) for m in INVALID_IDS]
    rows.append((f"invalid ids ({len(INVALID_IDS)} kinds)", times, 2))
    return rows


def reaper(repeats: int) -> list[tuple[str, list[float], float]]:
    """Seconds from the last heartbeat / the disconnect to a stopped job, with the real clock."""
    from engine.training.jobs import JobManager
    from tests.job_helpers import LONG, wait_until

    def fast(settings) -> float:
        return 1e-3  # LONG fits any budget

    def no_heartbeats() -> float:
        m = JobManager(max_running=1, heartbeat_timeout=1.0, reap_every=0.1, estimator=fast)
        try:
            job = m.submit("s", LONG)
            wait_until(lambda: job.progress().step >= 1, what="a step")
            m.heartbeat("s")
            start = time.perf_counter()
            job.wait(60)
            return time.perf_counter() - start
        finally:
            m.shutdown()

    def disconnect(grace: float) -> float:
        connected = threading.Event()
        connected.set()
        m = JobManager(max_running=1, heartbeat_timeout=0.5, reap_every=0.1, grace=grace, estimator=fast)
        try:
            job = m.submit("s", LONG, alive=connected.is_set)
            wait_until(lambda: job.progress().step >= 1, what="a step")
            connected.clear()
            start = time.perf_counter()
            job.wait(60)
            return time.perf_counter() - start
        finally:
            m.shutdown()

    return [
        ("training job: last heartbeat → stopped (timeout 1 s)", [no_heartbeats() for _ in range(repeats)], 4),
        ("training job: disconnect → stopped (grace 0.5 s)", [disconnect(0.5) for _ in range(repeats)], 3),
        ("training job: disconnect → stopped (grace 3 s, the server's)", [disconnect(3.0) for _ in range(repeats)], 0),
    ]


def pages(repeats: int) -> list[tuple[str, list[float], float]]:
    """AppTest runs: Explore with an unknown Hub id, and one rerun per Positional encodings control."""
    sys.path.insert(0, str(ROOT / "tests" / "app"))
    from apptest_helpers import assert_clean, open_page, run_app

    positional = importlib.import_module("test_positional_page")  # the controls the page test sets
    CONTROLS, select_tab = positional.CONTROLS, positional.select_tab

    hub = []
    for n in range(repeats):
        at = run_app()
        field = at.text_input(key="hub_id").input(f"definitely-not-a-model-{n}")
        hub.append(_seconds(field.run))
        assert_clean(at)
    reruns = []
    for _ in range(repeats):
        at = open_page("positional")
        for tab, controls in CONTROLS.items():
            select_tab(at, tab)  # opening a tab (first computation, model load) is not what is timed
            for kind, key, value in controls:
                getattr(at, kind)(key=key).set_value(value)
                reruns.append(_seconds(at.run))
                assert_clean(at)
    return [
        ("Explore: run after typing an unknown Hub id", hub, 15),
        ("Positional encodings: one control's rerun (every control)", reruns, 1),
    ]


CASES = {"refusals": refusals, "reaper": reaper, "pages": pages}


def section(rows: list[tuple[str, list[float], float]], context: dict) -> str:
    lines = [
        SECTION,
        "",
        "What the tests check only for behaviour, timed (seconds; each case repeated, "
        'median and slowest). "Old bound": the wall-clock assert the test used to make (for the '
        "Positional page the bound was on the median; the slowest was allowed 3 s).",
        "",
        "| case | runs | median s | slowest s | old bound s |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, times, bound in rows:
        bound_text = f"{bound:g}" if bound else "n/a"
        lines.append(f"| {name} | {len(times)} | {statistics.median(times):.2f} | {max(times):.2f} | {bound_text} |")
    return "\n".join(lines + [""] + footer(context)) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    context = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "machine": machine(),
        "load_before": load_average(),
        "command": "python -m bench.bench_responsiveness " + shlex.join(argv or sys.argv[1:]),
    }
    rows = []
    for name in args.cases.split(","):
        new = CASES[name.strip()](args.repeats)
        rows += new
        for case, times, _ in new:
            print(f"{case}: median {statistics.median(times):.2f} s, slowest {max(times):.2f} s", flush=True)
    context["load_after"] = load_average()
    write_section(Path(args.out), section(rows, context))
    print(f"wrote {SECTION!r} to {args.out}")


if __name__ == "__main__":
    main()
