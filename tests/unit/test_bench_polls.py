"""``bench/bench_polls.py`` without a server: loopback only, a student who gives up never blocks the class's
barrier, and the report counts lost answers against the store and names the machine."""

from __future__ import annotations

import asyncio

import pytest

from bench import bench_polls
from bench.st_client import Run
from tests.async_helpers import run_async


@pytest.mark.parametrize("url", ["http://10.0.0.5:8501", "http://example.com", "https://192.168.1.2"])
def test_only_a_loopback_server_is_loaded(url):
    with pytest.raises(SystemExit):
        bench_polls.parse_args(["--url", url])
    assert bench_polls.parse_args(["--url", "http://127.0.0.1:8501"]).students == [100]


@pytest.mark.parametrize("students", ["0", "1001", ""])
def test_class_sizes_are_bounded(students):
    with pytest.raises(SystemExit):
        bench_polls.parse_args(["--students", students])


def test_a_student_who_gives_up_does_not_hold_the_others():
    async def scenario() -> list[str]:
        gate, said = bench_polls.Gate(3), []

        async def waits(name: str) -> None:
            await gate.wait()
            said.append(name)

        async def gives_up() -> None:
            gate.arrive()  # failed before the barrier: counted as arrived

        await asyncio.wait_for(asyncio.gather(waits("a"), waits("b"), gives_up()), timeout=5)
        return said

    assert sorted(run_async(scenario(), timeout=30)) == ["a", "b"]


def test_the_report_counts_lost_answers_against_the_store_and_names_the_machine():
    case = bench_polls.Case(4, code="ABCDEF", members=4, stored=3, confirmed=3)
    case.opens = [Run(1.0), Run(2.0), Run(3.0), Run(0.5, "timeout")]
    case.answers = [Run(0.1), Run(0.2), Run(0.3), Run(0.4)]
    assert case.lost == 1
    context = {
        "machine": "Some CPU, 2 cores",
        "date": "today",
        "load_before": "1",
        "load_after": "2",
        "command": "python -m bench.bench_polls --students 4",
    }
    text = bench_polls.section([case], "classroom", context)
    assert text.startswith(bench_polls.SECTION + "\n")
    (line,) = [x for x in text.splitlines() if x.startswith("| classroom")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:8] == ["classroom", "4", "4", "4", "3", "3", "1", "0.25"]  # …, lost 1, median 0.25 s
    assert "1: timeout" in line
    assert "Some CPU, 2 cores" in text and "python -m bench.bench_polls --students 4" in text
