"""bench_browser's CPU per press: which processes the /proc readings are of (``serve.cpu_of``, ``serve.named``), a
press's split from its three marks (``CpuProbe``) and the section's table (``cpu_lines``)."""

from __future__ import annotations

import os
import subprocess
import sys

from bench import bench_browser, serve
from bench.bench_browser import CpuProbe, cpu_lines


def test_named_finds_a_child_by_its_command_line_and_cpu_of_counts_each_pid_given():
    """What the readings are of; how much CPU /proc reads is checked where the benchmark runs (bench/self_check.py)."""
    idle = "print('ready', flush=True)\nimport sys; sys.stdin.read()  # idle-marker"
    child = subprocess.Popen([sys.executable, "-c", idle], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"  # started: from now on it waits, its CPU reading still
        found = serve.named(serve.descendants(os.getpid()), "idle-marker")
        assert found == [child.pid]
        assert serve.cpu_of([child.pid, child.pid]) == 2 * serve.cpu_of([child.pid])  # each pid once, as given
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    assert serve.cpu_of([child.pid]) == 0.0  # gone: counts nothing
    assert serve.named([child.pid], "idle-marker") == []


def test_a_press_splits_into_server_and_chromium_before_and_after_the_run():
    probe = CpuProbe(server_root=None)
    probe._server = [1]
    probe.marks = [(10.0, 20.0), (10.2, 20.3), (10.25, 20.5)]
    split = probe.split()
    assert split is not None
    assert abs(split["server"] - 0.25) < 1e-9
    assert abs(split["browser before"] - 0.3) < 1e-9
    assert abs(split["browser after"] - 0.2) < 1e-9
    probe._server = []  # a --url server: its processes are not ours
    assert probe.split()["server"] is None
    probe.marks = probe.marks[:2]  # a press that never drew
    assert probe.split() is None


def test_arm_finds_no_server_for_a_url_and_starts_the_marks_again():
    probe = CpuProbe(server_root=None)
    probe.marks = [(1.0, 1.0)] * 3
    probe.arm()
    assert probe._server == [] and len(probe.marks) == 1


def test_the_cpu_table_gives_medians_and_each_press_total():
    press = [
        {"server": 0.20, "browser before": 0.30, "browser after": 0.25},
        {"server": 0.22, "browser before": 0.40, "browser after": 0.27},
        {"server": 0.30, "browser before": 0.20, "browser after": 0.35},
    ]
    now = [{"size": 512, "cpu": press}, {"size": 40, "cpu": []}]
    base = [{"size": 512, "cpu": [{"server": None, "browser before": 0.5, "browser after": 0.4}]}, {"size": 40}]
    lines = cpu_lines([now, base], ["this revision", "baseline `abc`"])
    rows = [line for line in lines if line.startswith("| 512") or line.startswith("| 40")]
    assert (
        rows[0] == "| 512 | this revision | 3 | 220 | 300 | 270 | 850 |"
    )  # totals 0.75, 0.89, 0.85: not a sum of medians
    assert rows[1] == "| 40 | this revision | 0 | – | – | – | – |"
    assert rows[2] == "| 512 | baseline `abc` | 1 | – | 500 | 400 | – |"
    assert rows[3] == "| 40 | baseline `abc` | 0 | – | – | – | – |"
    assert bench_browser.cpu_lines([], []) == lines[:4] + [""]
