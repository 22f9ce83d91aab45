"""Lesson files (app/views/lessons/lesson_file.py, issue 21, 3): TOML written by hand, read back equal by Python's own tomllib;
the built-in lesson is such a file; a bad file gets a message that names what is wrong, never a traceback.

The reference for the writer is ``tomllib`` (the standard library's TOML 1.0 parser), not our reader.
"""

from __future__ import annotations

import random
import tomllib

import pytest

from app.views.lessons.lesson_file import (
    MAX_BYTES,
    MAX_STEPS,
    Choice,
    Lesson,
    LessonFileError,
    Link,
    Look,
    Predict,
    Step,
    file_name,
    read_lesson,
    toml_string,
    write_lesson,
)

TRICKY = [
    'He said "it" twice',
    "back\\slash \\n not a newline",
    'ends with a quote"',
    '"""three quotes"""',
    "tab\tinside",
    "unicode: αβγ → √d · 日本語 🙂",
    "line one\nline two\n\nafter a blank line",
    "\nstarts with a newline",
    "ends with a newline\n",
    "a ''' and a # and = and [steps]",
    "",
    "   spaces kept   ",
]


@pytest.mark.parametrize("multiline", [False, True])
def test_every_string_reads_back_through_tomllib(multiline):
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(0, 0x250)] + ['"', "\\", "\n", "\r", "\t", "\u2028", "é", "🙂", "\x7f"]
    samples = TRICKY + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(400)]
    for text in samples:
        assert tomllib.loads(f"x = {toml_string(text, multiline)}\n")["x"] == text, repr(text)


def lesson_with(**changes) -> Lesson:
    """A lesson using every feature of the format (values any page reads)."""
    steps = (
        Step(
            "intro",
            TRICKY[0],
            TRICKY[6],
            (
                Link("explore.py", TRICKY[1], {"text": TRICKY[5] + "\n" + TRICKY[0], "layer": "3", "head": "1"}),
                Link("heads.py", "All heads", {"heads_tab": "Per-head metrics"}),
            ),
        ),
        Step("q", "", "Only a note, no title", (), Choice(TRICKY[3], ("one", TRICKY[4], "three"), 2, TRICKY[8])),
        Step(
            "p",
            "Predict",
            "",
            (Link("step_by_step.py", "Step", {"step_query": "10"}),),
            Predict(
                "Where does **it** look?",
                "minilm",
                "The animal didn't cross the street because it was too tired.",
                "it",
                "animal",
                "",
                3,
                1,
                False,
                0,
            ),
        ),
        Step("demo", "Softmax", "", (), None, "softmax"),
        Step("look", "Captions", "", (), Look("Where does it look for **circle**?", "scene-captioner", 12, "circle")),
    )
    fields = {"title": 'My "first" lesson', "steps": steps, "description": "For week 3\nof the course."} | changes
    return Lesson(**fields)


def test_a_lesson_round_trips_through_its_file():
    lesson = lesson_with()
    text = write_lesson(lesson)
    assert read_lesson(text, check_values=False) == lesson
    assert read_lesson(text.encode("utf-8")) == lesson  # the values are ones the pages read
    doc = tomllib.loads(text)  # readable by any TOML reader: the structure a person sees
    assert doc["format"] == 1 and doc["steps"][1]["check"]["answer"] == 3  # answers count from 1 in the file
    assert doc["steps"][2]["check"]["kind"] == "predict" and "animal" not in str(doc["steps"][2]["check"].get("answer"))
    assert write_lesson(read_lesson(text)) == text


def test_the_built_in_lesson_is_a_lesson_file_read_by_the_same_code():
    from app.views.lessons.keys import BUILTIN_FILE
    from app.views.lessons.plan import STEPS

    data = BUILTIN_FILE.read_bytes()
    lesson = read_lesson(data)  # every link value through its page's reader, every model in the catalog
    assert lesson.steps == STEPS and len(STEPS) >= 10
    assert read_lesson(write_lesson(lesson)) == lesson
    checks = [step.check for step in lesson.steps]
    assert all(check is not None for check in checks)
    assert "answer" not in str(
        [s.get("check") for s in tomllib.loads(data.decode())["steps"] if s.get("check", {}).get("kind") == "predict"]
    )


def test_file_names_come_from_the_title():
    assert file_name(Lesson("Attention in eleven steps!", ())) == "attention-in-eleven-steps.toml"
    assert file_name(Lesson("«»", ())) == "lesson.toml"


def good() -> str:
    return write_lesson(lesson_with())


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda t: "x" * (MAX_BYTES + 1), f"at most {MAX_BYTES:,} bytes"),
        (lambda t: t.replace("format = 1", "format = 1\nformat = 2"), "not readable TOML"),
        (lambda t: t.replace("format = 1", "format = 2"), "this app reads format = 1"),
        (lambda t: t.replace("format = 1", "fromat = 1"), "unknown key 'fromat'"),
        (lambda t: t.replace('id = "q"', 'id = "q"\nnotes = "x"'), "Step 2: unknown key 'notes'"),
        (lambda t: t.replace('id = "q"', 'id = "intro"'), "Step 2: the id 'intro' is used by an earlier step"),
        (lambda t: t.replace('page = "heads"', 'page = "nowhere"'), "Step 1, link 2: there is no page 'nowhere'"),
        (
            lambda t: t.replace('layer = "3"', 'layr = "3"'),
            "Step 1, link 1: the page explore has no link parameter 'layr'",
        ),
        (lambda t: t.replace('layer = "3"', 'layer = "three"'), "Step 1, link 1: layer = 'three' is not a value"),
        (
            lambda t: t.replace('heads_tab = "Per-head metrics"', 'heads_tab = "Nope"'),
            "heads_tab = 'Nope' is not a value",
        ),
        (lambda t: t.replace('step_query = "10"', 'step_query = "10", room = "ABCDEF"'), "no link parameter 'room'"),
        (
            lambda t: t.replace("answer = 3", "answer = 4"),
            "Step 2, check: answer is the number of the right option, 1 to 3",
        ),
        (lambda t: t.replace('model = "minilm"', 'model = "gpt-17"'), "Step 3, check: there is no model 'gpt-17'"),
        (lambda t: t.replace('kind = "choice"', 'kind = "essay"'), 'kind must be "choice", "predict" or "look"'),
        (lambda t: t.replace("scene = 12", "scene = -1"), "Step 5, check: scene is a held-out scene's number"),
        (lambda t: t.replace('model = "scene-captioner"', 'model = "nope"'), "Step 5, check: there is no model 'nope'"),
        (lambda t: t.replace('options = ["one"', 'options = ["three"'), "two options are the same"),
        (lambda t: t.replace('title = "My \\"first\\" lesson"\n', ""), "The file: title is missing"),
        (lambda t: t.split("\n[[steps]]")[0], "The file: steps is missing"),
    ],
)
def test_a_bad_file_gets_a_message_that_says_what_is_wrong(change, message):
    with pytest.raises(LessonFileError) as caught:
        read_lesson(change(good()).encode("utf-8"))
    assert message in str(caught.value)


def test_bytes_that_are_not_text_and_too_many_steps_are_refused():
    with pytest.raises(LessonFileError, match="not UTF-8 text"):
        read_lesson(b"\xff\xfe\x00title")
    many = Lesson("Long", tuple(Step(f"s{i}", f"Step {i}", "", ()) for i in range(MAX_STEPS + 1)))
    with pytest.raises(LessonFileError, match=f"at most {MAX_STEPS}"):
        read_lesson(write_lesson(many))
    with pytest.raises(LessonFileError, match="control characters"):
        read_lesson('format = 1\ntitle = "a\\u0007b"\n[[steps]]\ntitle = "x"\n')


def _one_link(page: str, **params: str) -> Lesson:
    return Lesson("Links", (Step("s", "Step", "", (Link(f"{page}.py", "Open", params),)),))


@pytest.mark.parametrize("step", ["1", str(MAX_STEPS)])
def test_a_link_to_any_lessons_step_is_read_whatever_this_session_shows(step):
    """A file's link to another lesson's step k is checked against the longest lesson, not against the lesson this
    session happens to show (the URL reader's bound); its id against the id's form."""
    lesson = _one_link("lessons", lesson="AbC_12-x", lesson_step=step)
    assert read_lesson(write_lesson(lesson)) == lesson


@pytest.mark.parametrize(
    "params,message",
    [
        ({"lesson_step": "0"}, "lesson_step = '0' is not a value the page reads"),
        ({"lesson_step": str(MAX_STEPS + 1)}, f"lesson_step = '{MAX_STEPS + 1}' is not a value the page reads"),
        ({"lesson_step": "NaN"}, "lesson_step = 'NaN' is not a value the page reads"),
        ({"lesson": "../x"}, "lesson = '../x' is not a value the page reads"),
    ],
)
def test_a_bad_lessons_link_is_named(params, message):
    with pytest.raises(LessonFileError) as caught:
        read_lesson(write_lesson(_one_link("lessons", **params)))
    assert message in str(caught.value)


def test_hide_in_a_file_names_the_words_a_link_would_drop():
    from app.url_state import BY_NAME

    assert BY_NAME["hide"].read("model,sparkles") == {"model"}  # a link: the unknown word is dropped
    with pytest.raises(LessonFileError, match="controls the app does not have \\(sparkles\\)"):
        read_lesson(write_lesson(_one_link("explore", hide="model,sparkles")))
    lesson = _one_link("explore", hide="model,causal")
    assert read_lesson(write_lesson(lesson)) == lesson


@pytest.mark.parametrize(
    "body",
    [
        "x = " + "[" * 50_000 + "]" * 50_000,  # arrays: the TOML reader runs out of stack
        "x = " + "{a = " * 30_000 + "1" + "}" * 30_000,  # inline tables
        "x" + ".a" * 50_000 + " = 1",  # dotted keys: read, then 50,000 tables deep
        '[[steps]]\ntitle = "t"\ntext' + ".a" * 9 + " = 1",  # just past the limit, where a step's text belongs
    ],
)
def test_a_file_nested_too_deeply_is_named_so(body):
    data = f'format = 1\ntitle = "Deep"\n{body}\n'
    assert len(data.encode()) <= MAX_BYTES
    with pytest.raises(LessonFileError, match="nested too deeply"):
        read_lesson(data)
