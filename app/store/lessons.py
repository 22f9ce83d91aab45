"""Lessons a teacher saves and shares by link, a browser's unsaved draft, and the lesson a room walks through.

A saved lesson is its lesson file's text under a random 72-bit id (``?lesson=ID``) with the SHA-256 of its edit
secret: anyone with the id reads it, only the secret changes it. A room's lesson is a JSON snapshot of its steps
taken when the teacher starts it, and the step on screen.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any

from app.store.rooms import RoomError, Store, token_hash

MAX_BODY = 200_000  # bytes of a saved lesson's text (app.views.lessons.lesson_file.MAX_BYTES)
MAX_SNAPSHOT = 400_000  # bytes of a room's steps as JSON
TITLE_CHARS = 160
ID_RE = re.compile(r"[A-Za-z0-9_-]{12}")  # what secrets.token_urlsafe(9) makes
DRAFT_KEEP_S = 2 * 24 * 3600  # an unsaved draft untouched this long is forgotten (the browser's cookie lasts a day)

NO_LESSON = "There is no saved lesson with this link. Check the link, or ask its author for a new one."
NOT_AUTHOR = "Only the lesson's author can change it: save your own copy instead (this one stays as it was)."
TOO_BIG = "This lesson is too long to save ({size:,} bytes; at most {most:,})."


def _fits(text: str, most: int) -> str:
    """``text``, or :class:`LessonError` when its UTF-8 is longer than ``most`` bytes."""
    if (size := len(text.encode("utf-8"))) > most:
        raise LessonError(TOO_BIG.format(size=size, most=most))
    return text


def _row(run, sql: str, lesson_id: object) -> tuple:
    """The saved lesson's row ``sql`` selects; :class:`LessonError` for a malformed or unknown id."""
    rows = run(sql, (lesson_id,)) if isinstance(lesson_id, str) and ID_RE.fullmatch(lesson_id) else []
    if not rows:
        raise LessonError(NO_LESSON)
    return rows[0]


def _title(title: object) -> str:
    return " ".join(str(title).split())[:TITLE_CHARS] or "A lesson"


class LessonError(RoomError):
    """A refused lesson action, with a message for the person (plain text: show it literally)."""


@dataclass(frozen=True)
class SavedLesson:
    """A lesson as the store keeps it: its id, title, lesson file text and when it last changed."""

    id: str
    title: str
    body: str
    updated_at: float


@dataclass(frozen=True)
class RoomLesson:
    """The lesson a room walks through: one dict per step (``title``, ``note``; ``page``, ``label``, ``params`` of its
    first link) and the step on screen (0-based)."""

    title: str
    steps: tuple[dict[str, Any], ...]
    step: int

    @property
    def current(self) -> dict[str, Any]:
        return self.steps[self.step]


class LessonStore:
    """Saved lessons and rooms' lessons, on the class store's database (the same connections and schema)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # ---------------------------------------------------------------- saved lessons

    def save(
        self, browser: str, title: str, body: str, lesson_id: str | None = None, secret: str | None = None
    ) -> tuple[str, str]:
        """Save a new lesson (``lesson_id`` None) or change one (with its secret); ``(id, edit secret)``. Each save
        counts against the browser's limit (``rooms.LIMITS["lesson"]``)."""
        store = self.store
        _fits(body, MAX_BODY)
        title = _title(title)
        now = store.clock()
        with store.db.transaction() as run:
            store._allow(run, browser, "lesson", now)
            if lesson_id is None:
                lesson_id, secret = secrets.token_urlsafe(9), secrets.token_urlsafe(18)
                run(
                    "INSERT INTO lessons (id, edit_hash, title, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (lesson_id, token_hash(secret), title, body, now, now),
                )
            else:
                self._check_author(run, lesson_id, secret)
                run(
                    "UPDATE lessons SET title = ?, body = ?, updated_at = ? WHERE id = ?", (title, body, now, lesson_id)
                )
        return lesson_id, secret

    def lesson(self, lesson_id: object) -> SavedLesson:
        """The saved lesson with this id; :class:`LessonError` for a malformed or unknown id."""
        row = _row(self.store.db.run, "SELECT id, title, body, updated_at FROM lessons WHERE id = ?", lesson_id)
        return SavedLesson(row[0], row[1], row[2], float(row[3]))

    def can_edit(self, lesson_id: object, secret: object) -> bool:
        """True when ``secret`` is the lesson's edit secret."""
        try:
            self._check_author(self.store.db.run, lesson_id, secret)
        except LessonError:
            return False
        return True

    @staticmethod
    def _check_author(run, lesson_id: object, secret: object) -> None:
        (edit_hash,) = _row(run, "SELECT edit_hash FROM lessons WHERE id = ?", lesson_id)
        if not isinstance(secret, str) or not hmac.compare_digest(edit_hash, token_hash(secret)):
            raise LessonError(NOT_AUTHOR)

    # ---------------------------------------------------------------- a browser's unsaved draft

    def keep_draft(self, browser: str, body: str, saved: tuple[str, str] | None = None) -> None:
        """Keep ``body`` as ``browser``'s draft ("": forget it), with ``saved``, the id and edit secret of the saved
        lesson it edits; drafts untouched for :data:`DRAFT_KEEP_S` are removed on the way."""
        store = self.store
        if not isinstance(browser, str) or not browser:
            raise LessonError("This browser has no id to keep a draft under.")
        _fits(body, MAX_BODY)
        lesson_id, secret = saved if saved is not None else (None, None)
        if lesson_id is not None and not (ID_RE.fullmatch(str(lesson_id)) and isinstance(secret, str) and secret):
            raise LessonError(NO_LESSON)
        now = store.clock()
        with store.db.transaction() as run:
            run("DELETE FROM lesson_drafts WHERE updated_at < ?", (now - DRAFT_KEEP_S,))
            if not body:
                run("DELETE FROM lesson_drafts WHERE browser = ?", (browser,))
                return
            run(
                "INSERT INTO lesson_drafts (browser, body, updated_at, lesson, edit_secret) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (browser) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at, "
                "lesson = excluded.lesson, edit_secret = excluded.edit_secret",
                (browser, body, now, lesson_id, secret),
            )

    def _draft_row(self, browser: object) -> tuple | None:
        if not isinstance(browser, str) or not browser:
            return None
        rows = self.store.db.run(
            "SELECT body, lesson, edit_secret FROM lesson_drafts WHERE browser = ? AND updated_at >= ?",
            (browser, self.store.clock() - DRAFT_KEEP_S),
        )
        return rows[0] if rows else None

    def kept_draft(self, browser: object) -> str | None:
        """The text of ``browser``'s unsaved draft, None when it has none (or it is older than :data:`DRAFT_KEEP_S`)."""
        row = self._draft_row(browser)
        return row[0] if row else None

    def kept_draft_lesson(self, browser: object) -> tuple[str, str] | None:
        """``(id, edit secret)`` of the saved lesson ``browser``'s kept draft edits, None if none (or gone)."""
        row = self._draft_row(browser)
        if not row or row[1] is None or not self.can_edit(row[1], row[2]):
            return None
        return row[1], row[2]

    # ---------------------------------------------------------------- a room's lesson

    def start_in_room(self, code: object, token: object, title: str, steps: list[dict[str, Any]]) -> RoomLesson:
        """The teacher starts a lesson in the room (at its first step; one replaces the room's earlier one)."""
        room = self.store.teacher_room(code, token)
        if not steps:
            raise LessonError("This lesson has no steps yet.")
        snapshot = _fits(json.dumps(steps, ensure_ascii=False), MAX_SNAPSHOT)
        title = _title(title)
        now = self.store.clock()
        with self.store.db.transaction() as run:
            run("DELETE FROM room_lessons WHERE room NOT IN (SELECT code FROM rooms)")  # rooms purged since
            run(
                "INSERT INTO room_lessons (room, title, steps, step, updated_at) VALUES (?, ?, ?, 0, ?) "
                "ON CONFLICT (room) DO UPDATE SET title = excluded.title, steps = excluded.steps, step = 0, "
                "updated_at = excluded.updated_at",
                (room.code, title, snapshot, now),
            )
        return RoomLesson(title, tuple(steps), 0)

    def move_in_room(self, code: object, token: object, step: int, relative: bool = False) -> RoomLesson:
        """Show step ``step`` (0-based; ``relative``: that many on from the one on screen) to the room."""
        room = self.store.teacher_room(code, token)
        with self.store.db.transaction() as run:
            rows = run("SELECT title, steps, step FROM room_lessons WHERE room = ?", (room.code,))
            if not rows:
                raise LessonError("No lesson is running in this class: start one first.")
            steps = tuple(json.loads(rows[0][1]))
            step = int(step) + (int(rows[0][2]) if relative else 0)
            step = min(max(step, 0), len(steps) - 1)
            run(
                "UPDATE room_lessons SET step = ?, updated_at = ? WHERE room = ?", (step, self.store.clock(), room.code)
            )
        return RoomLesson(rows[0][0], steps, step)

    def stop_in_room(self, code: object, token: object) -> None:
        """The room's lesson ends (its students' panels no longer show a step)."""
        room = self.store.teacher_room(code, token)
        self.store.db.run("DELETE FROM room_lessons WHERE room = ?", (room.code,))

    def room_lesson(self, code: str) -> RoomLesson | None:
        """The lesson the room is walking through, None when there is none."""
        rows = self.store.db.run("SELECT title, steps, step FROM room_lessons WHERE room = ?", (code,))
        steps = tuple(json.loads(rows[0][1])) if rows else ()
        return RoomLesson(rows[0][0], steps, min(max(int(rows[0][2]), 0), len(steps) - 1)) if steps else None
