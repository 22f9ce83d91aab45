"""A page's downloads built on click hold the request, never the trace (issue 19: memory back after the work).

Explore's CSV and JSON buttons used to close over the trace; Streamlit keeps a button's callable for the session,
so every session kept its own traces alive after the shared cache had dropped them (five writers on a
15,000-character prompt: ~240 MB that no cache counted)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app.runtime import caches
from app.runtime.heads import block_loader
from app.runtime.request import TraceRequest
from apptest_helpers import APP, TIMEOUT, assert_clean

TEXT = "The downloads of this sentence must not keep its trace alive once the cache lets it go."


@pytest.mark.parametrize("page", ["explore", "heads", "step_by_step"])
def test_a_page_s_downloads_and_callbacks_do_not_keep_the_trace_alive(page):
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["text"] = TEXT
    at.run()
    if page != "explore":
        at.switch_page(f"views/{page}/page.py")
        at.run()
    assert_clean(at)
    assert any(b.label.startswith("Download") for b in at.get("download_button"))
    traces = [
        v
        for v, _size in caches.TRACES._entries.values()
        if getattr(v, "tokens", None) is not None and "downloads" in " ".join(v.tokens.strings)
    ]
    assert traces, "the page's trace is in the shared cache"
    alive = weakref.ref(traces[0])
    del traces
    caches.TRACES.clear()
    caches.MAPS.clear()
    caches.FIGURES.clear()
    gc.collect()
    assert alive() is None, "something in the session (a download button's callable) still holds the trace"


def test_a_block_loader_gives_the_same_block_again_after_the_cache_dropped_it():
    request = TraceRequest("minilm", TEXT, None, 128)
    load = block_loader(request)
    first = load()
    weights = np.array(first.pattern(2, 3))
    caches.TRACES.clear()
    again = load()
    assert again is not first  # traced anew
    np.testing.assert_allclose(again.pattern(2, 3), weights, atol=1e-6)
