"""Free-text questions through AppTest: students send short answers, the teacher's page draws their words, the word
filter holds a rude answer back until the teacher shows it, the teacher hides any answer, and typed markup stays text.
The teacher and each student are separate AppTest sessions, as separate browsers are."""

from __future__ import annotations

import csv
import io
import re

from test_classroom import own_store, start_class, student  # noqa: F401 — own_store: the fixture

from app.state import Look
from app.views.classroom.keys import ROOM
from app.views.classroom.results import answers_csv
from apptest_helpers import assert_clean, messages, open_page, shown

MARKUP = "<b>Keys</b> [queries](http://evil.example) **values**"


def ask_text(teacher, prompt: str) -> None:
    teacher.text_input(key=ROOM.t_prompt).input(prompt)
    teacher.button(key=ROOM.ask_text).click().run()
    assert_clean(teacher)


def send(pupil, text: str) -> str:
    """``pupil`` types ``text`` in "Your answer" and presses "Send my answer"; the question's id."""
    (box,) = [w for w in pupil.run().text_input if (w.key or "").startswith(ROOM.write)]
    assert box.label == "Your answer"
    box.input(text).run()
    qid = box.key.removeprefix(ROOM.write)
    (button,) = [b for b in pupil.button if b.key == f"{ROOM.send}{qid}"]
    assert button.label == "Send my answer"
    button.click().run()
    assert_clean(pupil)
    return qid


def words_on_screen(teacher) -> list[str]:
    """The words chart's labels (HTML-escaped by the page) as the browser shows them, or [] with no chart."""
    import html
    import json

    charts = [json.loads(c.proto.spec) for c in teacher.get("plotly_chart") if "words_" in c.proto.id]
    return [html.unescape(y) for c in charts for y in c["data"][0]["y"]]


def moderate(teacher, text: str) -> None:
    """The teacher presses the Hide / Show button beside ``text`` in the moderation list."""
    buttons = [b for b in teacher.button if (b.key or "").startswith(ROOM.moderate)]
    texts = [shown(str(m.value)) for m in teacher.markdown if " · *" in str(m.value)]
    buttons[[t.startswith(text + " · ") for t in texts].index(True)].click().run()
    assert_clean(teacher)


def test_free_text_answers_fill_the_words_chart_with_moderation_and_literal_text():
    teacher, code = start_class()
    _, token = teacher.session_state[ROOM.teacher]
    ana, bo, cy = student(code), student(code), student(code)
    ask_text(teacher, "What does a query look for?")
    qid = send(ana, "   ")
    assert "Write the answer." in " ".join(messages(ana.warning))  # empty: refused with a message
    send(ana, MARKUP)
    send(bo, "the keys, shit")
    send(cy, "Matching keys")
    assert "teacher reads it before the class sees it" in " ".join(messages(bo.caption))
    assert any(MARKUP in m for m in messages(ana.caption))  # the student's own answer, as typed

    teacher.run()
    assert "3 of 3 answered" in " ".join(messages(teacher.caption))
    # by hand: "keys" in two answers, then A→Z; "b" (a letter) and "the" left out; the flagged answer not counted
    assert words_on_screen(teacher) == ["keys", "evil", "example", "http", "matching", "queries", "values"]
    assert "1 answer hidden until the teacher shows them" in " ".join(messages(teacher.caption))
    sources = [str(m.value).rsplit(" · ", 1)[0] for m in teacher.markdown if " · *" in str(m.value)]
    assert not re.search(r"(?<!\\)[<>\[\]*]", sources[0]), sources[0]  # every markup character escaped
    assert "http:" not in sources[0]  # a word joiner breaks the would-be autolink
    listed = [shown(str(m.value)) for m in teacher.markdown if " · *" in str(m.value)]
    assert listed == [
        f"{MARKUP} · *on screen*",  # the markup as text: escaped markdown, no link, no bold
        "the keys, shit · *held back by the word filter*",
        "Matching keys · *on screen*",
    ]
    assert f"{ROOM.reveal}{qid}" not in {b.key for b in teacher.button}  # no answer to reveal
    assert {f"{ROOM.close}{qid}", f"{ROOM.reset}{qid}"} <= {b.key for b in teacher.button}

    moderate(teacher, "the keys, shit")  # Show
    assert words_on_screen(teacher)[:2] == ["keys", "evil"] and "shit" in words_on_screen(teacher)
    moderate(teacher, MARKUP)  # Hide
    assert words_on_screen(teacher) == ["keys", "matching", "shit"]
    listed = [shown(str(m.value)) for m in teacher.markdown if " · *" in str(m.value)]
    assert [row.rsplit(" · ", 1)[1] for row in listed] == ["*hidden by you*", "*shown by you*", "*on screen*"]

    header, *rows = list(csv.reader(io.StringIO(answers_csv(code, token).decode("utf-8-sig"))))
    assert [(r[2], r[4]) for r in rows] == [
        ("free text", MARKUP),
        ("free text", "the keys, shit"),
        ("free text", "Matching keys"),
    ]


def test_the_projector_prints_no_hidden_answer():
    teacher = open_page("classroom", **{Look.present: True})
    teacher.button(key=ROOM.start).click().run()
    code, _ = teacher.session_state[ROOM.teacher]
    pupil = student(code)
    ask_text(teacher, "One word?")
    send(pupil, "bullshit")
    teacher.run()
    printed = [str(e.value) for kind in ("markdown", "caption", "text") for e in teacher.get(kind)]
    assert not any("bullshit" in p for p in printed) and "bullshit" not in words_on_screen(teacher)
    assert "(8 characters) · *held back by the word filter*" in [shown(p) for p in printed]
