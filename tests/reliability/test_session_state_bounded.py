"""A student who types sentence after sentence does not make the server's session state grow.

Every selectbox and text box of a rerun reads the whole session state (Streamlit builds its filtered view to
check one key), so a state that grows by one widget per sentence makes each rerun slower the longer a lecture
lasts, and keeps the old widgets' values in memory. Explore's grid of heads was a new widget for every sentence
(a selectable chart, its figure part of its identity): it grew by one per sentence while it sat in a fragment
nested inside the sentence panel, whose reruns never forget a nested fragment's widgets. The heads are now one
in-browser view under a fixed key (the same widget for every sentence).

The server is the split benchmark's (``bench/split_server.py``: ``streamlit run`` that notes the state's size
after each script run); the client is the load benchmarks' (``bench/st_client.py``).
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from bench.sentences import student_sentences
from bench.serve import running_server
from bench.st_client import Session
from tests.async_helpers import run_async

pytestmark = pytest.mark.reliability

TYPED = 6


def _entries(pid: int, out) -> list[int]:
    """The session state's size after each script run since the counters were zeroed."""
    out.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not out.exists():
        assert time.monotonic() < deadline, "the split server wrote nothing"
        time.sleep(0.05)
    return json.loads(out.read_text())["session_state_entries"]


def test_typing_sentences_does_not_grow_the_session_state(tmp_path, monkeypatch):
    out = tmp_path / "split.json"
    monkeypatch.setenv("AP_BENCH_SPLIT_OUT", str(out))
    sentences = student_sentences(19, TYPED + 2)

    async def student(server) -> tuple[list[int], list[str]]:
        session = Session(server.url, timeout_s=120)
        try:
            opened = await session.open({"text": "The teacher opens the page."})
            assert not opened.failure, opened.failure
            box = session.widget_id("text_area", "Your text")
            assert box is not None
            for text in sentences[:2]:  # the first reruns may add the page's own keys
                assert not (await session.rerun({box: text})).failure
            os.kill(server.pid, signal.SIGUSR2)  # from here on, one size per run
            deadline = time.monotonic() + 10
            while _entries(server.pid, out):  # the zeroing has been handled once a write comes back empty
                assert time.monotonic() < deadline, "the split server did not zero its counters"
            for text in sentences[2:]:
                run = await session.rerun({box: text})
                assert not run.failure, run.failure
            return _entries(server.pid, out), [(kind, getattr(widget, "label", "")) for kind, widget in session.widgets]
        finally:
            await session.close()

    with running_server("split", "test-session-state.log") as server:
        entries, kinds = run_async(student(server))
    assert "bidi_component" in [kind for kind, _ in kinds], "the in-browser view of the layer's heads was not drawn"
    assert len(entries) == TYPED
    # one entry may come and go between runs (a value a page sets on some reruns); growth by one per sentence
    # (six sentences: six more entries) is what this pins
    assert max(entries) - min(entries) <= 1, f"the session state grew with the sentences typed: {entries}"
