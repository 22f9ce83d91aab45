"""Train live's "Induction heads" tab through AppTest: the shipped run drawn from its files, a short live run on the
long-work lane, a bad setting's message. The numbers are checked against the checkpoint's card and the snapshot
file read here independently."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from apptest_helpers import ROOT, assert_clean, decode, messages, open_page, run_until
from engine.analysis.induction import phase_change_step
from engine.jobs import get_queue

NAME = "induction-2l-attn-only"
TAB = {"train_tab": "Induction heads"}


@pytest.fixture(autouse=True)
def no_jobs_left():
    yield
    get_queue().shutdown()


def card() -> dict:
    return json.loads((ROOT / "assets" / "checkpoints" / f"{NAME}.json").read_text(encoding="utf-8"))["metadata"]


def snapshots() -> dict:
    return json.loads((ROOT / "assets" / "snapshots" / f"{NAME}.json").read_text(encoding="utf-8"))


def chart(at, title: str) -> dict:
    for element in at.get("plotly_chart"):
        spec = json.loads(element.proto.spec)
        text = (spec["layout"].get("title") or {}).get("text", "")
        if text.startswith(title):
            return spec
    raise AssertionError(f"no chart titled {title!r}")


def test_the_tab_shows_the_shipped_run_without_training() -> None:
    at = open_page("train", **TAB)
    assert_clean(at)
    assert not at.error, messages(at.error)
    metrics = card()["final_metrics"]
    shown = {m.label: m.value for m in at.metric}
    assert shown["ICL score (end)"] == f"{metrics['in-context-learning score (nats)']:+.2f} nats"
    assert shown["Phase change at step"] == f"{metrics['phase change step']:,}"
    head = metrics["induction head"].split(".")[1]
    assert shown[f"Induction head L1 H{head}"] == f"{metrics['prefix-matching score']:.2f}"
    prev = metrics["previous-token head"].split(".")[1]
    assert shown[f"Previous-token head L0 H{prev}"] == f"{metrics['previous-token score']:.2f}"
    # the curves are the snapshot file's, with the phase change marked
    doc = snapshots()
    learning = chart(at, "Loss and in-context learning")
    icl = next(t for t in learning["data"] if t["name"] == "ICL score")
    np.testing.assert_allclose(decode(icl["y"]), doc["curves"]["icl"])
    np.testing.assert_allclose(decode(icl["x"]), doc["curves"]["step"])
    assert learning["layout"]["shapes"][0]["x0"] == metrics["phase change step"]
    matching = chart(at, "Prefix matching (layer 1) score of each head")
    assert [t["name"] for t in matching["data"]] == ["L1 H0", "L1 H1", "L1 H2", "L1 H3"]
    line = decode(matching["data"][int(head)]["y"])
    assert line[-1] == pytest.approx(metrics["prefix-matching score"], abs=1e-3) and line[0] < 0.2
    # the loss by position, before and after
    positions = chart(at, "Loss at each position")
    before, after = (decode(t["y"]) for t in positions["data"])
    assert np.nanmean(after[56:63]) < np.nanmean(before[56:63]) - 1.5
    captions = " ".join(c.value for c in at.caption)
    assert "Before the phase change" in captions and "After the phase change" in captions
    assert at.button(key="train_ind_start") is not None
    assert not [b for b in at.button if b.key == "train_start"]  # the other tab's content does not run


def test_the_own_model_tab_stays_the_default() -> None:
    at = open_page("train")
    assert_clean(at)
    assert at.button(key="train_start") is not None
    assert not [b for b in at.button if b.key == "train_ind_start"]


def test_a_short_live_run_is_drawn_as_your_run() -> None:
    at = open_page("train", **TAB, train_ind_steps=200)
    at.button(key="train_ind_start").click().run()
    sid = at.session_state["_session_id"]
    live = []  # each poll while it trains: were its curves so far drawn?

    def ended(a) -> bool:
        if get_queue().status(sid, "induction").active:
            live.append(any(c.value.startswith("Your run so far") for c in a.caption))
        return get_queue().status(sid, "induction").finished or bool(a.error)

    run_until(at, ended, what="the run to end")
    at.run()  # the page after the job: the polling fragment reruns the whole page once it ends
    assert_clean(at)
    assert not at.error, messages(at.error)
    status = get_queue().status(sid, "induction")
    assert status is not None and status.status == "done"
    assert at.session_state["train_ind_shown"] == "Your run"
    points = status.result.points
    assert [p.step for p in points] == list(range(0, 201, 20))
    assert any(live), "the run's curves were never drawn while it trained"
    shown = {m.label: m.value for m in at.metric}
    assert shown["ICL score (end)"] == f"{points[-1].icl:+.2f} nats"
    phase = phase_change_step(np.array([p.step for p in points]), np.array([p.icl for p in points]))
    assert shown["Phase change at step"] == ("none yet" if phase is None else f"{phase:,}")
    captions = " ".join(c.value for c in at.caption)
    assert ("At the end (step 200)" in captions) == (phase is None)
    learning = chart(at, "Loss and in-context learning")
    icl = next(t for t in learning["data"] if t["name"] == "ICL score")
    np.testing.assert_allclose(decode(icl["y"]), [p.icl for p in points])


def test_a_bad_setting_gets_a_message_and_starts_nothing() -> None:
    at = open_page("train", **TAB, train_ind_lr=0.5)
    at.button(key="train_ind_start").click().run()
    assert_clean(at)
    assert any("The learning rate must be from 0.0001 to 0.03, got 0.5." in m for m in messages(at.error))
    assert get_queue().status(at.session_state["_session_id"], "induction") is None


def test_every_bad_setting_reads_as_sentences_starting_with_a_capital() -> None:
    """The message started in lower case ("the learning rate must be …; the seed …"): each problem is a sentence."""
    at = open_page("train", **TAB, train_ind_lr=-1.0, train_ind_seed=-3, train_ind_steps=7)
    at.button(key="train_ind_start").click().run()
    assert_clean(at)
    shown = messages(at.error)
    assert len(shown) == 1, shown
    sentences = [s for s in re.split(r"(?<=\.) (?=[A-Z])", shown[0].strip())]
    assert [s.split(" must ")[0] for s in sentences] == ["Steps", "The learning rate", "The seed"], sentences
    assert all(s.endswith(".") for s in sentences), sentences
    assert "got -1.0." in sentences[1] and "got -3." in sentences[2] and "got 7." in sentences[0]
    assert get_queue().status(at.session_state["_session_id"], "induction") is None


def test_the_explore_examples_name_the_shipped_models_heads() -> None:
    import engine
    from app.controls.examples import EXAMPLES, INDUCTION, PREV

    model = engine.load(NAME)
    for example in EXAMPLES[NAME]:
        trace = engine.trace(model, example.text)
        assert not trace.notices and len(trace.tokens.strings) == 17  # <bos> + 16 letters, each its own token
        pattern = trace.pattern(example.layer)  # [H, T, T]
        if example.phenomenon == INDUCTION:  # second-copy letter at q reads q − 7, the letter after the first copy
            score = [np.mean([pattern[h, q, q - 7] for q in range(9, 17)]) for h in range(trace.n_heads)]
        else:
            assert example.phenomenon == PREV
            score = [np.mean([pattern[h, q, q - 1] for q in range(1, 17)]) for h in range(trace.n_heads)]
        assert int(np.argmax(score)) == example.head and max(score) > 0.5, (example.phenomenon, score)
