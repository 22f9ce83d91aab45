"""The teacher's results to take home: every answer of the class, and a line per student, as two CSV files made from
the class store on click (so they hold every answer in, the moment the button is pressed)."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from app.runtime.rooms import class_store
from app.store.results import AnswerRow, ClassResults, class_results
from app.ui.export import download, spreadsheet_csv
from app.views.classroom.keys import ROOM

ANSWER_HEADER = [
    "question number",
    "question",
    "type",
    "student",
    "answer",
    "right answer",
    "right or wrong",
    "time (UTC)",
]
SUMMARY_HEADER = ["student", "answers", "right", "wrong", "first answer (UTC)", "last answer (UTC)"]


def utc(at: float) -> str:
    """Unix seconds as ISO 8601 in UTC, to the second (``2026-12-02T11:49:29Z``)."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _verdict(row: AnswerRow) -> str:
    return "" if row.right is None else "right" if row.right else "wrong"


def answers_table(rows: list[AnswerRow]) -> list[list[object]]:
    """One line per answer, under :data:`ANSWER_HEADER`."""
    return [
        [r.number, r.question, r.kind, r.student, r.answer, r.right_answer or "", _verdict(r), utc(r.at)] for r in rows
    ]


def summary_table(results: ClassResults) -> list[list[object]]:
    """One line per student, under :data:`SUMMARY_HEADER` (one who never answered: 0 and no times): right and wrong
    count the questions that have a right option."""
    students: dict[str, list[AnswerRow]] = {s: [] for s in results.students}
    for row in results.answers:
        students[row.student].append(row)
    table = []
    for student in sorted(students):
        mine = students[student]
        times = [r.at for r in mine]
        right = sum(r.right is True for r in mine)
        wrong = sum(r.right is False for r in mine)
        first, last = (utc(min(times)), utc(max(times))) if times else ("", "")
        table.append([student, len(mine), right, wrong, first, last])
    return table


def answers_csv(code: str, token: str) -> bytes:
    """The answers file, read from the store now."""
    return spreadsheet_csv(ANSWER_HEADER, answers_table(class_results(class_store(), code, token).answers))


def students_csv(code: str, token: str) -> bytes:
    """The per-student file, read from the store now."""
    return spreadsheet_csv(SUMMARY_HEADER, summary_table(class_results(class_store(), code, token)))


def take_home(code: str, token: str) -> None:
    """The two download buttons; each file is read from the store when its button is pressed."""
    st.caption(
        "Two files, because a spreadsheet sorts and filters one table per file: every answer (students are S01, "
        "S02… in the order they joined; times in UTC), and one line per student. Text that a spreadsheet could "
        "read as a formula starts with ' so it stays text."
    )
    left, right = st.columns(2)
    with left:
        download(
            "Download the results (CSV)",
            lambda: answers_csv(code, token),
            f"class_{code}_answers.csv",
            "text/csv",
            ROOM.csv_answers,
        )
    with right:
        download(
            "Download the per-student summary (CSV)",
            lambda: students_csv(code, token),
            f"class_{code}_students.csv",
            "text/csv",
            ROOM.csv_students,
        )
