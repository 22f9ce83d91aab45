"""Students who press Enter while the model is busy share its next forward pass (app.runtime.traces.LANE).

The test holds MiniLM's lock, so the first request waits inside the model; four more sentences arrive meanwhile
and must run as one padded pass once the lock is free. Each student gets the trace of their own sentence (the
same numbers as ``engine.trace`` alone, to float rounding) from the shared cache, an empty text gets its own
error, a long text never waits to be batched, and a causal toggle keeps its own mask.
"""

from __future__ import annotations

import threading
import time

import numpy as np

import engine
from app.runtime import models, traces
from app.runtime.request import TraceRequest
from engine.records import EmptyInputError
from tests.job_helpers import wait_until
from tests.thread_helpers import call_in_thread

WAIT_S = 60.0
SENTENCES = [
    "The lane test's first sentence waits inside the model.",
    "A second student types about the river bank at dawn.",
    "Third: the cat that the dog chased ran up the tree.",
    "Fourth, and a little longer than the others so that the batch is padded for real.",
    "Fifth one.",
]


def _ask(request: TraceRequest, out: dict, name: str) -> threading.Thread:
    return call_in_thread(lambda: traces.get_trace(request), out, name)


def _until(predicate, what: str) -> None:
    wait_until(predicate, timeout=WAIT_S, what=what)


def test_sentences_sent_while_the_model_is_busy_run_as_one_pass_and_each_gets_its_own_trace() -> None:
    model = models.served_model("minilm", models.policy())
    stamp = str(time.monotonic_ns())  # new sentences: the per-process cache must miss
    requests = [TraceRequest("minilm", f"{text} {stamp}", None, 128) for text in SENTENCES]
    empty = TraceRequest("minilm", "   \u200b ", None, 128)
    out: dict = {}
    before = traces.LANE.calls
    with model.lock:  # the first request takes the lane and waits here, inside Model.run
        threads = [_ask(requests[0], out, "r0")]
        _until(lambda: traces.LANE._running, "the first request did not start")
        for i, request in enumerate(requests[1:], start=1):
            threads.append(_ask(request, out, f"r{i}"))
        threads.append(_ask(empty, out, "empty"))
        _until(lambda: len(traces.LANE._queue) == len(requests), "the others did not queue")
    for thread in threads:
        thread.join(WAIT_S)
    assert traces.LANE.calls - before == 2 and traces.LANE.batches[-2:] == [1, len(requests)]  # the rest: one call
    assert isinstance(out["empty"], EmptyInputError)
    for i, request in enumerate(requests):
        got = out[f"r{i}"]
        alone = engine.trace(model, request.text, max_tokens=128)
        assert got.tokens == alone.tokens
        for layer in range(alone.n_layers):
            np.testing.assert_allclose(got.pattern(layer), alone.pattern(layer), atol=2e-5, rtol=0)
        assert traces.get_trace(request) is got  # the shared cache holds it: a second student gets it as is


def test_a_long_text_never_waits_in_the_lane() -> None:
    """Over ~128 tokens a text runs alone (with every core when it is the only pass)."""
    request = TraceRequest(
        "minilm", ("A long text for one pass of its own. " * 20) + str(time.monotonic_ns()), None, 512
    )
    before = traces.LANE.calls
    trace = traces.get_trace(request)
    assert traces.LANE.calls == before and len(trace.tokens) > 128


def test_a_causal_toggle_keeps_its_own_mask_in_the_lane() -> None:
    """A mask the model does not make by itself is never merged into a padded pass (trace_many goes one by one)."""
    model = models.served_model("minilm", models.policy())
    request = TraceRequest("minilm", f"The causal toggle goes alone {time.monotonic_ns()}.", True, 128)
    trace = traces.get_trace(request)
    assert trace.causal is True
    assert float(np.triu(trace.pattern(0), 1).sum()) == 0.0
    alone = engine.trace(model, request.text, causal=True, max_tokens=128)
    np.testing.assert_allclose(trace.pattern(5), alone.pattern(5), atol=2e-5, rtol=0)
