"""bench_rerun --split: the split server's counters and how a rerun's CPU is divided among its parts."""

from __future__ import annotations

import argparse
import threading

from bench import split_server
from bench.bench_rerun import Costs, Forward, section, split_case


def test_a_counter_counts_an_inner_call_under_its_label_once():
    """How often; the CPU it adds (its own thread's only) is checked where the benchmark runs (bench/self_check.py)."""
    split_server._zero()
    inner = split_server._counted("part", lambda: None)
    outer = split_server._counted("part", inner)
    other = split_server._counted("other", lambda: None)
    outer()
    outer()
    other()
    assert {label: calls for label, (_ns, calls) in split_server._COUNTS.items()} == {"part": 2, "other": 1}
    assert all(spent >= 0 for spent, _calls in split_server._COUNTS.values())
    split_server._zero()
    assert split_server._COUNTS == {}


def test_a_case_is_split_into_its_parts_and_the_rest():
    counters = {"script thread": 3.0, "forward pass": 2.0, "attention maps": 0.1, "figures": 0.2}
    parts = split_case(counters, process=4.0, loop=0.5, reruns=100)  # seconds over 100 reruns
    assert parts == {
        "forward pass": 20.0,
        "attention maps": 1.0,
        "figures": 2.0,
        "page and Streamlit (script thread)": 7.0,
        "event loop (main thread)": 5.0,
        "other": 5.0,
        "server, all threads": 40.0,
    }
    costs = Costs("this revision")
    costs.cpu.update({"miss": [0.04], "hit": [0.01]})
    costs.wall.update({"miss": [0.04], "hit": [0.01]})
    costs.split = {"miss": parts}
    context = {"date": "d", "machine": "m", "command": "c", "load_before": "l", "load_after": "l"}
    forward = Forward(paused=[0.019], in_a_row=[0.016], busy=[])
    text = section([([costs], forward)], argparse.Namespace(repeats=3, sentences=1), context)
    assert "### Where the server's CPU went per rerun" in text
    # the last column: the server's 40 ms a rerun over the 20 ms pass that ran inside it
    assert "| round 1 | miss | 20.0 | 1.0 | 2.0 | 7.0 | 5.0 | 5.0 | 40.0 | 19.0 | 2.00× |" in text
    assert text.index("Reproduce") < text.index("### Where")  # after the run's footer: a subsection of its own


def test_a_hit_has_no_pass_of_its_own_to_divide_by():
    from bench.bench_rerun import own_ratio

    assert own_ratio({"forward pass": 0.0, "server, all threads": 12.0}) is None
    assert own_ratio({"forward pass": 20.0, "server, all threads": 36.0}) == 1.8


def test_the_forward_pass_is_watched_once_with_what_happened_meanwhile():
    """Once, and what it notes; the page faults and the loop's CPU it reads are checked where the benchmark runs
    (bench/self_check.py)."""
    split_server._zero()
    inner = split_server._watched(lambda: 7)
    outer = split_server._watched(inner)  # the pass calling itself counts once
    worker = threading.Thread(target=outer)  # the pass on a script thread, as the server's
    worker.start()
    worker.join()
    inside = split_server._INSIDE
    assert sorted(inside) == ["loop_ns", "page_faults", "passes", "preempted", "waited_ns"]
    assert inside["passes"] == 1
    assert inside["page_faults"] >= 0 and inside["preempted"] >= 0 and inside["waited_ns"] >= 0
    assert inside["loop_ns"] >= 0
    split_server._zero()


def test_what_happened_around_the_passes_is_a_table_of_means_per_pass_for_the_misses():
    from bench.bench_rerun import inside_pass

    assert inside_pass({}) == {}  # a hit: no pass
    per_pass = inside_pass({"passes": 4, "page_faults": 1000, "preempted": 10, "waited_ns": 2_000_000, "loop_ns": 4e6})
    assert per_pass == {"page_faults": 250.0, "preempted": 2.5, "waited_ms": 0.5, "loop_ms": 1.0}
    costs = Costs("this revision")
    costs.cpu.update({"miss": [0.04], "hit": [0.01]})
    costs.wall.update({"miss": [0.04], "hit": [0.01]})
    parts = split_case({"script thread": 3.0, "forward pass": 2.0}, process=4.0, loop=0.5, reruns=100)
    costs.split = {"miss": parts, "hit": parts}
    costs.inside = {"miss": per_pass, "hit": {}}
    context = {"date": "d", "machine": "m", "command": "c", "load_before": "l", "load_after": "l"}
    text = section(
        [([costs], Forward(paused=[0.019], in_a_row=[0.016], busy=[]))],
        argparse.Namespace(repeats=3, sentences=1),
        context,
    )
    assert "| round 1 | miss | 250 | 2.5 | 0.5 | 1.0 |" in text
    assert "| round 1 | hit | " not in text.split("Around each forward pass")[1]
