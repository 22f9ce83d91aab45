"""A server's first seconds: the launcher's prefetch answers the landing page, and its sentence box comes first.

``python -m app`` starts a child process that traces the landing page's request while the server starts
(engine.prefetch, tested with a real child in tests/unit/test_prefetch.py). Here the child's answer is put in
place directly (a real MiniLM trace computed in this process, a distinct object) and this process is made to
look cold (its model "not loaded yet", an empty trace cache): Explore's first run must take its card and trace
from the answer without loading the model here (so ``app.state.landing_request`` is the request the page
really makes), other requests must not be answered from it, and once the model is loaded here it is not asked
any more. Explore draws its sentence box before the model load starts, so the page is usable while it runs.
"""

from __future__ import annotations

import pytest
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.testing.v1 import AppTest

import engine
from app.controls import pickers
from app.runtime import caches, models, traces
from app.runtime.request import TraceRequest
from app.state import K, landing_request
from app.views.lessons.data import model_vocabulary
from apptest_helpers import APP, TIMEOUT, assert_clean, assert_head_and_grid, messages
from engine import prefetch
from engine.cache import TraceCache
from engine.records import ModelCard


def _answer(model_id: str, text: str, max_tokens: int):
    model = engine.load(model_id)  # a model of its own: the answer's trace is not one this process's cache holds
    trace = engine.trace(model, text, causal=False, max_tokens=max_tokens)
    card = ModelCard(spec=model.spec, default_causal=False, max_positions=int(model.max_positions))
    return prefetch.Answer(card, (model_id, text, False, max_tokens), trace, "cpu", None)


@pytest.fixture
def cold(monkeypatch):
    """This process as on a cold start with a prefetch of the landing request answered; yields the answer."""
    model_id, text, max_tokens = landing_request()
    answer = _answer(model_id, text, max_tokens)
    early = prefetch.Prefetch(proc=None)
    early.model_id = model_id
    early.result.set_result(answer)
    monkeypatch.setattr(prefetch, "_current", early)
    monkeypatch.setattr(models, "_loaded", set())  # "not loaded here yet" (the model cache itself is left alone)
    monkeypatch.setattr(caches, "TRACES", TraceCache(max_bytes=64 * 2**20))
    monkeypatch.setattr(traces, "_warm", [True])  # no warm-up thread loading it meanwhile
    yield answer


def test_explores_first_run_takes_the_card_and_trace_from_the_prefetch_without_loading_the_model(cold, monkeypatch):
    loads = []
    real = models.served_model
    monkeypatch.setattr(models, "served_model", lambda *a: loads.append(a) or real(*a))
    box_drawn_before_load = []

    def card(model_id):
        ids = get_script_run_ctx().shared.widget_ids_this_run.snapshot()
        box_drawn_before_load.append(any(i.endswith(f"-{K.text}") for i in ids))
        return real_card(model_id)

    real_card = models.get_card
    monkeypatch.setattr(pickers, "get_card", card)  # where the page asks for the card
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run()
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert box_drawn_before_load and box_drawn_before_load[0], "the sentence box must come before the model load"
    assert any("animal" in label for label in assert_head_and_grid(at).rows)
    key = traces.request_key(TraceRequest(*cold.key), (None, models.policy()))
    assert caches.TRACES.get(key, lambda: None) is cold.trace  # the page's request is the one prefetched
    assert loads == [], "the model was loaded here although the prefetch answered"
    assert at.text_area(key=K.text).value == cold.key[1]
    assert at.toggle(key=K.causal).value is False  # the mask starts at the card's default


def test_another_request_is_not_answered_from_the_prefetch(cold):
    other = TraceRequest(cold.key[0], "Another sentence than the landing page's.", False, cold.key[3])
    got = traces.get_trace(other)
    assert got is not cold.trace and got.tokens != cold.trace.tokens  # traced here, by this process's model
    mask_on = TraceRequest(*cold.key[:2], True, cold.key[3])  # same text, the other mask: not what was traced
    assert traces.get_trace(mask_on) is not cold.trace and traces.get_trace(mask_on).causal is True


def test_once_the_model_is_loaded_here_the_prefetch_is_not_asked(cold, monkeypatch):
    models.served_model("minilm", models.policy())
    models._loaded.add(("minilm", models.policy()))
    monkeypatch.setattr(prefetch, "answer", lambda *a, **k: pytest.fail("the prefetch was asked"))
    landing = TraceRequest(*cold.key)
    assert traces.get_trace(landing) is not cold.trace
    assert models.get_card("minilm") == cold.card  # the same card, computed from the model here
    assert model_vocabulary("minilm") is None


def test_no_prefetch_at_all_loads_as_before(monkeypatch):
    monkeypatch.setattr(prefetch, "_current", None)
    monkeypatch.setattr(models, "_loaded", set())
    model_id, text, max_tokens = landing_request()
    assert models.early_answer(model_id) is None
    card = models.get_card(model_id)
    assert card.spec.id == model_id and card.default_causal is False
