"""The Lessons page through AppTest: every step renders, its links open the right page in the right state,
and a knowledge check reveals the real head's numbers (compared with ``engine.trace`` directly).

The lesson names heads and sentences, never answers; ``test_each_predict_check_still_shows_what_it_says``
re-measures that each named head's top key is the one the step's explanation talks about, so a retrained
checkpoint that changes a head fails here instead of misleading a class.
"""

from __future__ import annotations

from urllib.parse import parse_qs

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from app.views.lessons.lesson_file import Choice, Predict
from app.views.lessons.plan import IT_SENTENCE, QKV_HEAD, SOFTMAX_SCORES, STEPS
from apptest_helpers import APP, ROOT, assert_clean, decode, figures, messages, open_page

N = len(STEPS)


def open_lessons(**state) -> AppTest:
    at = open_page("lessons", **state)
    assert_clean(at)
    return at


def links(at: AppTest) -> list[tuple[str, dict[str, str]]]:
    """(page url path, query parameters) of every page link on the page."""
    out = []
    for element in at.get("page_link"):
        query = {k: v[0] for k, v in parse_qs(element.proto.query_string, keep_blank_values=True).items()}
        out.append((element.proto.page, query))
    return out


def url_path(page: str) -> str:
    """The page's URL path (Explore is the default page: "")."""
    return "" if page == "explore.py" else page.removesuffix(".py")


def engine_row(check: Predict) -> tuple[list[str], np.ndarray]:
    """The check's row computed here from the engine (not through the app's services)."""
    model = engine.load(check.model)
    if check.model == "bahdanau-translator":
        tr = engine.trace(model, check.text, max_tokens=32)
        targets = [s.lower() for s in tr.target.strings]
        return list(tr.source.strings), np.asarray(tr.alignment[targets.index(check.word)])
    tr = engine.trace(model, check.text, causal=check.causal, max_tokens=128)
    strings = [s.lower() for s in tr.tokens.strings]
    query = [i for i, s in enumerate(strings) if s == check.word][check.occurrence]
    return list(tr.key_tokens.strings), np.asarray(tr.pattern(check.layer, check.head)[query])


def test_next_walks_every_step_and_each_renders_its_links():
    at = open_lessons()
    for k, step in enumerate(STEPS, start=1):
        assert at.session_state["lesson_step"] == k
        assert at.query_params.get("lesson_step") in (str(k), [str(k)])
        assert any(f"Step {k} of {N}" in str(p.proto.text) for p in at.get("progress"))
        assert [h.value for h in at.header] == [f"{k}. {step.title}"]
        assert links(at) == [(url_path(link.page), link.params) for link in step.links]
        assert at.button(key="lesson_prev_top").disabled == (k == 1)
        assert at.button(key="lesson_next_top").disabled == (k == N)
        if k < N:
            at.button(key="lesson_next_top").click().run()
            assert_clean(at)
    at.button(key="lesson_prev_bottom").click().run()
    assert at.session_state["lesson_step"] == N - 1


def test_the_url_opens_a_step():
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page(str(ROOT / "app" / "views" / "lessons" / "page.py"))
    at.query_params["lesson_step"] = "4"
    at.run()
    assert_clean(at)
    assert at.session_state["lesson_step"] == 4
    assert [h.value for h in at.header] == [f"4. {STEPS[3].title}"]


@pytest.mark.parametrize("index", [i for i, s in enumerate(STEPS) if isinstance(s.check, Predict)])
def test_a_predict_check_reveals_the_engines_weights(index):
    step = STEPS[index]
    check = step.check
    keys, weights = engine_row(check)
    at = open_lessons(lesson_step=index + 1)
    assert not figures(at) or all(f["data"][0]["type"] != "bar" for f in figures(at))  # nothing revealed yet
    wrong = next(i for i in range(len(keys)) if i != int(np.argmax(weights)))
    at.pills(key=f"lesson_pick_{step.id}").set_value(wrong).run()
    assert_clean(at)
    bars = [f for f in figures(at) if f["layout"].get("title", {}).get("text", "").startswith("Where")]
    assert len(bars) == 1
    np.testing.assert_allclose(decode(bars[0]["data"][0]["y"]), weights, atol=1e-6)
    top = int(np.argmax(weights))
    text = " ".join(messages(at.markdown))
    assert f"You picked **{keys[wrong]}** (weight {weights[wrong]:.3f})" in text
    assert f"the head's top key is **{keys[top]}** (weight {weights[top]:.3f})" in text
    assert "0 right" in " ".join(str(p.proto.text) for p in at.get("progress"))
    assert "1 of" in " ".join(str(p.proto.text) for p in at.get("progress"))
    at.button(key=f"lesson_again_{step.id}").click().run()  # try again: the pick is asked for afresh
    assert at.pills(key=f"lesson_pick_{step.id}").value is None


@pytest.mark.parametrize("index", [i for i, s in enumerate(STEPS) if isinstance(s.check, Predict)])
def test_each_predict_check_still_shows_what_it_says(index):
    check = STEPS[index].check
    keys, weights = engine_row(check)
    assert keys[int(np.argmax(weights))].lower() == check.expect


def test_a_choice_check_explains_its_answer_and_counts_in_the_score():
    index = next(i for i, s in enumerate(STEPS) if isinstance(s.check, Choice))
    step = STEPS[index]
    at = open_lessons(lesson_step=index + 1)
    assert not any(step.check.explain in str(c.value) for c in at.caption)
    at.radio(key=f"lesson_choice_{step.id}").set_value(step.check.answer).run()
    assert_clean(at)
    assert any(step.check.explain in str(c.value) for c in at.caption)
    assert "Right" in " ".join(str(m.value) for m in at.markdown)
    progress = " ".join(str(p.proto.text) for p in at.get("progress"))
    assert f"1 of {N} answered, 1 right" in progress


def test_the_softmax_demo_is_the_softmax_of_the_scaled_scores():
    index = next(i for i, s in enumerate(STEPS) if s.demo == "softmax")
    at = open_lessons(lesson_step=index + 1)
    at.slider(key="lesson_softmax_scale").set_value(2.0).run()
    assert_clean(at)
    fig = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("softmax"))
    scores = 2.0 * np.array(SOFTMAX_SCORES)
    expected = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    np.testing.assert_allclose(decode(fig["data"][0]["y"]), expected, atol=1e-9)


def test_the_steps_demo_lists_the_engines_numbers():
    index = next(i for i, s in enumerate(STEPS) if s.demo == "steps")
    at = open_lessons(lesson_step=index + 1)
    frame = next(d.value for d in at.dataframe if "softmax weight" in d.value.columns)
    tr = engine.trace(engine.load("minilm"), IT_SENTENCE, causal=False, max_tokens=128)
    query = [s.lower() for s in tr.tokens.strings].index("it")
    row = tr.pattern(*QKV_HEAD)[query]
    np.testing.assert_allclose(frame["softmax weight"].to_numpy(), np.sort(row)[::-1][:5], atol=1e-6)


def test_the_translator_link_opens_the_head_where_the_crossing_shows():
    """Issue 20: lesson 8's link opened layer 0 head 0 in a fresh tab, where no crossing shows. Its layer and
    head, opened as a new tab would, must show it: the row that writes *voiture* reads *car* most and the row
    that writes *rouge* reads *red* (rows are named by the word written, not the word read in)."""
    from apptest_helpers import layer_shown

    step = next(s for s in STEPS if s.id == "cross")
    link = next(link for link in step.links if link.params.get("model") == "tiny-translator")
    assert {"layer", "head", "explore_block"} <= set(link.params)
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update(link.params)
    at.run()
    assert_clean(at)
    assert at.selectbox(key="explore_block").value == "cross"
    shown = layer_shown(at)
    rows = [label.split(" ", 1)[1] for label in shown.rows]
    cols = [label.split(" ", 1)[1] for label in shown.header["k"]]
    weights = shown.z
    assert rows[:3] == ["la", "voiture", "rouge"], rows
    reads = {word: cols[int(np.argmax(weights[rows.index(word)]))] for word in ("voiture", "rouge")}
    assert reads == {"voiture": "car", "rouge": "red"}
    assert rows.index("voiture") < rows.index("rouge") and cols.index("car") > cols.index("red")  # the crossing


@pytest.mark.parametrize("index", [i for i, s in enumerate(STEPS) if isinstance(s.check, Predict)])
def test_a_predict_check_names_its_query_word(index):
    """Issue 20: the prompt said "it" whatever the query word was (she, rouge, ...)."""
    step = STEPS[index]
    at = open_lessons(lesson_step=index + 1)
    label = at.pills(key=f"lesson_pick_{step.id}").label
    assert f"“{step.check.word}”" in label and " it " not in f" {label} ".replace(f"“{step.check.word}”", "")
