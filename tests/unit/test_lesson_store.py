"""Saved lessons and rooms' lessons in the class store (app/store/lessons.py, issue 21, 3), on SQLite always and on
a throwaway PostgreSQL where one can start (the fixtures of tests/unit/test_class_store.py).

Time is the store's injected clock. A second store object on the same database stands in for another app process.
"""

# ruff: noqa: F811 — the fixtures of test_class_store are imported by name, then taken as arguments
from __future__ import annotations

import json

import pytest
from test_class_store import backend, clock, postgres_url, store  # noqa: F401 — the shared fixtures
from test_lesson_file import lesson_with

from app.store import RoomError, open_store
from app.store.lessons import MAX_BODY, NO_LESSON, NOT_AUTHOR, LessonError, LessonStore
from app.store.rooms import LIMITS, NOT_TEACHER, TOO_MANY
from app.views.lessons.lesson_file import read_lesson, write_lesson


def test_a_saved_lesson_reads_back_and_only_its_author_changes_it(store, backend, clock):
    lessons = LessonStore(store)
    body = write_lesson(lesson_with())
    lid, secret = lessons.save("author", 'My "first" lesson', body)
    other = LessonStore(open_store(*backend, clock=clock))  # another process
    saved = other.lesson(lid)
    assert (saved.id, saved.title, saved.body) == (lid, 'My "first" lesson', body)
    assert read_lesson(saved.body, check_values=False) == lesson_with()
    assert other.can_edit(lid, secret) and not other.can_edit(lid, "guess") and not other.can_edit(lid, None)

    changed = write_lesson(lesson_with(title="Week 4"))
    clock.now += 60
    assert other.save("author", "Week 4", changed, lid, secret) == (lid, secret)
    assert lessons.lesson(lid).body == changed and lessons.lesson(lid).updated_at == clock.now
    with pytest.raises(LessonError) as caught:
        lessons.save("stranger", "Mine now", body, lid, "not the secret")
    assert str(caught.value) == NOT_AUTHOR
    assert lessons.lesson(lid).body == changed


@pytest.mark.parametrize("lid", ["", "short", "x" * 12 + "'", "A" * 13, None, "../../etc/pa"])
def test_unknown_or_malformed_ids_are_refused(store, lid):
    with pytest.raises(LessonError) as caught:
        LessonStore(store).lesson(lid)
    assert str(caught.value) == NO_LESSON


def test_text_is_stored_as_typed_and_size_is_limited(store):
    lessons = LessonStore(store)
    text = 'title = "\'); DROP TABLE lessons; --"\n' + "é" * 100
    lid, _ = lessons.save("b", "'); DROP TABLE rooms; --", text)
    assert lessons.lesson(lid).body == text and lessons.lesson(lid).title == "'); DROP TABLE rooms; --"
    with pytest.raises(LessonError, match="too long"):
        lessons.save("b", "big", "x" * (MAX_BODY + 1))


def test_saves_are_rate_limited_per_browser(store, clock):
    lessons = LessonStore(store)
    most, window = LIMITS["lesson"]
    for _ in range(most):
        lessons.save("busy", "t", "body")
    with pytest.raises(RoomError) as caught:
        lessons.save("busy", "t", "body")
    assert str(caught.value) == TOO_MANY
    lessons.save("calm", "t", "body")
    clock.now += window
    lessons.save("busy", "t", "body")


STEPS = [
    {
        "title": "Why RNNs struggle",
        "note": "one vector",
        "page": "bahdanau",
        "label": "Open",
        "params": {"bahdanau_text": "the red car"},
    },
    {"title": "", "note": "A note only"},
    {"title": "Heads", "note": "", "page": "heads", "label": "Open", "params": {}},
]


def test_a_room_walks_a_lesson_that_every_process_sees(store, backend, clock):
    room, token = store.create_room("teacher")
    teacher = LessonStore(store)
    student = LessonStore(open_store(*backend, clock=clock))  # a student on another worker
    assert student.room_lesson(room.code) is None
    teacher.start_in_room(room.code, token, "Week 3", STEPS)
    seen = student.room_lesson(room.code)
    assert (seen.title, seen.step, list(seen.steps), seen.current) == ("Week 3", 0, STEPS, STEPS[0])
    teacher.move_in_room(room.code, token, 2)
    assert student.room_lesson(room.code).current == STEPS[2]
    assert teacher.move_in_room(room.code, token, 99).step == 2  # kept inside the lesson
    assert teacher.move_in_room(room.code, token, -5).step == 0
    teacher.move_in_room(room.code, token, 1, relative=True)  # Next pressed twice before the page redrew
    assert teacher.move_in_room(room.code, token, 1, relative=True).step == 2
    assert teacher.move_in_room(room.code, token, 1, relative=True).step == 2  # not past the last step
    assert teacher.move_in_room(room.code, token, -2, relative=True).step == 0
    with pytest.raises(RoomError) as caught:
        teacher.move_in_room(room.code, "a student's guess", 1)
    assert str(caught.value) == NOT_TEACHER
    assert student.room_lesson(room.code).step == 0
    teacher.start_in_room(room.code, token, "Another", STEPS[:1])  # a new lesson replaces the running one
    assert student.room_lesson(room.code).title == "Another" and len(student.room_lesson(room.code).steps) == 1
    teacher.stop_in_room(room.code, token)
    assert student.room_lesson(room.code) is None
    with pytest.raises(LessonError, match="no steps"):
        teacher.start_in_room(room.code, token, "Empty", [])
    with pytest.raises(LessonError, match="start one first"):
        teacher.move_in_room(room.code, token, 1)


def test_a_rooms_lesson_is_gone_with_its_room(store, clock):
    room, token = store.create_room("teacher")
    lessons = LessonStore(store)
    lessons.start_in_room(room.code, token, "Week 3", STEPS)
    store.close_room(room.code, token)
    store.create_room("teacher")  # purges ended rooms
    other, other_token = store.create_room("teacher-2")
    lessons.start_in_room(other.code, other_token, "Week 4", STEPS)  # also drops lessons of purged rooms
    rows = store.db.run("SELECT room, steps FROM room_lessons")
    assert [(r[0], json.loads(r[1])) for r in rows] == [(other.code, STEPS)]


def test_a_browsers_draft_is_kept_replaced_forgotten_and_expires(store, backend, clock):
    """A reload lost the draft: it is kept per browser id (one row, replaced on every change), read back by another
    process, forgotten when emptied, and gone after DRAFT_KEEP_S untouched."""
    from app.store.lessons import DRAFT_KEEP_S

    lessons = LessonStore(store)
    other = LessonStore(open_store(*backend, clock=clock))  # another process: the reload may land on another worker
    assert other.kept_draft("browser-a") is None
    first, second = write_lesson(lesson_with()), write_lesson(lesson_with(title="Week 4"))
    lessons.keep_draft("browser-a", first)
    lessons.keep_draft("browser-b", second)
    assert other.kept_draft("browser-a") == first and read_lesson(other.kept_draft("browser-a")) == lesson_with()
    lessons.keep_draft("browser-a", second)  # a change replaces the draft
    assert other.kept_draft("browser-a") == second
    assert store.db.run("SELECT COUNT(*) FROM lesson_drafts WHERE browser = ?", ("browser-a",)) == [(1,)]
    lessons.keep_draft("browser-a", "")  # emptied: forgotten
    assert other.kept_draft("browser-a") is None and other.kept_draft("browser-b") == second
    assert other.kept_draft(None) is None and other.kept_draft("") is None
    with pytest.raises(LessonError):
        lessons.keep_draft("browser-a", "x" * (MAX_BODY + 1))
    with pytest.raises(LessonError):
        lessons.keep_draft("", first)
    clock.now += DRAFT_KEEP_S + 1
    assert other.kept_draft("browser-b") is None  # too old to bring back
    lessons.keep_draft("browser-c", first)  # a write clears the old rows on the way
    assert store.db.run("SELECT browser FROM lesson_drafts") == [("browser-c",)]
    lessons.keep_draft("it's'; DROP TABLE lessons; --", first)  # an id is only ever a parameter
    assert other.kept_draft("it's'; DROP TABLE lessons; --") == first


def test_a_kept_draft_remembers_the_saved_lesson_it_edits(store, backend, clock):
    """A draft opened from a saved lesson came back after a reload without its lesson, and "Save" made a new lesson:
    the kept row names the lesson and its edit secret, read back by another process; a new draft, a wrong secret or
    a forgotten draft names none."""
    lessons = LessonStore(store)
    other = LessonStore(open_store(*backend, clock=clock))
    body = write_lesson(lesson_with())
    lid, secret = lessons.save("browser-a", "Week 3", body)
    lessons.keep_draft("browser-a", body, (lid, secret))
    assert other.kept_draft("browser-a") == body and other.kept_draft_lesson("browser-a") == (lid, secret)
    changed = write_lesson(lesson_with(title="Week 4"))
    lessons.keep_draft("browser-a", changed)  # a draft started afresh (a file opened, the built-in lesson) edits none
    assert other.kept_draft("browser-a") == changed and other.kept_draft_lesson("browser-a") is None
    lessons.keep_draft("browser-a", changed, (lid, "not the secret"))
    assert other.kept_draft_lesson("browser-a") is None  # a secret that does not open the lesson is not handed back
    with pytest.raises(LessonError):
        lessons.keep_draft("browser-a", changed, ("not an id", secret))
    lessons.keep_draft("browser-a", changed, (lid, secret))
    lessons.keep_draft("browser-a", "")  # emptied: forgotten with its lesson
    assert other.kept_draft_lesson("browser-a") is None and other.kept_draft_lesson(None) is None
    assert lessons.lesson(lid).body == body  # keeping a draft never changes the saved lesson itself
