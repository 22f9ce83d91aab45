"""The load benchmarks' parts that need no server: sentences, /proc sampling, stopping a process group,
the report and the section it replaces (``bench/bench_class.py``, ``bench/bench_browser.py``)."""

from __future__ import annotations

import os
import subprocess
import time
from argparse import Namespace

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench import bench_browser, bench_class, serve
from bench.sentences import student_sentences
from bench.st_client import Run
from bench.trace_report import write_section


def test_sentences_are_seeded_distinct_and_sized():
    first = student_sentences(3, 6)
    assert first == student_sentences(3, 6)
    assert len(set(first)) == 6
    assert first != student_sentences(4, 6)
    assert all(14 <= len(s.split()) <= 80 and s[0].isupper() and s.endswith(".") for s in first)


def test_text_of_hits_the_token_count():
    tok = bench_browser.minilm_tokenizer()
    for size in (40, 128):
        text = bench_browser.text_of(tok, size, seed=1)
        assert len(tok.encode(f"{text} {bench_browser.LAST_WORDS[0]}").ids) == size


def test_write_section_replaces_only_its_own(tmp_path):
    doc = tmp_path / "B.md"
    doc.write_text("# Benchmarks\n\n## A\n\nold a\n\n## B\n\nold b\n")
    write_section(doc, "## A\n\nnew a\n")
    write_section(doc, "## C\n\nnew c\n")
    assert doc.read_text() == "# Benchmarks\n\n## A\n\nnew a\n\n## B\n\nold b\n\n## C\n\nnew c\n"


def test_sampler_follows_a_process_tree():
    """Which processes it samples; the CPU and memory it reads are checked where the benchmarks run
    (bench/self_check.py)."""
    child = subprocess.Popen(["python3", "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        sampler = serve.ProcSampler(os.getpid(), period_s=0.1).start().stop()
    finally:
        child.stdin.close()
        child.wait(timeout=10)
    assert child.pid in sampler.procs and os.getpid() in sampler.procs
    assert sampler.procs[os.getpid()].rss_peak_bytes > 0
    assert serve.ProcSampler(None).start().stop().cpu_percent() is None  # a --url server: nothing sampled


def test_stop_group_ends_the_leader_and_its_children():
    proc = subprocess.Popen(["bash", "-c", "sleep 60 & sleep 60"], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(serve.descendants(proc.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(serve.descendants(proc.pid)) == 3
    serve._stop_group(proc)
    assert proc.returncode is not None and not serve._group_alive(proc.pid)


def test_script_finished_detection():
    done, early = ForwardMsg(), ForwardMsg()
    done.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    early.script_finished = ForwardMsg.FINISHED_EARLY_FOR_RERUN
    assert bench_browser.run_finished(done.SerializeToString())
    assert not bench_browser.run_finished(early.SerializeToString())
    assert not bench_browser.run_finished("text frame")


def test_class_report_counts_failures_and_unfinished_reruns(tmp_path):
    args = Namespace(repeats=1, same_text=False, rerun_timeout=60.0, case_timeout=300.0)
    case = bench_class.Case("streamlit", 2, 1, bursts=[[Run(0.5), Run(60.0, "timeout")]])
    case.opens = [Run(1.0), Run(1.2)]
    case.typed = [Run(0.2), Run(0.3), Run(0.4), Run(0.1, "exception"), Run(0.3)]  # one typed rerun missing
    case.sampler = serve.ProcSampler(None).start().stop()
    assert case.failures() == {"timeout": 1, "exception": 1, "case time limit": 1}
    context = {
        "warm_ups": ["streamlit: 1 student"],
        "skipped": ["classroom (missing)"],
        "date": "today",
        "machine": "here",
        "load_before": "0",
        "load_after": "0",
        "command": "python -m bench.bench_class",
    }
    text = bench_class.section([case], args, context)
    assert text.startswith(bench_class.SECTION + "\n")
    assert "| streamlit | 2 | 7 (5) | 0.30 |" in text
    assert "3 (" in text and "Not measured: classroom (missing)." in text


def test_client_finds_the_text_box_by_label_or_as_the_only_one():
    from streamlit.proto.TextArea_pb2 import TextArea
    from streamlit.proto.TextInput_pb2 import TextInput

    from bench.st_client import Session

    session = Session("http://127.0.0.1:1")
    box, other = TextArea(id="box", label="Your text"), TextArea(id="other", label="Notes")
    session.widgets = [("text_input", TextInput(id="hub", label="Hub id")), ("text_area", other), ("text_area", box)]
    assert session.widget_id("text_area", "your text ") == "box"
    session.widgets = [("text_area", other)]
    assert session.widget_id("text_area", "Your text") == "other"
    session.widgets = [("text_area", other), ("text_area", TextArea(id="third", label="More"))]
    assert session.widget_id("text_area", "Your text") is None


def test_write_subsection_replaces_only_its_own_under_its_parent(tmp_path):
    from bench.trace_report import write_subsection

    doc = tmp_path / "B.md"
    doc.write_text("# Benchmarks\n\n## A\n\nplain a\n\n### P\n\nprofile\n\n### S\n\nold s\n\n## B\n\nold b\n")
    write_subsection(doc, "### S\n\nnew s\n", "## A")
    write_subsection(doc, "### T\n\nnew t\n", "## A")
    assert doc.read_text() == (
        "# Benchmarks\n\n## A\n\nplain a\n\n### P\n\nprofile\n\n### S\n\nnew s\n\n### T\n\nnew t\n\n## B\n\nold b\n"
    )
    write_subsection(doc, "### U\n\nu\n", "## C")
    assert doc.read_text().endswith("## B\n\nold b\n\n## C\n\n### U\n\nu\n")


def test_a_same_link_class_writes_its_own_subsection():
    import argparse

    from bench.bench_class import SECTION, same_link_header

    args = argparse.Namespace(students=[100], same_link=True)
    assert same_link_header(args) == "### The whole class on the teacher's link (100 students, one sentence)"
    assert "### The whole class on the teacher's link (100 students" in open("docs/BENCHMARKS.md").read()
    assert SECTION == "## A class on one server"
