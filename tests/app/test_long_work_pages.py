"""The pages' long work through the long-work lane (engine.jobs), with AppTest: fine-tuning and "Measure on this
server" on the Pretraining page, "Write more" on Explore. With the lane held busy the page says where the job
is in the queue and offers Stop, another session's Explore still runs, and once the lane frees up each
page draws its result (AppTest does not tick polling fragments: ``run_until`` reruns until it is there)."""

from __future__ import annotations

import json
import threading

import pytest

from apptest_helpers import assert_clean, figures, messages, open_page, run_app, run_until
from engine.jobs import get_queue


@pytest.fixture()
def busy_lane():
    """Every worker of the process's lane held by another session's job until the test sets the event."""
    queue, gate = get_queue(), threading.Event()

    def hold():
        while not gate.wait(0.01):
            yield None

    for i in range(queue.workers):
        queue.submit(f"other-{i}", "test", hold, estimate_s=30)
    yield gate
    gate.set()
    queue.shutdown()


@pytest.fixture(autouse=True)
def empty_lane():
    yield
    get_queue().shutdown()


def queued_message(at) -> str:
    return next((m.replace("**", "") for m in messages(at.info) if "queued, position" in m), "")


def has_button(at, key: str) -> bool:
    return any(b.key == key for b in at.button)


def test_fine_tuning_waits_in_the_queue_can_be_stopped_and_then_runs(busy_lane):
    at = open_page("pretraining", pretraining_tab="Fine-tuning changes attention")
    at.slider(key="finetune_steps").set_value(50)
    at.button(key="finetune_go").click().run()
    assert_clean(at)
    assert queued_message(at).startswith("Fine-tuning: queued, position 1, starts in about "), messages(at.info)
    assert has_button(at, "finetune_stop") and not at.metric

    explore = run_app(text="The cat sat on the mat.")  # another student, meanwhile: not held up by the lane
    assert_clean(explore)
    assert explore.get("bidi_component") and get_queue().running_count() == get_queue().workers

    at.button(key="finetune_stop").click().run()
    assert any("Fine-tuning stopped: cancelled" in m for m in messages(at.info)), messages(at.info)

    at.button(key="finetune_go").click().run()
    busy_lane.set()
    run_until(at, lambda a: any(m.label == "Accuracy after" for m in a.metric), what="the fine-tuning result")
    assert_clean(at)
    assert not queued_message(at) and not has_button(at, "finetune_stop")
    at.run()  # the result stays with the session
    assert any(m.label == "Accuracy after" for m in at.metric)


def test_measuring_waits_in_the_queue_then_draws_the_times(busy_lane):
    at = open_page("pretraining", pretraining_tab="The cost of attention")
    at.select_slider(key="cost_n").set_value(32)
    at.select_slider(key="cost_d").set_value(16).run()
    at.button(key="cost_measure").click().run()
    assert_clean(at)
    assert queued_message(at).startswith("Measuring: queued, position 1"), messages(at.info)
    busy_lane.set()
    run_until(at, lambda a: any(f["data"][0]["type"] == "bar" for f in figures(a)), what="the measured times")
    assert_clean(at)
    again = open_page("pretraining", pretraining_tab="The cost of attention", cost_n=32, cost_d=16)
    again.button(key="cost_measure").click().run()  # another session, same size: this hour's measurement
    assert any(f["data"][0]["type"] == "bar" for f in figures(again)) and not queued_message(again)


def _chart(at) -> dict | None:
    charts = [c for c in at.get("plotly_chart") if c.key == "write_chart"]
    return json.loads(charts[0].proto.spec) if charts else None


def test_write_more_waits_in_the_queue_then_reruns_from_the_cache(busy_lane):
    from app.runtime import caches

    at = run_app(model="tiny-gpt-stories", text="lily found a red ball in the park")
    at.session_state["explore_tab"] = "Write more"
    at.run()
    at.button(key="FormSubmitter:write_form-Write more").click().run()
    assert_clean(at)
    assert queued_message(at).startswith("Writing: queued, position 1"), messages(at.info)
    assert _chart(at) is None and has_button(at, "write_stop")
    busy_lane.set()
    run_until(at, lambda a: _chart(a) is not None, what="the generated text's chart")
    assert_clean(at)
    assert any(":orange-background[" in m.value for m in at.markdown)
    misses = caches.TRACES.stats()["misses"]
    at.session_state["head"] = 1  # another head (the view's, told with the next run): from the cached trace
    at.run()
    assert_clean(at)
    assert _chart(at) is not None and caches.TRACES.stats()["misses"] == misses
    assert "Head 1" in _chart(at)["layout"]["title"]["text"] or "head 1" in _chart(at)["layout"]["title"]["text"]
