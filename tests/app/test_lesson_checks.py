"""The lesson editor's knowledge checks through AppTest (issue 21): the editor changed only multiple-choice questions;
a teacher now adds, changes and removes a check of each kind a lesson file holds (choice, predict, look) with the
file's fields, the real model refuses a check a student could not answer (with a message naming what to fix), and
the checks come back unchanged from the downloaded file, the file opened again and the lesson saved in the store.

The models are the offline ones: MiniLM (6 layers of 12 heads) and the scene captioner, on the built-in lesson's
own sentence and scene. Each test has its own class store (AP_DATA_DIR in a temporary folder).
"""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from test_lesson_editor import LESSONS, add_view, downloads, draft, exported  # noqa: F401 — the shared fixture
from test_lesson_links import open_link
from test_lessons import engine_row

from app.runtime.rooms import class_store
from app.state import K
from app.state import Look as Shown
from app.store.lessons import LessonStore
from app.views.lessons.check_editor import kind_of
from app.views.lessons.draft import ADD_KINDS, WRITE_TAB
from app.views.lessons.keys import Draft
from app.views.lessons.lesson_file import Choice, Lesson, Look, Predict, read_lesson, write_lesson
from app.views.lessons.plan import LESSON
from apptest_helpers import assert_clean, messages, open_page

SENTENCE = "The animal didn't cross the street because it was too tired."
LOOK = next(step.check for step in LESSON.steps if isinstance(step.check, Look))  # a word the captioner writes


@pytest.fixture(autouse=True)
def own_store(monkeypatch, tmp_path):
    monkeypatch.delenv("AP_DATABASE_URL", raising=False)
    monkeypatch.setenv("AP_DATA_DIR", str(tmp_path / "data"))


def editor_with_steps(n: int) -> AppTest:
    """The Lessons page's editor on a draft of ``n`` views of the Positional page (no check yet)."""
    at = open_page("positional", **{Draft.add_open: True})
    for k in range(n):
        add_view(at, title=f"View {k + 1}")
    at.switch_page(LESSONS)
    at.run()
    assert_clean(at)
    return at


def fill(at: AppTest, sid: str, kind: str, **fields) -> AppTest:
    """Pick the step's kind of check (a rerun draws its fields), type ``fields`` ({key prefix: value}), save."""
    at.radio(key=Draft.edit_kind + sid).set_value(kind).run()
    assert_clean(at)
    for prefix, value in fields.items():
        key = prefix + sid
        if isinstance(value, int):
            at.number_input(key=key).set_value(value)
        elif prefix in (Draft.edit_model, Draft.edit_captioner, Draft.edit_causal):
            at.selectbox(key=key).set_value(value)
        elif prefix in (Draft.edit_options, Draft.edit_text, Draft.edit_explain):
            at.text_area(key=key).input(value)
        else:
            at.text_input(key=key).input(value)
    at.button(key=Draft.edit_save + sid).click().run()
    assert_clean(at)
    return at


def said(at: AppTest) -> str:
    return " ".join(messages(at.warning) + messages(at.success))


def test_each_kind_of_check_is_added_changed_removed_and_comes_back_unchanged(downloads):  # noqa: F811
    at = editor_with_steps(3)
    one, two, three = (step.id for step in draft(at).steps)
    fill(
        at,
        one,
        "predict",
        **{
            Draft.edit_question: "Layer 3 head 1: which token does it look at?",
            Draft.edit_model: "minilm",
            Draft.edit_text: SENTENCE,
            Draft.edit_word: "it",
            Draft.edit_layer: 3,
            Draft.edit_head: 1,
            Draft.edit_causal: "off",
            Draft.edit_expect: "animal",
            Draft.edit_explain: "The pronoun head.\nIt finds the animal.",
        },
    )
    assert "Step 1 changed." in said(at)
    fill(
        at,
        two,
        "look",
        **{
            Draft.edit_question: "Where does it look?",
            Draft.edit_captioner: LOOK.model,
            Draft.edit_scene: LOOK.scene,
            Draft.edit_word: LOOK.word,
        },
    )
    assert "Step 2 changed." in said(at)
    fill(
        at,
        three,
        "choice",
        **{Draft.edit_question: "Which?", Draft.edit_options: "q\nk\nv", Draft.edit_right: 2},
    )
    checks = [step.check for step in draft(at).steps]
    assert checks == [
        Predict(
            "Layer 3 head 1: which token does it look at?",
            "minilm",
            SENTENCE,
            "it",
            "animal",
            "The pronoun head.\nIt finds the animal.",
            3,
            1,
            False,
            0,
        ),
        Look("Where does it look?", LOOK.model, LOOK.scene, LOOK.word, ""),
        Choice("Which?", ("q", "k", "v"), 1, ""),
    ]

    data = exported(at, downloads)  # the file, opened again, and the saved lesson hold the same checks
    assert b'kind = "predict"' in data and b"causal = false" in data and b'kind = "look"' in data
    assert [s.check for s in read_lesson(data).steps] == checks
    at.button(key=Draft.clear).click().run()
    at.file_uploader(key=Draft.upload).set_value(("checks.toml", data, "application/toml")).run()
    at.button(key=Draft.use_upload).click().run()
    assert_clean(at)
    assert [s.check for s in draft(at).steps] == checks
    at.button(key=Draft.save).click().run()
    lid, _ = at.session_state[Draft.saved]
    assert [s.check for s in read_lesson(LessonStore(class_store()).lesson(lid).body).steps] == checks

    # the fields start from the opened file's checks: a change of one field keeps the others
    fill(at, one, "predict", **{Draft.edit_layer: 0, Draft.edit_head: 2, Draft.edit_word: "street"})
    changed = draft(at).steps[0].check
    assert (changed.layer, changed.head, changed.word, changed.expect) == (0, 2, "street", "animal")
    assert "the head's top key is" in said(at)  # layer 0 head 2 looks at “the”, not the expected “animal”
    fill(at, two, "none")  # removed
    assert draft(at).steps[1].check is None and draft(at).steps[2].check == checks[2]
    alone = draft(at).steps[1]  # the step as the file writes it: no check table left
    assert "\n[steps.check]\n" not in write_lesson(Lesson("One step", (alone,)))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({Draft.edit_layer: 6}, "This model has layers 0–5 and heads 0–11 (the check asks for layer 6 head 1)."),
        ({Draft.edit_head: 12}, "This model has layers 0–5 and heads 0–11"),
        ({Draft.edit_word: "zebra"}, "“zebra” is not one of the sentence's tokens as the model reads it: “[CLS]”,"),
        ({Draft.edit_occurrence: 1}, "“it” is 1 time in the sentence; the occurrence counts from 0, so it is 0 to 0."),
        ({Draft.edit_expect: "zebra"}, "The expected key “zebra” is not one of the keys:"),
        ({Draft.edit_expect: ""}, "Write the expected key token"),
        ({Draft.edit_text: "   "}, "Write the sentence the model reads."),
        ({Draft.edit_question: ""}, "Write the question students are asked."),
    ],
)
def test_a_predict_check_the_model_cannot_answer_is_refused_with_a_message(fields, message):
    at = editor_with_steps(1)
    (sid,) = (step.id for step in draft(at).steps)
    good = {
        Draft.edit_question: "Which token?",
        Draft.edit_model: "minilm",
        Draft.edit_text: SENTENCE,
        Draft.edit_word: "it",
        Draft.edit_layer: 3,
        Draft.edit_head: 1,
        Draft.edit_occurrence: 0,
        Draft.edit_expect: "animal",
    }
    fill(at, sid, "predict", **(good | fields))
    assert f"Step 1: {message}" in said(at)
    assert draft(at).steps[0].check is None  # the draft is unchanged
    fill(at, sid, "predict", **good)  # corrected: saved
    assert isinstance(draft(at).steps[0].check, Predict) and "Step 1 changed." in said(at)


def test_a_look_check_names_the_word_the_captioner_writes():
    at = editor_with_steps(1)
    (sid,) = (step.id for step in draft(at).steps)
    base = {Draft.edit_question: "Where?", Draft.edit_captioner: LOOK.model, Draft.edit_scene: LOOK.scene}
    fill(at, sid, "look", **base, **{Draft.edit_word: "elephant"})
    assert f"The captioner does not write “elephant” for held-out scene {LOOK.scene}: it writes “" in said(at)
    fill(at, sid, "look", **base, **{Draft.edit_word: ""})
    assert "Step 1: Write the word: a word it writes." in said(at)
    fill(at, sid, "choice", **{Draft.edit_question: "Which?", Draft.edit_options: "only one"})
    assert "A question needs 2 to 8 options" in said(at)
    assert draft(at).steps[0].check is None


def test_the_built_in_lessons_model_checks_open_in_the_editor_and_save_unchanged():
    """Every step of the built-in lesson opens in the editor with its check's fields; saving each step as it is
    changes nothing (the fields hold exactly the file's values)."""
    at = open_page("lessons", **{Draft.tab: WRITE_TAB})
    at.button(key=Draft.builtin).click().run()
    assert_clean(at)
    assert draft(at) == LESSON
    for step in LESSON.steps:
        assert at.radio(key=Draft.edit_kind + step.id).value == kind_of(step.check)
        at.button(key=Draft.edit_save + step.id).click().run()
        assert_clean(at)
    assert draft(at) == LESSON


def add_which_token(at: AppTest, word: str, note: str = "") -> AppTest:
    """In the open "Add this view" box: the "which token" question, its word picked by label, then Add."""
    at.radio(key=Draft.add_kind).set_value("predict").run()
    assert_clean(at)
    picker = at.selectbox(key=Draft.add_word)
    picker.select_index(picker.options.index(word))
    at.text_area(key=Draft.add_note).input(note)
    at.button(key=Draft.add).click().run()
    assert_clean(at)
    return at


def test_a_view_of_explore_becomes_a_which_token_check_answered_from_the_trace():
    """Explore on MiniLM layer 3 head 1: "Add this view" asks "which token does this head look at from a word?"
    with the view's model, sentence, layer and head; the word comes from the sentence's tokens. The saved lesson's
    check reveals the engine's own row, and its expected key is that row's argmax."""
    at = open_page("explore", **{Draft.add_open: True, K.layer: 3, K.head: 1})
    assert_clean(at)
    assert at.radio(key=Draft.add_kind).options == list(ADD_KINDS.values())
    assert at.radio(key=Draft.add_kind).value == "choice"  # multiple choice stays the first kind
    at.radio(key=Draft.add_kind).set_value("predict").run()
    # the sentence's tokens as MiniLM reads them ([CLS] and [SEP] left out), a repeated one numbered
    words = ["the", "animal", "didn", "'", "t", "cross", "the (2nd)", "street", "because", "it", "was", "too"]
    assert at.selectbox(key=Draft.add_word).options == [*words, "tired", "."]
    assert "all-MiniLM-L6-v2 (BERT encoder, pretrained), layer 3 head 1" in " ".join(messages(at.caption))
    add_which_token(at, "it", note="The pronoun head.")
    assert "Added as step 1 of your lesson" in said(at)
    (step,) = draft(at).steps
    check = step.check
    assert isinstance(check, Predict)
    assert (check.model, check.text, check.layer, check.head, check.word, check.occurrence, check.causal) == (
        "minilm",
        SENTENCE,
        3,
        1,
        "it",
        0,
        None,
    )
    assert check.question == "Which token does head 3.1 look at from “it”?"
    keys, weights = engine_row(check)  # the engine's own trace, not the app's services
    top = int(np.argmax(weights))
    assert check.expect == keys[top].strip()
    assert step.links[0].page == "explore.py" and step.links[0].params[K.layer] == "3"

    at.switch_page(LESSONS)
    at.run()
    at.button(key=Draft.save).click().run()
    assert_clean(at)
    lid, _ = at.session_state[Draft.saved]
    student = open_link(lesson=lid)
    wrong = next(i for i in range(len(keys)) if i != top)
    (pick,) = [p for p in student.get("button_group") if p.key.startswith("lesson_pick_") and step.id in p.key]
    pick.set_value(wrong).run()
    assert_clean(student)
    text = " ".join(messages(student.markdown))
    assert check.question in text
    assert f"the head's top key is **{keys[top]}** (weight {weights[top]:.3f})" in text


@pytest.mark.parametrize("page", ["heads", "step_by_step"])
def test_heads_and_step_by_step_views_ask_which_token_too(page):
    """The other text pages with one head on screen: the same question, from their layer, head and model."""
    story = "Lily found a red ball in the park. She gave it to Tom."
    at = open_page(page, **{Draft.add_open: True, K.model: "tiny-gpt-stories", K.text: story, K.layer: 1, K.head: 2})
    assert_clean(at)
    add_which_token(at, "she")
    (step,) = draft(at).steps
    check = step.check
    assert step.links[0].page == f"{page}.py"
    assert (check.model, check.text, check.layer, check.head, check.word, check.causal) == (
        "tiny-gpt-stories",
        story,
        1,
        2,
        "she",
        None,
    )
    keys, weights = engine_row(check)  # a decoder: its own (causal) mask
    assert check.expect == keys[int(np.argmax(weights))].strip()


def test_a_repeated_word_keeps_its_occurrence():
    at = open_page("explore", **{Draft.add_open: True, K.layer: 0, K.head: 2})
    add_which_token(at, "the (2nd)")  # “The animal … cross the street”: the second “the”
    check = draft(at).steps[0].check
    assert (check.word, check.occurrence) == ("the", 1)
    keys, weights = engine_row(check)
    assert check.expect == keys[int(np.argmax(weights))].strip()


def test_a_view_that_cannot_ask_which_token_offers_multiple_choice_and_a_forged_one_is_refused():
    # an encoder-decoder on Explore: not a model the predict check reads, so only multiple choice, and why
    at = open_page("explore", **{Draft.add_open: True, K.model: "tiny-translator"})
    assert_clean(at)
    assert not [r for r in at.radio if r.key == Draft.add_kind]
    assert "Multiple choice only: the model on screen (“tiny-translator”)" in " ".join(messages(at.caption))
    at.session_state[Draft.add_kind] = "predict"  # forged: the radio is not there
    at.button(key=Draft.add).click().run()
    assert_clean(at)
    assert "This view cannot ask which token a head looks at: the model on screen" in said(at)
    assert Draft.lesson not in at.session_state or not draft(at).steps

    # MiniLM, its layer locked by the link (no layer picker): a submit without the word picker (forged) and a
    # forged layer the model does not have are refused with a message
    at = open_page("explore", **{Draft.add_open: True, Shown.hide: frozenset({"layer"}), K.layer: 3, K.head: 1})
    assert_clean(at)
    at.session_state[Draft.add_kind] = "predict"
    at.session_state[Draft.add_word] = 0  # the [CLS] token's position: no word of the sentence
    at.button(key=Draft.add).click().run()
    assert_clean(at)
    assert "Pick the word the question asks about among the sentence's words." in said(at)
    at.selectbox(key=Draft.add_word).select_index(at.selectbox(key=Draft.add_word).options.index("it"))
    at.session_state[K.layer] = 9
    at.button(key=Draft.add).click().run()
    assert_clean(at)
    assert "This model has layers 0–5 and heads 0–11 (the check asks for layer 9 head 1)." in said(at)
    assert Draft.lesson not in at.session_state or not draft(at).steps

    # a sentence longer than a lesson file's question holds: multiple choice only, and why
    at = open_page("explore", **{Draft.add_open: True, K.text: "word " * 100})
    assert not [r for r in at.radio if r.key == Draft.add_kind]
    assert "the sentence on screen has 500 characters; a lesson's question holds at most 400" in " ".join(
        messages(at.caption)
    )

    # another page: the box has no such question, and a forged one says so
    at = open_page("positional", **{Draft.add_open: True})
    assert not [r for r in at.radio if r.key == Draft.add_kind]
    at.session_state[Draft.add_kind] = "predict"
    at.button(key=Draft.add).click().run()
    assert "This view cannot ask which token a head looks at." in said(at)
