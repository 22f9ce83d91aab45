"""Rooms, members, questions and answers: everything a class shares, read and written through :class:`Store`.

A room's code is 6 characters of :data:`ALPHABET` (no 0/O, 1/I/L) drawn with :mod:`secrets` (31⁶ codes against the
join limit of :data:`LIMITS`); the teacher's secret is kept as its SHA-256. A room ends after :data:`ROOM_HOURS` or
when closed, and is deleted by the next room made. Every refusal is a :class:`RoomError` a page shows as it is.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.store.migrations import migrate

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
ROOM_HOURS = 4.0
#: action → (most tries, per seconds), per browser id, counted in the store (so across every process)
LIMITS = {"create": (5, 600.0), "join": (10, 60.0), "answer": (30, 60.0), "lesson": (30, 600.0)}
PROMPT_CHARS, OPTION_CHARS = 300, 80
MAX_SECONDS = 3600  # the longest time limit of a question
MIN_OPTIONS = 2
#: kind of question → the most options it may have (a "which token" question offers each token of its sentence;
#: a free-text one none: ``app.store.free_text``)
MAX_OPTIONS = {"choice": 8, "predict": 32, "head": 6, "text": 0}
KINDS = tuple(MAX_OPTIONS)


class RoomError(ValueError):
    """A refused action, with a message meant for the person who tried it (plain text: show it literally)."""


NO_ROOM = "There is no class with this code. Check the code on the teacher's screen, or open the teacher's link again."
ENDED = "This class has ended. Ask your teacher for a new link."
NOT_TEACHER = "This teacher link is not valid for this class: open the control link you got when you started it."
NOT_JOINED = "Join the class first: open the link or QR code on the teacher's screen."
REVEALED = "The answer has been revealed: this question takes no more answers."
CLOSED = "This question is closed: the teacher stopped taking answers. An answer you sent before is kept."
REPLACED = "The teacher has moved on to another question: answer the one on screen now."
TOO_MANY = "Too many tries from this browser in a short time: wait a minute, then try again."


@dataclass(frozen=True)
class Room:
    """A class as the store has it."""

    code: str
    created_at: float
    expires_at: float
    closed: bool
    current_question: str | None


@dataclass(frozen=True)
class Ask:
    """A question as the teacher asks it: ``kind`` (:data:`KINDS`: typed ``"choice"`` or ``"text"`` (free text, no
    options), or ``"predict"`` / ``"head"`` read from a model), prompt, options, the right option's index (None:
    none), the kind's plain ``detail`` and the time limit in ``seconds`` (0: none)."""

    kind: str
    prompt: object
    options: Sequence[object]
    answer: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    seconds: object = 0


@dataclass(frozen=True)
class Question:
    """A question pushed to a room, as read at one moment: ``revealed`` once the teacher showed the answer, ``closed``
    once its time ran out or the teacher closed it (either way it takes no more answers); ``closes_in``: the seconds
    its time limit had left (None: no limit)."""

    id: str
    kind: str
    prompt: str
    options: tuple[str, ...]
    answer: int | None
    detail: dict[str, Any]
    revealed: bool
    closed: bool = False
    closes_in: float | None = None


def normalise_code(text: object) -> str | None:
    """A typed or linked room code in its stored form (upper case, spaces and dashes dropped); None if malformed."""
    code = "".join(str(text or "").split()).replace("-", "").upper()
    if len(code) != CODE_LENGTH or any(c not in ALPHABET for c in code):
        return None
    return code


def clean_text(text: object, limit: int, what: str) -> str:
    """``text`` on one line, control characters removed, or a :class:`RoomError` saying what is wrong."""
    if not isinstance(text, str):
        raise RoomError(f"Write the {what}.")
    flat = " ".join("".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cs")).split())
    if not flat:
        raise RoomError(f"Write the {what}.")
    if len(flat) > limit:
        raise RoomError(f"The {what} is {len(flat):,} characters long; at most {limit} fit.")
    return flat


QUESTION_COLUMNS = "q.id, q.kind, q.prompt, q.options, q.answer, q.detail, q.revealed, q.closes_at, q.closed"


def _question(row, now: float) -> Question:
    qid, kind, prompt, options, answer, detail, revealed, closes_at, closed = row
    answer = None if answer is None else int(answer)
    left = None if closes_at is None else max(0.0, float(closes_at) - now)
    closed = bool(closed) or left == 0.0
    return Question(
        qid, kind, prompt, tuple(json.loads(options)), answer, json.loads(detail), bool(revealed), closed, left
    )


def time_limit(seconds: object) -> int:
    """A question's time limit in whole seconds (0: none), or a :class:`RoomError` saying what is allowed."""
    if isinstance(seconds, float) and seconds.is_integer():
        seconds = int(seconds)
    if not (isinstance(seconds, int) and not isinstance(seconds, bool) and 0 <= seconds <= MAX_SECONDS):
        raise RoomError(f"The time limit is a whole number of seconds from 0 (none) to {MAX_SECONDS}.")
    return seconds


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Store:
    """The class store on one database (:mod:`app.store.db`); migrated on first use, safe to share between threads."""

    def __init__(self, db, clock: Callable[[], float] = time.time, room_hours: float = ROOM_HOURS) -> None:
        self._db = db
        self.clock = clock
        self.room_hours = room_hours
        self._migrated = False
        self._migrated_on: object = None  # the database's identity when migrated (a SQLite file's device and inode)
        self._lock = threading.Lock()

    @property
    def db(self):
        """The database (:mod:`app.store.db`), its schema made ready first."""
        self.ready()
        return self._db

    def ready(self) -> None:
        """Create or upgrade the schema (once per store object, and again on a new SQLite file where the old one was
        deleted); raises ``StoreUnavailable``."""
        with self._lock:
            if not self._migrated or self._migrated_on != self._db.identity():
                migrate(self._db, self.clock)
                self._migrated, self._migrated_on = True, self._db.identity()

    # ---------------------------------------------------------------- rooms

    def create_room(self, browser: str) -> tuple[Room, str]:
        """A new room and the teacher's secret token (kept by the teacher's link only; the store keeps its hash)."""
        now = self.clock()
        token = secrets.token_urlsafe(18)
        with self.db.transaction() as run:
            self._allow(run, browser, "create", now)
            self._purge(run, now)
            while True:
                code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
                if not run("SELECT 1 FROM rooms WHERE code = ?", (code,)):
                    break
            expires = now + self.room_hours * 3600
            run(
                "INSERT INTO rooms (code, teacher_hash, created_at, expires_at) VALUES (?, ?, ?, ?)",
                (code, token_hash(token), now, expires),
            )
        return Room(code, now, expires, False, None), token

    def room(self, code: object) -> Room:
        """The open room with ``code``; :class:`RoomError` for a malformed, unknown, ended or closed one."""
        return self._open_room(self.db.run, normalise_code(code), self.clock())

    def _open_room(self, run, code: str | None, now: float) -> Room:
        sql = "SELECT code, created_at, expires_at, closed, current_question FROM rooms WHERE code = ?"
        rows = run(sql, (code,)) if code else []
        if not rows:
            raise RoomError(NO_ROOM)
        room = Room(rows[0][0], float(rows[0][1]), float(rows[0][2]), bool(rows[0][3]), rows[0][4])
        if room.closed or room.expires_at <= now:
            raise RoomError(ENDED)
        return room

    def teacher_room(self, code: object, token: object) -> Room:
        """The room, if ``token`` is its teacher's secret; else :class:`RoomError`."""
        room = self.room(code)
        ((teacher_hash,),) = self.db.run("SELECT teacher_hash FROM rooms WHERE code = ?", (room.code,))
        if not isinstance(token, str) or not hmac.compare_digest(teacher_hash, token_hash(token)):
            raise RoomError(NOT_TEACHER)
        return room

    def close_room(self, code: object, token: object) -> None:
        """End the class now (its data goes with the next purge)."""
        room = self.teacher_room(code, token)
        self.db.run("UPDATE rooms SET closed = 1 WHERE code = ?", (room.code,))

    def join(self, code: object, browser: str) -> Room:
        """Add ``browser`` to the room (joining twice is one member; a member's reload is not counted as a try)."""
        now = self.clock()
        wanted = normalise_code(code)
        if wanted and self.db.run("SELECT 1 FROM members WHERE room = ? AND browser = ?", (wanted, browser)):
            return self._open_room(self.db.run, wanted, now)
        with self.db.transaction() as run:  # its own transaction: a wrong code counts as a try too
            self._allow(run, browser, "join", now)
        with self.db.transaction() as run:
            room = self._open_room(run, wanted, now)
            run(
                "INSERT INTO members (room, browser, joined_at) VALUES (?, ?, ?) ON CONFLICT (room, browser) DO NOTHING",
                (room.code, browser, now),
            )
        return room

    def joined_room(self, browser: str) -> Room | None:
        """The open room ``browser`` joined last (a reload without the join link finds its class), None if none."""
        now = self.clock()
        rows = self.db.run(
            "SELECT r.code FROM members m JOIN rooms r ON r.code = m.room "
            "WHERE m.browser = ? AND r.closed = 0 AND r.expires_at > ? "
            "ORDER BY m.joined_at DESC LIMIT 1",
            (browser, now),
        )
        return self._open_room(self.db.run, rows[0][0], now) if rows else None

    def leave(self, code: object, browser: str) -> None:
        """Take ``browser`` out of the room (its answers stay counted; joining again by the link is allowed)."""
        wanted = normalise_code(code)
        if wanted:
            self.db.run("DELETE FROM members WHERE room = ? AND browser = ?", (wanted, browser))

    def member_count(self, code: str) -> int:
        """How many browsers have joined the room."""
        (row,) = self.db.run("SELECT COUNT(*) FROM members WHERE room = ?", (code,))
        return int(row[0])

    # ---------------------------------------------------------------- questions

    def push_question(self, code: object, token: object, ask: Ask) -> Question:
        """Put a question on every student's screen (the room's previous question stops taking answers)."""
        kind, answer = ask.kind, ask.answer
        if kind not in KINDS:
            raise RoomError("Unknown kind of question.")
        prompt = clean_text(ask.prompt, PROMPT_CHARS, "question")
        options = tuple(clean_text(o, OPTION_CHARS, f"option {i + 1}") for i, o in enumerate(ask.options))
        if kind == "text" and options:
            raise RoomError("A free-text question has no options.")
        if kind != "text" and not MIN_OPTIONS <= len(options) <= MAX_OPTIONS[kind]:
            raise RoomError(
                f"A question needs {MIN_OPTIONS} to {MAX_OPTIONS[kind]} options; this one has {len(options)}."
            )
        if len({o.casefold() for o in options}) < len(options):
            raise RoomError("Two options are the same: make each one different.")
        if answer is not None and not (isinstance(answer, int) and 0 <= answer < len(options)):
            raise RoomError("The right answer must be one of the options.")
        seconds = time_limit(ask.seconds)
        room = self.teacher_room(code, token)
        now, limit = self.clock(), float(seconds) if seconds else None
        question = Question(secrets.token_hex(8), kind, prompt, options, answer, dict(ask.detail), False, False, limit)
        with self.db.transaction() as run:
            values = (question.id, room.code, kind, prompt, json.dumps(options), answer, json.dumps(question.detail))
            run(
                "INSERT INTO questions (id, room, kind, prompt, options, answer, detail, opened_at, closes_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*values, now, now + seconds if seconds else None),
            )
            run("UPDATE rooms SET current_question = ? WHERE code = ?", (question.id, room.code))
        return question

    def current_question(self, code: str) -> Question | None:
        """The question on screen in the room now (open or revealed), None before the first."""
        rows = self.db.run(
            f"SELECT {QUESTION_COLUMNS} FROM rooms r JOIN questions q ON q.id = r.current_question WHERE r.code = ?",
            (code,),
        )
        return _question(rows[0], self.clock()) if rows else None

    def earlier_questions(self, code: str, limit: int = 10) -> list[Question]:
        """The room's questions before the one on screen, the latest first (at most ``limit``; they take no answers)."""
        rows = self.db.run(
            f"SELECT {QUESTION_COLUMNS} FROM questions q JOIN rooms r ON r.code = q.room "
            "WHERE q.room = ? AND q.id <> COALESCE(r.current_question, '') "
            "ORDER BY q.opened_at DESC, q.id LIMIT ?",
            (code, int(limit)),
        )
        now = self.clock()
        return [_question(row, now) for row in rows]

    def reveal(self, code: object, token: object, question_id: str) -> None:
        """Show the answer: the question takes no more answers."""
        room = self.teacher_room(code, token)
        self.db.run("UPDATE questions SET revealed = 1 WHERE id = ? AND room = ?", (question_id, room.code))

    def close_question(self, code: object, token: object, question_id: str) -> None:
        """Stop taking answers now (the answers in are kept)."""
        room = self.teacher_room(code, token)
        self.db.run("UPDATE questions SET closed = 1 WHERE id = ? AND room = ?", (question_id, room.code))

    def reopen_question(self, code: object, token: object, question_id: str) -> None:
        """Take answers again, with no time limit, until the teacher closes it or reveals the answer."""
        room = self.teacher_room(code, token)
        sql = "UPDATE questions SET closed = 0, closes_at = NULL WHERE id = ? AND room = ?"
        self.db.run(sql, (question_id, room.code))

    def reset_question(self, code: object, token: object, question_id: str) -> None:
        """Clear the question's answers (every student may answer it again while it is open)."""
        room = self.teacher_room(code, token)
        self.db.run(
            "DELETE FROM answers WHERE question = (SELECT id FROM questions WHERE id = ? AND room = ?)",
            (question_id, room.code),
        )

    # ---------------------------------------------------------------- answers

    def answer(self, code: object, question_id: str, browser: str, choice: object) -> None:
        """Record (or replace) ``browser``'s answer at once; a :class:`RoomError` where :meth:`open_question` refuses
        or for an option the question lacks."""
        now = self.clock()
        with self.db.transaction() as run:
            options = self.open_question(run, code, question_id, browser, now)
            if not (isinstance(choice, int) and not isinstance(choice, bool) and 0 <= choice < len(options)):
                raise RoomError("That is not one of this question's options.")
            run(
                "INSERT INTO answers (question, browser, choice, answered_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (question, browser) DO UPDATE SET choice = excluded.choice, answered_at = excluded.answered_at",
                (question_id, browser, choice, now),
            )

    def open_question(self, run, code: object, question_id: str, browser: str, now: float) -> list[str]:
        """The options of the question ``browser`` may answer now, counting the try (in ``run``'s transaction); a
        :class:`RoomError` for a closed room, a browser not joined, a replaced, revealed or closed question (its time
        is up) or too many tries."""
        self._allow(run, browser, "answer", now)
        room = self._open_room(run, normalise_code(code), now)
        if not run("SELECT 1 FROM members WHERE room = ? AND browser = ?", (room.code, browser)):
            raise RoomError(NOT_JOINED)
        rows = run(
            "SELECT options, revealed, closed, closes_at FROM questions WHERE id = ? AND room = ?",
            (question_id, room.code),
        )
        if not rows or room.current_question != question_id:
            raise RoomError(REPLACED)
        if rows[0][1]:
            raise RoomError(REVEALED)
        if rows[0][2] or (rows[0][3] is not None and now >= float(rows[0][3])):
            raise RoomError(CLOSED)
        return json.loads(rows[0][0])

    def my_answer(self, question_id: str, browser: str) -> int | None:
        """``browser``'s current answer to the question, None if none."""
        rows = self.db.run("SELECT choice FROM answers WHERE question = ? AND browser = ?", (question_id, browser))
        return int(rows[0][0]) if rows else None

    def distribution(self, question: Question) -> list[int]:
        """How many students picked each option, in the options' order."""
        counts = [0] * len(question.options)
        for choice, n in self.db.run(
            "SELECT choice, COUNT(*) FROM answers WHERE question = ? GROUP BY choice", (question.id,)
        ):
            if 0 <= int(choice) < len(counts):
                counts[int(choice)] = int(n)
        return counts

    # ---------------------------------------------------------------- housekeeping

    def _allow(self, run, browser: str, action: str, now: float) -> None:
        """Count one ``action`` by ``browser``; :class:`RoomError` past its limit (:data:`LIMITS`)."""
        most, window = LIMITS[action]
        (row,) = run(
            "SELECT COUNT(*) FROM hits WHERE browser = ? AND action = ? AND at > ?", (browser, action, now - window)
        )
        if int(row[0]) >= most:
            raise RoomError(TOO_MANY)
        run("INSERT INTO hits (browser, action, at) VALUES (?, ?, ?)", (browser, action, now))

    def _purge(self, run, now: float) -> None:
        """Delete ended rooms (with their members, questions and answers) and rate-limit rows past every window."""
        ended = "SELECT code FROM rooms WHERE expires_at <= ? OR closed = 1"
        run(f"DELETE FROM answers WHERE question IN (SELECT id FROM questions WHERE room IN ({ended}))", (now,))
        run(f"DELETE FROM questions WHERE room IN ({ended})", (now,))
        run(f"DELETE FROM members WHERE room IN ({ended})", (now,))
        run("DELETE FROM rooms WHERE expires_at <= ? OR closed = 1", (now,))
        run("DELETE FROM hits WHERE at <= ?", (now - max(window for _, window in LIMITS.values()),))
