"""The Train live page through AppTest. Fragments do not tick here, so each ``at.run()`` plays one poll;
the job itself runs for real in the server-wide job manager, which the tests also read directly."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from apptest_helpers import assert_clean, decode, messages, open_page
from engine.training.budget import TimeBudget
from engine.training.job_settings import build_model, build_task, validate_settings
from engine.training.jobs import get_manager

TINY_LONG = dict(task="reverse", n_layers=1, n_heads=2, d_model=16, batch_size=8, steps=20_000, snapshot_every=1)


@pytest.fixture(autouse=True)
def no_jobs_left():
    yield
    get_manager().shutdown()


def job_of(at):
    return get_manager().get(at.session_state["_session_id"])


def wait_done(at, timeout: float = 120.0):
    job = job_of(at)
    deadline = time.monotonic() + timeout
    while not job.progress().finished:
        assert time.monotonic() < deadline, "the job did not finish"
        get_manager().heartbeat(job.session_id)  # the page would, once a second
        time.sleep(0.2)
    return job


def test_page_renders_with_an_estimate():
    at = open_page("train")
    assert_clean(at)
    assert at.title[0].value == "Train live"
    assert not at.error, messages(at.error)
    task = build_task("reverse")
    params = sum(p.numel() for p in build_model(validate_settings({}), task).parameters())  # the model itself
    assert any(f"**{params:,} parameters**" in m.value and "ms per step" in m.value for m in at.markdown)
    assert any("the limit per job is" in m.value for m in at.markdown)
    assert not at.button(key="train_start").disabled and at.button(key="train_reset").disabled
    assert not any(b.key in ("train_pause", "train_stop") for b in at.button)  # they come with a job
    assert any("press **Start**" in m for m in messages(at.info))


def test_start_trains_and_offers_the_model():
    at = open_page("train", train_steps=60, train_n_layers=1)
    at.button(key="train_start").click().run()
    assert_clean(at)
    job = job_of(at)
    assert job is not None and job.settings.steps == 60 and job.settings.n_layers == 1
    wait_done(at)
    at.run()
    assert_clean(at)
    assert any("Done: 60 steps" in m.value for m in at.markdown)
    # the attention grid, then loss, accuracy, head scores (reverse has an ideal pattern), all Plotly
    assert len(at.get("plotly_chart")) == 4
    curves = [json.loads(c.proto.spec) for c in at.get("plotly_chart")[1:]]
    assert all(c["layout"]["height"] >= 200 for c in curves)
    grid = json.loads(at.get("plotly_chart")[0].proto.spec)
    # one heatmap of tiles: 1 layer × (4 heads + the ideal pattern), labelled on the x axis
    assert len(grid["data"]) == 1 and grid["layout"]["xaxis"]["ticktext"] == ["H0", "H1", "H2", "H3", "ideal"]
    # "try it": the model's answer next to the right one (reverse of the typed letters)
    at.text_input(key="train_try").input("a b c d e f").run()
    assert_clean(at)
    assert any("Correct answer: **f e d c b a**" in m.value for m in at.markdown)
    labels = [b.proto.label for b in at.get("download_button")]
    assert any("Download the model" in label for label in labels), labels


def test_open_in_explore_offers_the_model_to_this_session_only():
    at = open_page("train", train_steps=30, train_n_layers=1)
    at.button(key="train_start").click().run()
    wait_done(at)
    at.run()
    at.button(key="train_explore").click().run()
    assert_clean(at)
    model_id = at.session_state["model"]
    assert model_id.startswith("trained-reverse-")
    # the Explore page ran with it: its picker lists it and the heatmap shows the probe's tokens
    picker = at.selectbox(key="model")
    assert picker.value == model_id and picker.options[0].startswith("Trained here: reverse, 1 layer × 4 heads")
    assert not at.error, messages(at.error)
    assert at.get("bidi_component"), "Explore drew nothing"
    other = open_page("explore")
    assert not any(o.startswith("Trained here") for o in other.selectbox(key="model").options)


def test_pause_resume_stop_buttons():
    at = open_page("train", train_steps=20_000, train_n_layers=1, train_d_model=16, train_batch_size=8)
    at.button(key="train_start").click().run()
    job = job_of(at)
    deadline = time.monotonic() + 60
    while job.progress().status != "running" or job.progress().step < 1:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    at.run()
    at.button(key="train_pause").click().run()
    assert job.status == "paused"
    assert any("Paused at step" in m.value for m in at.markdown)
    at.button(key="train_resume").click().run()
    assert job.status == "running"
    at.button(key="train_stop").click().run()
    assert job.wait(10) and job.status == "stopped"
    at.run()
    assert any("Stopped at step" in m.value for m in at.markdown)
    at.button(key="train_reset").click().run()
    assert job_of(at) is None
    assert_clean(at)


def test_polling_is_the_heartbeat():
    at = open_page("train", train_steps=20_000, train_n_layers=1, train_d_model=16, train_batch_size=8)
    at.button(key="train_start").click().run()
    job = job_of(at)
    before = job.last_heartbeat
    time.sleep(0.2)
    at.run()
    assert job.last_heartbeat > before


@pytest.mark.parametrize(
    "state, message",
    [
        (dict(train_lr=5.0), "learning rate must be a finite number from 1e-05 to 0.1"),
        (dict(train_steps=10**6), "steps must be a whole number from 1 to 20,000"),
        (dict(train_steps=-3), "steps must be a whole number"),
        (dict(train_seed=-1), "seed must be a whole number"),
        (
            dict(train_task="stories", train_n_layers=4, train_d_model=256, train_n_heads=8, train_batch_size=256),
            "MiB of activations",
        ),
    ],
)
def test_invalid_settings_show_a_message_and_start_nothing(state, message):
    at = open_page("train", **state)
    assert_clean(at)
    assert any(message in m for m in messages(at.error)), messages(at.error)
    at.button(key="train_start").click().run()
    assert_clean(at)
    assert job_of(at) is None
    assert any(message in m for m in messages(at.error))


def test_switching_the_causal_mask_off_warns():
    at = open_page("train", train_causal=False)
    assert_clean(at)
    assert any("Without the causal mask" in m for m in messages(at.warning))


def test_time_lapse_moves_the_grid_and_the_rule_on_the_curves():
    at = open_page("train", train_steps=60, train_n_layers=1)
    at.button(key="train_start").click().run()
    job = wait_done(at)
    at.run()
    at.toggle(key="train_follow").set_value(False).run()
    assert_clean(at)
    slider = at.select_slider(key="train_timelapse")
    steps = [s.step for s in job.progress().snapshots]
    assert [int(o) for o in slider.options] == steps
    middle = steps[len(steps) // 2]
    slider.set_value(middle).run()
    assert_clean(at)
    assert any(f"at step {middle}." in c.value for c in at.caption)
    grid = json.loads(at.get("plotly_chart")[0].proto.spec)
    trace = job.progress().snapshots[len(steps) // 2].probe_trace
    expected = trace.pattern(0, 1).astype(float)
    expected[np.triu(np.ones_like(expected, dtype=bool), k=1)] = np.nan  # hidden by the causal mask: grey
    mosaic = decode(grid["data"][0]["z"])
    n = expected.shape[0]
    head_1 = mosaic[:n, (n + 1) : (n + 1) + n]  # tiles are separated by one empty column
    np.testing.assert_allclose(head_1, expected, atol=1e-6)
    for chart in at.get("plotly_chart")[1:]:  # every curve carries the rule at that step (a dashed line shape)
        shapes = json.loads(chart.proto.spec)["layout"]["shapes"]
        assert len(shapes) == 1 and shapes[0]["x0"] == shapes[0]["x1"] == middle, shapes


@pytest.fixture()
def fake_estimate(monkeypatch):
    """The server-wide manager with a fixed step time and the default 5-minute limit (whatever the machine's load)."""
    manager = get_manager()
    monkeypatch.setattr(manager, "budget", TimeBudget(max_seconds=300))

    def per_step(seconds: float) -> None:
        monkeypatch.setattr(manager, "estimator", lambda settings: seconds)

    return per_step


def test_settings_over_the_time_limit_are_refused_with_what_fits(fake_estimate):
    fake_estimate(0.05)  # 20,000 steps: about 17 min
    at = open_page("train", train_steps=20_000)
    assert_clean(at)
    assert any("about **17 min**" in m.value and "the limit per job is **5 min**" in m.value for m in at.markdown)
    refusal = [m for m in messages(at.error) if "the limit per job is 5 min" in m]
    assert refusal and "try at most 6,000 steps" in refusal[0], messages(at.error)
    assert at.button(key="train_start").disabled
    fake_estimate(0.01)  # the page's estimate fits (200 s) …
    at.run()
    assert not at.button(key="train_start").disabled and not at.error, messages(at.error)
    fake_estimate(0.05)  # … but by the click the server measures 17 min: Start itself refuses
    at.button(key="train_start").click().run()
    assert_clean(at)
    assert job_of(at) is None and get_manager().active_count() == 0
    assert [m for m in messages(at.error) if "try at most 6,000 steps" in m] == refusal  # once, not twice
    at.number_input(key="train_steps").set_value(6000).run()  # what it suggested
    assert not at.button(key="train_start").disabled and not at.error, messages(at.error)


def test_a_queued_job_shows_when_it_starts(fake_estimate, monkeypatch):
    fake_estimate(0.01)  # the job ahead: 200 s
    manager = get_manager()
    monkeypatch.setattr(manager, "max_running", 1)
    ahead = manager.submit("another-session", TINY_LONG)
    at = open_page("train")
    at.button(key="train_start").click().run()
    assert_clean(at)
    assert job_of(at).progress().status == "queued"
    info = [m for m in messages(at.info) if m.startswith("Training: queued, position **1**")]
    assert info and "starts in about **" in info[0], messages(at.info)
    manager.stop(ahead.session_id)
    assert ahead.wait(10)


def test_a_run_slower_than_its_estimate_says_so_and_stops_at_the_steps_that_fit(fake_estimate, monkeypatch):
    """The estimate admits 2,000 steps (1 ms a step); the run's own steps cost 500 ms each (an injected step
    cost): while it trains the page says it will stop early and where, and it stops there."""
    fake_estimate(1e-3)
    monkeypatch.setattr(get_manager(), "pace", lambda snap: 0.5)
    at = open_page("train", train_steps=2000, train_n_layers=1, train_d_model=16, train_batch_size=8)
    at.button(key="train_start").click().run()
    job = job_of(at)
    deadline = time.monotonic() + 60
    while not job.progress().notice:
        assert time.monotonic() < deadline, "the run did not measure its own pace"
        time.sleep(0.05)
    if not job.progress().finished:
        at.run()
        early = [m for m in messages(at.warning) if m.startswith("This run stops early")]
        assert early and "it stops at step 600" in early[0], messages(at.warning)
    wait_done(at)
    at.run()
    assert_clean(at)
    status = [m.value for m in at.markdown if m.value.startswith("Status:")]
    assert status and "Stopped at step 600" in status[0] and "2,000 steps would take about 17 min" in status[0], status
    assert at.text_input(key="train_try") is not None  # what it learned is kept: the model can be tried
