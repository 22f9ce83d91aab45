"""bench_rerun --split: the split server's counters and how a rerun's CPU is divided among its parts."""

from __future__ import annotations

import argparse
import mmap
import resource
import threading
import time

from bench import split_server
from bench.bench_rerun import Costs, Forward, section, split_case


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_counter_adds_its_thread_s_cpu_once_and_not_another_thread_s():
    split_server._zero()
    inner = split_server._counted("part", lambda: _spin(0.02))
    outer = split_server._counted("part", lambda: (_spin(0.03), inner()))  # a call inside counts once
    busy = threading.Thread(target=_spin, args=(0.1,))  # another thread's CPU is not this part's
    busy.start()
    outer()
    busy.join()
    spent_ns, calls = split_server._COUNTS["part"]
    assert calls == 1
    assert 0.045 <= spent_ns / 1e9 < 0.09


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


def test_the_forward_pass_is_watched_once_with_its_page_faults_and_the_loop_s_cpu_meanwhile():
    split_server._zero()
    touched = 16 * 2**20

    own_faults = []

    def forward() -> int:
        # Fresh anonymous pages, each first touch a page fault of this thread. Small pages asked for: where the
        # kernel maps huge pages by default (CI's machine did), 16 MiB comes in a few hundred faults.
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        memory = mmap.mmap(-1, touched)
        memory.madvise(mmap.MADV_NOHUGEPAGE)
        for offset in range(0, touched, mmap.PAGESIZE):
            memory[offset] = 1
        memory.close()
        own_faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
        return touched

    inner = split_server._watched(forward)
    outer = split_server._watched(lambda: (_spin(0.02), inner())[1])  # the pass calling itself counts once
    worker = threading.Thread(target=outer)  # the pass on a script thread, the "event loop" (main thread) busy
    worker.start()
    _spin(0.05)
    worker.join()
    inside = split_server._INSIDE
    assert inside["passes"] == 1
    # the faults the pass counted itself, read the same way but inside it: 4,096 pages of 4 KiB here, and at least
    # one a 2 MiB page on any kernel
    assert own_faults[0] >= touched // 2**21
    assert own_faults[0] <= inside["page_faults"] <= own_faults[0] + 200
    assert inside["loop_ns"] >= 0.02e9  # the main thread spun while the pass ran
    assert inside["preempted"] >= 0 and inside["waited_ns"] >= 0


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
