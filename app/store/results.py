"""A class's answers as the teacher takes them home: one :class:`AnswerRow` per answer, students under pseudonyms.

A student is ``S01``, ``S02``… in the order they joined (then, for one who left, their first answer): the browser's id
itself never leaves the store, since whoever holds it could answer as that student.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from app.store.rooms import Store

#: a question's kind as a results file names it
KIND_NAMES = {"choice": "multiple choice", "predict": "which token", "head": "which head", "text": "free text"}


@dataclass(frozen=True)
class AnswerRow:
    """One student's answer to one question: ``number`` the question's place in the class (1: the first asked),
    ``right`` True / False where the question has a right option (None where it has none), ``at`` Unix seconds."""

    number: int
    question: str
    kind: str
    student: str
    answer: str
    right_answer: str | None
    right: bool | None
    at: float


@dataclass(frozen=True)
class ClassResults:
    """A class's ``students`` (every pseudonym, in order: those who never answered too) and its ``answers``."""

    students: list[str]
    answers: list[AnswerRow]


def class_results(store: Store, code: object, token: object) -> ClassResults:
    """Every student and every answer in the teacher's class, question by question in the order asked, each
    question's answers in the order they came; :class:`~app.store.rooms.RoomError` unless ``token`` is the class's
    teacher secret."""
    room = store.teacher_room(code, token)
    run = store.db.run
    questions = run(
        "SELECT id, kind, prompt, options, answer FROM questions WHERE room = ? ORDER BY opened_at, id", (room.code,)
    )
    answers = run(
        "SELECT a.question, a.browser, a.choice, a.answered_at, a.text FROM answers a JOIN questions q ON q.id = a.question "
        "WHERE q.room = ? ORDER BY a.answered_at, a.browser",
        (room.code,),
    )
    joined = run("SELECT browser FROM members WHERE room = ? ORDER BY joined_at, browser", (room.code,))
    order = list(dict.fromkeys([b for (b,) in joined] + [a[1] for a in answers]))
    width = max(2, len(str(len(order))))
    students = {b: f"S{i + 1:0{width}d}" for i, b in enumerate(order)}
    by_question: dict[str, list[tuple]] = {}
    for row in answers:
        by_question.setdefault(row[0], []).append(row)
    rows = []
    for number, (qid, kind, prompt, options, answer) in enumerate(questions, start=1):
        options = json.loads(options)
        right = None if answer is None else options[int(answer)]
        for _, browser, choice, at, text in by_question.get(qid, []):
            said = text if text is not None else options[int(choice)] if 0 <= int(choice) < len(options) else ""
            is_right = None if answer is None else int(choice) == int(answer)
            rows.append(
                AnswerRow(
                    number, prompt, KIND_NAMES.get(kind, kind), students[browser], said, right, is_right, float(at)
                )
            )
    return ClassResults(list(students.values()), rows)
