"""Free-text answers (a question of kind ``"text"``) and their moderation, on the class store.

A student's answer is one line of at most :data:`TEXT_CHARS` characters, replaced by a new one until the question
closes. The word filter (:func:`flagged`: the ``alt-profanity-check`` package's English model, kept in step with
scikit-learn) marks an answer that the class sees only once the teacher shows it; the teacher can hide any answer.
A teacher's page names an answer by :attr:`TextAnswer.handle`, never by the student's browser id.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from app.store.rooms import RoomError, Store, clean_text

TEXT_CHARS = 200
TEXT_CHOICE = -1  # a free-text answer's ``choice`` (the column predates free text and is NOT NULL)
FLAG_AT = 0.5  # the filter's probability from which an answer waits for the teacher
NO_ANSWER = "This answer is not in the class any more (the student changed it, or the answers were reset)."


@functools.cache
def _predict():
    from profanity_check import predict_prob  # heavy (scikit-learn and its model): on the first free-text answer

    return predict_prob


def flagged(text: str) -> bool:
    """Whether the word filter holds ``text`` back until the teacher shows it."""
    return float(_predict()([text])[0]) >= FLAG_AT


@dataclass(frozen=True)
class TextAnswer:
    """One student's answer: ``flagged`` by the word filter; ``shown`` the teacher's say (None: none yet)."""

    handle: str
    text: str
    flagged: bool
    shown: bool | None
    at: float

    @property
    def visible(self) -> bool:
        """On the class's screens: shown by the teacher, or not hidden by the teacher nor the filter."""
        return self.shown if self.shown is not None else not self.flagged


def handle(question_id: str, browser: str) -> str:
    """The name of ``browser``'s answer to the question on the teacher's page (its browser id stays in the store)."""
    return hashlib.sha256(f"{question_id}\n{browser}".encode()).hexdigest()[:16]


class TextAnswers:
    """Free-text answers in the rooms of one :class:`~app.store.rooms.Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def answer(self, code: object, question_id: str, browser: str, text: object) -> bool:
        """Record (or replace) ``browser``'s answer; whether the word filter holds it back. A :class:`RoomError` for
        an empty or too long answer, a question that is not a free-text one, or where ``Store.open_question``
        refuses."""
        clean = clean_text(text, TEXT_CHARS, "answer")
        held = flagged(clean)
        store = self.store
        now = store.clock()
        with store.db.transaction() as run:
            store.open_question(run, code, question_id, browser, now)
            if run("SELECT kind FROM questions WHERE id = ?", (question_id,)) != [("text",)]:
                raise RoomError("This question is answered by picking one of its options.")
            run(
                "INSERT INTO answers (question, browser, choice, answered_at, text, flagged, shown) "
                "VALUES (?, ?, ?, ?, ?, ?, NULL) ON CONFLICT (question, browser) DO UPDATE SET "
                "answered_at = excluded.answered_at, text = excluded.text, flagged = excluded.flagged, shown = NULL",
                (question_id, browser, TEXT_CHOICE, now, clean, int(held)),
            )
        return held

    def mine(self, question_id: str, browser: str) -> TextAnswer | None:
        """``browser``'s answer to the question, None if none."""
        return next(iter(self._read(question_id, browser)), None)

    def answers(self, question_id: str) -> list[TextAnswer]:
        """The question's answers, the first sent first."""
        return self._read(question_id)

    def _read(self, question_id: str, browser: str | None = None) -> list[TextAnswer]:
        sql = "SELECT browser, text, flagged, shown, answered_at FROM answers WHERE question = ? AND text IS NOT NULL"
        rows = self.store.db.run(
            sql + (" AND browser = ?" if browser else "") + " ORDER BY answered_at, browser",
            (question_id, browser) if browser else (question_id,),
        )
        return [
            TextAnswer(handle(question_id, b), text, bool(f), None if s is None else bool(s), float(at))
            for b, text, f, s, at in rows
        ]

    def show(self, code: object, token: object, question_id: str, answer: str, shown: bool) -> None:
        """The teacher shows (or hides) the answer named ``answer`` (:func:`handle`) on the class's screens."""
        room = self.store.teacher_room(code, token)
        run = self.store.db.run
        rows = run(
            "SELECT a.browser FROM answers a JOIN questions q ON q.id = a.question WHERE a.question = ? AND q.room = ?",
            (question_id, room.code),
        )
        browsers = [b for (b,) in rows if handle(question_id, b) == answer]
        if not browsers:
            raise RoomError(NO_ANSWER)
        run("UPDATE answers SET shown = ? WHERE question = ? AND browser = ?", (int(shown), question_id, browsers[0]))
