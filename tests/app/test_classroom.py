"""The Class page and the student panel through AppTest: a teacher starts a class, students join by link,
questions are pushed, answered and revealed. Each test has its own class store (AP_DATA_DIR in a tmp dir);
the teacher and each student are separate AppTest sessions, as separate browsers are."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app.state import DEFAULT_TEXT, Look
from app.store import get_store
from app.views.classroom.keys import ROOM
from apptest_helpers import APP, TIMEOUT, assert_clean, decode, messages, open_page, shown


@pytest.fixture(autouse=True)
def own_store(monkeypatch, tmp_path):
    monkeypatch.delenv("AP_DATABASE_URL", raising=False)
    monkeypatch.setenv("AP_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def start_class() -> tuple[AppTest, str]:
    teacher = open_page("classroom")
    teacher.button(key="class_start").click().run()
    assert_clean(teacher)
    code, _token = teacher.session_state[ROOM.teacher]
    return teacher, code


def student(room: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["room"] = room
    at.run()
    assert_clean(at)
    return at


def joined(teacher: AppTest) -> int:
    teacher.run()
    return int(teacher.metric[0].value)


def answer_chart(teacher: AppTest) -> dict:
    (chart,) = teacher.get("plotly_chart")
    return json.loads(chart.proto.spec)


def push_choice(teacher: AppTest, prompt: str, options: str, right: int) -> None:
    teacher.text_input(key="class_q_prompt").input(prompt)
    teacher.text_area(key="class_q_options").input(options)
    teacher.number_input(key="class_q_right").set_value(right)
    teacher.button(key="class_ask_choice").click().run()
    assert_clean(teacher)


def tab(at: AppTest, label: str):
    """The teacher's question form tab named ``label``."""
    (found,) = [t for t in at.tabs if t.label == label]
    return found


def current_question_id(at: AppTest) -> str:
    picks = [w.key for w in at.radio if (w.key or "").startswith("class_pick_")]
    assert picks, "no question on the student's screen"
    return picks[0].removeprefix("class_pick_")


def test_start_a_class_join_answer_and_reveal():
    teacher, code = start_class()
    assert any(code in str(m.value) for m in teacher.markdown)
    assert [c.value for c in teacher.code][0] == f"/?room={code}"  # the join link opens the first page
    assert teacher.main.get("image"), "no QR code"
    assert joined(teacher) == 0

    alice, bob = student(code), student(code.lower())
    assert "you are in" in " ".join(messages(alice.caption))
    assert joined(teacher) == 2

    push_choice(teacher, "Which vector is compared with the query?", "the keys\nthe values\nthe queries", 1)
    qid = current_question_id(alice.run())
    alice.radio(key=f"class_pick_{qid}").set_value(0).run()
    alice.button(key=f"class_send_{qid}").click().run()
    alice.radio(key=f"class_pick_{qid}").set_value(2).run()  # changed before the reveal: still one answer
    alice.button(key=f"class_send_{qid}").click().run()
    bob.run()
    bob.radio(key=f"class_pick_{qid}").set_value(0).run()
    bob.button(key=f"class_send_{qid}").click().run()
    assert_clean(alice), assert_clean(bob)

    teacher.run()
    assert answer_chart(teacher)["data"][0]["x"] == [1, 0, 1]
    assert "2 of 2 answered" in " ".join(messages(teacher.caption))
    teacher.button(key=f"class_reveal_{qid}").click().run()
    assert_clean(teacher)
    assert "The answer: **the keys**" in " ".join(messages(teacher.success))
    bob.run()
    assert "Right: **the keys**" in " ".join(messages(bob.success))
    alice.run()
    assert "You said the queries. The answer: **the keys**" in " ".join(messages(alice.info))
    assert not alice.get("radio"), "a revealed question takes no more answers"


def test_a_which_token_question_is_answered_by_the_model():
    teacher, code = start_class()
    pupil = student(code)
    teacher.button(key="class_ask_predict").click().run()  # MiniLM's pronoun head, "it" in the default sentence
    assert_clean(teacher)
    pupil.run()
    asked = " ".join(messages(pupil.markdown))
    assert "which token does “it” look at most?" in asked
    assert "all-MiniLM-L6-v2, layer" in asked and "minilm," not in asked  # the model's name, not its id
    qid = current_question_id(pupil)
    options = pupil.radio(key=f"class_pick_{qid}").options
    pupil.radio(key=f"class_pick_{qid}").set_value(2).run()  # what the radio shows third: "animal"
    pupil.button(key=f"class_send_{qid}").click().run()
    assert shown(options[2]) == "animal"
    teacher.button(key=f"class_reveal_{qid}").click().run()
    assert "The answer: **animal**" in " ".join(messages(teacher.success))  # read from the model's weights
    assert "Right: **animal**" in " ".join(messages(pupil.run().success))


def test_forged_codes_and_bad_questions_get_clear_messages():
    teacher, code = start_class()
    for forged in ("ZZZZZZ", "<script>x</script>", "x" * 5000):
        at = student(forged)
        assert any("Could not join the class" in m and "no class with this code" in m for m in messages(at.warning))
        assert not at.get("radio")
    push_choice(teacher, "", "a\nb", 0)
    assert "Write the question." in " ".join(messages(teacher.warning))
    push_choice(teacher, "Q?", "only one", 0)
    assert "needs 2 to 8 options" in " ".join(messages(teacher.warning))
    payload = "<b>bold</b> [link](http://example.com) $x^2$"
    push_choice(teacher, payload, "<i>a</i>\n![img](http://example.com/a.png)", 0)
    pupil = student(code)
    assert payload in messages(pupil.markdown)[-1] or any(payload in m for m in messages(pupil.markdown))
    teacher.text_input(key="class_p_word").input("nowhere")
    teacher.button(key="class_ask_predict").click().run()
    assert "not one of the sentence's tokens" in " ".join(messages(teacher.warning))


def test_an_unreachable_store_is_a_calm_message(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("AP_DATA_DIR", str(blocker / "data"))
    teacher = open_page("classroom")
    teacher.button(key="class_start").click().run()
    assert_clean(teacher)
    assert "cannot be reached" in " ".join(messages(teacher.warning))
    pupil = student("ABCDEF")
    assert "cannot be reached" in " ".join(messages(pupil.warning))


def chart(at: AppTest, key: str) -> dict:
    """The Plotly figure drawn with ``key`` (its element id ends with the key)."""
    found = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(key)]
    assert len(found) == 1, (key, [c.proto.id for c in at.get("plotly_chart")])
    return found[0]


def test_after_the_reveal_the_teacher_sees_the_heads_row_next_to_the_answers():
    teacher, code = start_class()
    pupil = student(code)
    teacher.button(key="class_ask_predict").click().run()  # MiniLM layer 3 head 1, from "it"
    qid = current_question_id(pupil.run())
    pupil.radio(key=f"class_pick_{qid}").set_value(2).run()
    pupil.button(key=f"class_send_{qid}").click().run()
    teacher.run()
    assert not [c for c in teacher.get("plotly_chart") if c.proto.id.endswith(f"class_row_{qid}")], "before the reveal"
    teacher.button(key=f"class_reveal_{qid}").click().run()
    assert_clean(teacher)
    answers, row = chart(teacher, f"class_answers_{qid}"), chart(teacher, f"class_row_{qid}")
    assert answers["data"][0]["y"] == row["data"][0]["y"]  # one bar per token, in the same order, side by side
    assert answers["data"][0]["x"][2] == 1 and sum(answers["data"][0]["x"]) == 1
    weights = decode(row["data"][0]["x"])
    from app.runtime.heads import attention_block
    from app.runtime.request import TraceRequest
    from app.runtime.rooms import PREDICT_READ_TOKENS
    from app.runtime.traces import get_trace

    attention = attention_block(get_trace(TraceRequest("minilm", DEFAULT_TEXT, None, PREDICT_READ_TOKENS)))
    query = [s.strip() for s in attention.tokens.strings].index("it")
    np.testing.assert_allclose(weights, attention.pattern(3, 1)[query], atol=1e-4)  # the real head's row
    assert shown(row["data"][0]["y"][int(np.argmax(weights))]).endswith("animal")
    assert "layer 3 head 1" in row["layout"]["title"]["text"]


def test_a_replaced_question_keeps_its_results_in_the_history():
    teacher, code = start_class()
    alice, bob = student(code), student(code)
    push_choice(teacher, "First question?", "red\ngreen", 2)
    first = current_question_id(alice.run())
    for at, pick in ((alice, 1), (bob, 1)):
        at.run().radio(key=f"class_pick_{first}").set_value(pick).run()
        at.button(key=f"class_send_{first}").click().run()
    push_choice(teacher, "Second question?", "yes\nno\nmaybe", 0)
    second = current_question_id(alice.run())
    alice.radio(key=f"class_pick_{second}").set_value(0).run()
    alice.button(key=f"class_send_{second}").click().run()
    teacher.run()
    assert_clean(teacher)
    assert chart(teacher, f"class_answers_{second}")["data"][0]["x"] == [1, 0, 0]
    assert chart(teacher, f"class_past_answers_{first}")["data"][0]["x"] == [0, 2]  # still there, unchanged
    assert [shown(e.label) for e in teacher.expander if "First" in e.label] == ["First question? · 2 answered"]
    assert "The answer (not revealed to the class): **green**" in " ".join(messages(teacher.caption))
    push_choice(teacher, "Third question?", "a\nb", 0)
    labels = [shown(e.label) for e in teacher.expander if "question" in e.label]
    assert labels == ["Second question? · 1 answered", "First question? · 2 answered"]  # the latest first


def test_a_right_to_left_question_keeps_its_answer_count_outside_its_words_in_the_history():
    """A Hebrew prompt in an earlier question's label: without isolates the browser's bidi algorithm pulled
    " · 1" into the right-to-left run ("… vector? 1 · שלום answered"); isolated, the count stays after it."""
    teacher, code = start_class()
    pupil = student(code)
    push_choice(teacher, "Which vector? שלום", "the keys\nthe values", 1)
    qid = current_question_id(pupil.run())
    pupil.radio(key=f"class_pick_{qid}").set_value(0).run()
    pupil.button(key=f"class_send_{qid}").click().run()
    push_choice(teacher, "Next?", "a\nb", 0)
    teacher.run()
    assert_clean(teacher)
    label = next(e.label for e in teacher.expander if "שלום" in e.label)
    assert label.startswith("\u2068") and label.endswith("\u2069 · 1 answered"), label  # FSI prompt PDI, then the count
    assert shown(label) == "Which vector? שלום · 1 answered"


@pytest.mark.parametrize("value", ["x'; alert(1); '", "a b", "<script>", "a; Path=/; Domain=evil", "é", "x" * 201])
def test_a_cookie_value_is_checked_before_it_reaches_the_script(value):
    from app.views.classroom.browser_cookie import write_cookie

    with pytest.raises(ValueError):
        write_cookie("ap_browser", value, 60)


def test_which_head_is_this_shows_the_heads_map_to_everyone_and_the_model_knows_the_answer():
    teacher, code = start_class()
    pupil = student(code)
    tab(teacher, "Which head is this?").number_input(key="class_h_layer").set_value(
        2
    )  # MiniLM layer 2 head 5 on the default sentence
    tab(teacher, "Which head is this?").number_input(key="class_h_head").set_value(5)
    teacher.button(key="class_ask_head").click().run()
    assert_clean(teacher)
    pupil.run()
    assert_clean(pupil)
    asked = " ".join(messages(pupil.markdown))
    # the model's name (not its id "minilm") and one sentence: no "tired.”. Which" after the quoted text
    assert (
        "all-MiniLM-L6-v2 read “The animal didn't cross the street because it was too tired.”: which head made "
        "this map?" in asked
    ), asked
    qid = current_question_id(pupil)
    options = [shown(o) for o in pupil.radio(key=f"class_pick_{qid}").options]
    assert len(options) == 4 and len(set(options)) == 4 and "layer 2 head 5" in options
    seen = chart(pupil, f"class_map_{qid}")  # the student's screen shows the map, not the head's name
    from app.runtime.heads import attention_block
    from app.runtime.request import TraceRequest
    from app.runtime.rooms import PREDICT_READ_TOKENS
    from app.runtime.traces import get_trace

    attention = attention_block(get_trace(TraceRequest("minilm", DEFAULT_TEXT, None, PREDICT_READ_TOKENS)))
    np.testing.assert_allclose(
        np.asarray(decode(seen["data"][0]["z"]), dtype=float).reshape(attention.n_queries, -1),
        attention.pattern(2, 5),
        atol=1e-4,
    )  # the real head's map
    assert "head 5" not in json.dumps(seen["layout"])
    right = options.index("layer 2 head 5")
    pupil.radio(key=f"class_pick_{qid}").set_value(right).run()
    pupil.button(key=f"class_send_{qid}").click().run()
    teacher.run()
    assert chart(teacher, f"class_answers_{qid}")["data"][0]["x"][right] == 1
    assert chart(teacher, f"class_class_map_{qid}"), "the projector shows the map beside the answers"
    teacher.button(key=f"class_reveal_{qid}").click().run()
    assert "The answer: **layer 2 head 5**" in " ".join(messages(teacher.success))
    assert "Right: **layer 2 head 5**" in " ".join(messages(pupil.run().success))


def test_which_head_is_this_refuses_a_head_the_model_does_not_have():
    teacher, _code = start_class()
    tab(teacher, "Which head is this?").number_input(key="class_h_layer").set_value(40)
    teacher.button(key="class_ask_head").click().run()
    assert_clean(teacher)
    assert "This model has layers 0–5 and heads 0–11." in " ".join(messages(teacher.warning) + messages(teacher.error))


def test_which_head_is_this_map_names_tokens_without_numbers_and_the_answers_have_a_caption():
    """The teacher's map labels every token with its own word (a repeated one as "the (2)"), with no index that
    could be read as an answer's number, upright and smaller past 16 tokens; the answer bars say what they count."""
    from app.views.classroom.room_panel import QUESTION_MAP_TICK_PX

    teacher, _code = start_class()
    text = "the cat saw the dog and the bird and then the cat ran away from the big dog"  # whole words in MiniLM
    teacher.text_input(key="class_h_text").input(text)
    teacher.button(key="class_ask_head").click().run()
    assert_clean(teacher)
    (qid,) = {
        c.proto.id.rsplit("class_class_map_", 1)[1] for c in teacher.get("plotly_chart") if "class_map_" in c.proto.id
    }
    fig = chart(teacher, f"class_class_map_{qid}")
    expected, seen = [], {}
    for word in ["[CLS]", *text.split(), "[SEP]"]:  # the k-th appearance of a word: "word (k)"
        seen[word] = seen.get(word, 0) + 1
        expected.append(word if seen[word] == 1 else f"{word} ({seen[word]})")
    assert len(expected) == 20
    assert fig["layout"]["xaxis"]["ticktext"] == expected == list(fig["data"][0]["x"])  # every one, no "0."
    assert fig["layout"]["yaxis"]["ticktext"] == expected
    assert fig["layout"]["xaxis"]["tickangle"] == -90  # past 16 tokens: upright, in a smaller type
    assert fig["layout"]["xaxis"]["tickfont"]["size"] == QUESTION_MAP_TICK_PX
    answers = chart(teacher, f"class_answers_{qid}")
    assert [label.split(". ", 1)[0] for label in answers["data"][0]["y"]] == ["1", "2", "3", "4"]
    assert any("Each bar is one answer" in c.value and "how many students" in c.value for c in teacher.caption)


def test_the_projector_never_shows_the_control_link_unless_the_teacher_asks():
    """Presenter mode: no element carries the ``?teacher=`` link (a photo of the screen would give the class away)
    until the teacher turns on its switch; the default view keeps it in its folded box."""
    teacher = open_page("classroom", **{Look.present: True})
    teacher.button(key=ROOM.start).click().run()
    assert_clean(teacher)
    code, token = teacher.session_state[ROOM.teacher]
    secret = f"teacher={code}-{token}"

    def showing() -> list[str]:
        kinds = ("code", "markdown", "caption", "text", "info", "warning", "error", "success")
        return [str(e.value) for kind in kinds for e in teacher.get(kind) if token in str(e.value)]

    assert not showing(), showing()
    assert "hidden on the projector" in " ".join(messages(teacher.caption))
    teacher.toggle(key=ROOM.show_link).set_value(True).run()
    assert_clean(teacher)
    assert [c.value for c in teacher.code if token in c.value] == [f"/classroom?{secret}"]
    teacher.toggle(key=ROOM.show_link).set_value(False).run()
    assert not showing()
    teacher.toggle(key=Look.present).set_value(False).run()  # the teacher's own screen: the link in its box
    assert [c.value for c in teacher.code if token in c.value] == [f"/classroom?{secret}"]


class Clock:
    """The class store's clock, set by the test: a time limit runs out without waiting for it."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def countdowns(at: AppTest) -> list[str]:
    return [h.proto.body for h in at.get("html") if "ap-countdown" in h.proto.body]


def test_a_timed_question_counts_down_closes_on_time_and_the_teacher_reopens_closes_and_resets_it():
    teacher, code = start_class()
    clock = Clock()
    get_store().clock = clock  # the store this process's pages use (AP_DATA_DIR of this test)
    alice, bob = student(code), student(code)
    teacher.number_input(key=ROOM.q_seconds).set_value(30)
    push_choice(teacher, "Which vector is compared with the query?", "the keys\nthe values", 1)
    qid = current_question_id(alice.run())
    (shown_to_alice,) = countdowns(alice)
    assert 'data-left="30.0"' in shown_to_alice and "Answers close in <b>30</b> s" in shown_to_alice
    assert len(countdowns(teacher.run())) == 1 and "answered · live" in " ".join(messages(teacher.caption))
    alice.radio(key=f"class_pick_{qid}").set_value(0).run()
    alice.button(key=f"class_send_{qid}").click().run()
    bob.run()

    clock.now += 30  # the time is up
    for pupil, said in ((alice, "Your answer is in: **the keys**"), (bob, "You did not answer in time")):
        pupil.run()
        assert_clean(pupil)
        info = " ".join(messages(pupil.info))
        assert "This question is closed" in info and said in info, info
        assert not pupil.get("radio") and not countdowns(pupil)
    teacher.run()
    assert "1 of 2 answered · closed: no more answers" in " ".join(messages(teacher.caption))
    assert answer_chart(teacher)["data"][0]["x"] == [1, 0]  # nothing already in is lost
    assert not countdowns(teacher)

    teacher.button(key=f"{ROOM.close}{qid}").click().run()  # Reopen: no time limit now
    assert_clean(teacher)
    bob.run()
    bob.radio(key=f"class_pick_{qid}").set_value(1).run()
    bob.button(key=f"class_send_{qid}").click().run()
    assert_clean(bob)
    assert not countdowns(bob)
    assert answer_chart(teacher.run())["data"][0]["x"] == [1, 1]
    assert teacher.button(key=f"{ROOM.close}{qid}").label == "Close"
    teacher.button(key=f"{ROOM.close}{qid}").click().run()
    assert "This question is closed" in " ".join(messages(alice.run().info))

    teacher.button(key=f"{ROOM.reset}{qid}").click().run()  # asks first
    assert "Clear the 2 answers to this question?" in " ".join(messages(teacher.warning))
    teacher.button(key=f"{ROOM.reset}no_{qid}").click().run()
    assert answer_chart(teacher)["data"][0]["x"] == [1, 1]
    teacher.button(key=f"{ROOM.reset}{qid}").click().run()
    teacher.button(key=f"{ROOM.reset}yes_{qid}").click().run()
    assert_clean(teacher)
    assert answer_chart(teacher)["data"][0]["x"] == [0, 0]
    assert "0 of 2 answered · closed" in " ".join(messages(teacher.caption))
