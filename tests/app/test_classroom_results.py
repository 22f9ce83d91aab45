"""The teacher's results to take home through AppTest: a class answers a "which token" question (its answer read from
the model) and a multiple-choice one with a right option; the two CSV files the teacher's buttons make hold every
answer, right or wrong, under pseudonyms, read back with Python's csv module."""

from __future__ import annotations

import csv
import io
import time
from datetime import UTC, datetime

from test_classroom import current_question_id, own_store, push_choice, start_class, student  # noqa: F401 — a fixture

from app.views.classroom.keys import ROOM
from app.views.classroom.results import ANSWER_HEADER, SUMMARY_HEADER, answers_csv, students_csv
from apptest_helpers import assert_clean, shown


def table(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def send(pupil, option: str) -> None:
    """``pupil`` picks the option shown as ``option`` on the question on screen and sends it."""
    qid = current_question_id(pupil.run())
    radio = pupil.radio(key=f"class_pick_{qid}")
    labels = [shown(o) for o in radio.options]
    pupil.radio(key=f"class_pick_{qid}").set_value(labels.index(option)).run()
    pupil.button(key=f"class_send_{qid}").click().run()
    assert_clean(pupil)


def test_the_teachers_csv_files_hold_every_answer_right_or_wrong():
    before = time.time()
    teacher, code = start_class()
    _, token = teacher.session_state[ROOM.teacher]
    ana, bo, _quiet = student(code), student(code), student(code)  # the third never answers
    teacher.button(key="class_ask_predict").click().run()  # MiniLM's pronoun head, "it": the model says "animal"
    assert_clean(teacher)
    send(ana, "animal")
    send(bo, "street")
    push_choice(teacher, "Which vector is compared with the query?", "the keys\n=the values\n-the queries", 1)
    send(bo, "the keys")
    send(ana, "=the values")
    teacher.run()
    assert {b.key for b in teacher.get("download_button")} >= {ROOM.csv_answers, ROOM.csv_students}

    header, *rows = table(answers_csv(code, token))
    assert header == ANSWER_HEADER
    which = "all-MiniLM-L6-v2, layer 3 head 1: which token does “it” look at most?"
    choice = "Which vector is compared with the query?"
    assert [r[:7] for r in rows] == [
        ["1", which, "which token", "S01", "animal", "animal", "right"],
        ["1", which, "which token", "S02", "street", "animal", "wrong"],
        ["2", choice, "multiple choice", "S02", "the keys", "the keys", "right"],
        ["2", choice, "multiple choice", "S01", "'=the values", "the keys", "wrong"],  # stays text in a spreadsheet
    ]
    times = [datetime.strptime(r[7], "%Y-%m-%dT%H:%M:%SZ") for r in rows]  # ISO 8601, UTC
    assert times == sorted(times) and before - 1 <= datetime.timestamp(times[0].replace(tzinfo=UTC)) <= time.time()

    header, *students = table(students_csv(code, token))
    assert header == SUMMARY_HEADER
    assert [s[:4] for s in students[:2]] == [["S01", "2", "1", "1"], ["S02", "2", "1", "1"]]
    assert students[2] == ["S03", "0", "0", "0", "", ""]  # joined, never answered: still a line
