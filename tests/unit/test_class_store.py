"""The class store (app/store) on SQLite always, and on a real PostgreSQL started here when one can be.

Each test gets an empty database: a fresh SQLite folder, or a fresh database in the session's throwaway
PostgreSQL cluster (tests/postgres_helpers.py). Time is the store's injected clock, never the wall clock.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.store import MAX_SECONDS, Ask, RoomError, StoreUnavailable, open_store
from app.store.migrations import LATEST, STEPS
from app.store.rooms import (
    ALPHABET,
    CLOSED,
    CODE_LENGTH,
    ENDED,
    LIMITS,
    NO_ROOM,
    NOT_JOINED,
    NOT_TEACHER,
    REPLACED,
    REVEALED,
    TOO_MANY,
)

ROOT = Path(__file__).resolve().parents[2]
_names = itertools.count()


class Clock:
    """A settable clock (seconds)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="session")
def postgres_url():
    pytest.importorskip("psycopg", reason="psycopg is not installed (requirements.txt)")
    from postgres_helpers import Unavailable, cluster

    try:
        with cluster() as url:
            yield url
    except Unavailable as exc:
        pytest.skip(f"no PostgreSQL for the store tests: {exc}")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, tmp_path):
    """``(url or None, data_dir)`` of an empty database of each kind."""
    if request.param == "sqlite":
        return None, tmp_path / "data"
    import psycopg

    base = request.getfixturevalue("postgres_url")
    name = f"t{next(_names)}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # a name made here, not user text
    return base.rsplit("/", 1)[0] + "/" + name, tmp_path / "unused"


@pytest.fixture()
def clock():
    return Clock(time.time())  # starts now: a subprocess on the real clock sees the same rooms open


@pytest.fixture()
def store(backend, clock):
    return open_store(*backend, clock=clock)


def test_migrations_run_once_and_record_their_version(backend, clock):
    first = open_store(*backend, clock=clock)
    first.ready()
    second = open_store(*backend, clock=clock)  # another process starting on the same database
    second.ready()
    assert first.db.run("SELECT version FROM schema_version ORDER BY version") == [(v,) for v, _ in STEPS]
    from app.store.migrations import migrate

    assert migrate(second.db, clock) == LATEST  # nothing left to do


def test_a_room_has_a_code_students_join_and_are_counted_once(store):
    room, token = store.create_room("teacher")
    assert len(room.code) == CODE_LENGTH and set(room.code) <= set(ALPHABET)
    assert store.member_count(room.code) == 0
    store.join(room.code, "b1")
    store.join(f" {room.code.lower()[:3]}-{room.code[3:]} ", "b1")  # typed with a dash, lower case: the same room
    store.join(room.code, "b2")
    assert store.member_count(room.code) == 2
    assert store.teacher_room(room.code, token) == store.room(room.code)
    other, _ = store.create_room("teacher")
    assert other.code != room.code


@pytest.mark.parametrize("code", ["", "A", "x" * 10_000, "ABC10O", "<b>AB</b>", "ÄÖÜ234", "'; --", None, 123456])
def test_forged_codes_are_refused(store, code):
    store.create_room("teacher")
    with pytest.raises(RoomError, match="no class with this code"):
        store.join(code, "b1")


def test_an_unknown_well_formed_code_is_refused(store):
    room, _ = store.create_room("teacher")
    forged = next("".join(c) for c in itertools.product(ALPHABET[:2], repeat=CODE_LENGTH) if "".join(c) != room.code)
    with pytest.raises(RoomError) as caught:
        store.join(forged, "b1")
    assert str(caught.value) == NO_ROOM


def test_only_the_teachers_token_controls_the_room(store):
    room, token = store.create_room("teacher")
    for bad in ("", "x", token + "x", None):
        with pytest.raises(RoomError) as caught:
            store.push_question(room.code, bad, Ask("choice", "Q?", ["a", "b"]))
        assert str(caught.value) == NOT_TEACHER
    question = store.push_question(room.code, token, Ask("choice", "Q?", ["a", "b"]))
    with pytest.raises(RoomError):
        store.reveal(room.code, "nope", question.id)
    assert not store.current_question(room.code).revealed


def test_one_answer_per_student_changeable_until_the_reveal(store):
    room, token = store.create_room("teacher")
    for b in ("b1", "b2", "b3"):
        store.join(room.code, b)
    q = store.push_question(room.code, token, Ask("choice", "Which is a key?", ["q", "k", "v"], 1))
    assert store.current_question(room.code) == q
    store.answer(room.code, q.id, "b1", 0)
    store.answer(room.code, q.id, "b1", 1)  # changed: still one answer
    store.answer(room.code, q.id, "b2", 1)
    store.answer(room.code, q.id, "b3", 2)
    assert store.distribution(q) == [0, 2, 1]
    assert store.my_answer(q.id, "b1") == 1 and store.my_answer(q.id, "nobody") is None
    store.reveal(room.code, token, q.id)
    assert store.current_question(room.code).revealed
    with pytest.raises(RoomError) as caught:
        store.answer(room.code, q.id, "b3", 1)
    assert str(caught.value) == REVEALED
    assert store.distribution(q) == [0, 2, 1]


def test_answers_are_refused_from_strangers_for_old_questions_and_for_bad_options(store):
    room, token = store.create_room("teacher")
    store.join(room.code, "b1")
    first = store.push_question(room.code, token, Ask("choice", "One?", ["a", "b"]))
    with pytest.raises(RoomError) as caught:
        store.answer(room.code, first.id, "stranger", 0)
    assert str(caught.value) == NOT_JOINED
    for bad in (2, -1, True, "1", None, 1.0):
        with pytest.raises(RoomError, match="not one of this question's options"):
            store.answer(room.code, first.id, "b1", bad)
    second = store.push_question(room.code, token, Ask("choice", "Two?", ["c", "d"]))
    for qid in (first.id, "forged-question"):
        with pytest.raises(RoomError) as caught:
            store.answer(room.code, qid, "b1", 0)
        assert str(caught.value) == REPLACED
    other, _ = store.create_room("teacher")
    store.join(other.code, "b1")
    with pytest.raises(RoomError):  # a question of another room
        store.answer(other.code, second.id, "b1", 0)
    assert store.distribution(first) == [0, 0] and store.distribution(second) == [0, 0]


def test_rooms_end_after_four_hours_or_when_closed_and_are_purged(store, clock):
    room, token = store.create_room("teacher")
    store.join(room.code, "b1")
    q = store.push_question(room.code, token, Ask("choice", "Q?", ["a", "b"]))
    clock.now += 4 * 3600 - 1
    store.answer(room.code, q.id, "b1", 0)
    clock.now += 1
    for action in (
        lambda: store.join(room.code, "b2"),
        lambda: store.answer(room.code, q.id, "b1", 1),
        lambda: store.push_question(room.code, token, Ask("choice", "Q?", ["a", "b"])),
    ):
        with pytest.raises(RoomError) as caught:
            action()
        assert str(caught.value) == ENDED
    store.create_room("teacher")  # the next room made purges the ended one
    assert store.db.run("SELECT COUNT(*) FROM rooms WHERE code = ?", (room.code,)) == [(0,)]
    assert store.db.run("SELECT COUNT(*) FROM answers WHERE question = ?", (q.id,)) == [(0,)]
    closed, token = store.create_room("teacher")
    store.close_room(closed.code, token)
    with pytest.raises(RoomError) as caught:
        store.join(closed.code, "b1")
    assert str(caught.value) == ENDED


def test_rate_limits_per_browser_are_kept_in_the_store(store, backend, clock):
    most, window = LIMITS["join"]
    room, _ = store.create_room("teacher")
    other_process = open_store(*backend, clock=clock)
    guesses = [c for c in ("AAAAA" + x for x in ALPHABET) if c != room.code][:most]
    for i, guess in enumerate(guesses):  # guessing codes: every try counts, in whichever process
        with pytest.raises(RoomError, match="no class with this code"):
            (store if i % 2 else other_process).join(guess, "eager")
    with pytest.raises(RoomError) as caught:
        store.join(room.code, "eager")
    assert str(caught.value) == TOO_MANY
    store.join(room.code, "someone-else")  # another browser is not held back
    clock.now += window
    store.join(room.code, "eager")


def test_a_member_opening_the_link_again_is_one_member_and_no_try(store):
    most, _window = LIMITS["join"]
    room, _ = store.create_room("teacher")
    for _ in range(3 * most):  # a student reloading the join link, over and over
        assert store.join(room.code, "reloader") == room
    assert store.member_count(room.code) == 1
    assert store.db.run("SELECT COUNT(*) FROM hits WHERE browser = ? AND action = 'join'", ("reloader",)) == [(1,)]


def test_a_browser_finds_the_room_it_joined_until_it_leaves_or_the_room_ends(store, clock):
    first, _ = store.create_room("teacher")
    second, token = store.create_room("teacher")
    assert store.joined_room("b1") is None
    store.join(first.code, "b1")
    clock.now += 1
    store.join(second.code, "b1")
    assert store.joined_room("b1") == store.room(second.code)  # the last one joined
    assert store.joined_room("b2") is None
    store.close_room(second.code, token)
    assert store.joined_room("b1") == store.room(first.code)  # an ended room is not found again
    store.leave(first.code.lower(), "b1")
    assert store.joined_room("b1") is None and store.member_count(first.code) == 0
    store.leave("'; DROP TABLE rooms; --", "b1")  # a forged code: nothing happens
    store.join(first.code, "b1")  # the link still lets it back in
    assert store.joined_room("b1") == store.room(first.code)


@pytest.mark.parametrize(
    "prompt, message",
    [
        ("", "Write the question"),
        ("   \n\t ", "Write the question"),
        ("x" * 301, "at most 300 fit"),
        (None, "Write the question"),
    ],
)
def test_bad_questions_get_a_clear_message(store, prompt, message):
    room, token = store.create_room("teacher")
    with pytest.raises(RoomError, match=message):
        store.push_question(room.code, token, Ask("choice", prompt, ["a", "b"]))


@pytest.mark.parametrize(
    "options, message",
    [
        (["only"], "2 to 8 options"),
        ([str(i) for i in range(9)], "2 to 8 options"),
        (["a", "A "], "the same"),
        (["a", ""], "Write the option 2"),
        (["a", "b" * 81], "at most 80 fit"),
    ],
)
def test_bad_options_get_a_clear_message(store, options, message):
    room, token = store.create_room("teacher")
    with pytest.raises(RoomError, match=message):
        store.push_question(room.code, token, Ask("choice", "Q?", options))


def test_text_is_stored_as_typed_never_as_sql(store):
    room, token = store.create_room("teacher")
    prompt = "<script>alert(1)</script> '); DROP TABLE answers; -- ? %s 注意 \x00 😀"
    q = store.push_question(room.code, token, Ask("choice", prompt, ["<b>x</b>", "[l](http://e.x)"]))
    got = store.current_question(room.code)
    assert got.prompt == prompt.replace(" \x00", "")  # control characters removed, everything else kept
    assert got.options == ("<b>x</b>", "[l](http://e.x)") and got.id == q.id
    store.join(room.code, "b1")
    store.answer(room.code, q.id, "b1", 0)
    assert store.distribution(got) == [1, 0]


def test_concurrent_answers_are_all_kept(store):
    room, token = store.create_room("teacher")
    browsers = [f"b{i}" for i in range(12)]
    for b in browsers:
        store.join(room.code, b)
    q = store.push_question(room.code, token, Ask("choice", "Q?", ["a", "b", "c"]))
    errors = []

    def answer(b: str) -> None:
        try:
            store.answer(room.code, q.id, b, int(b[1:]) % 3)
        except Exception as exc:  # noqa: BLE001 — collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=answer, args=(b,)) for b in browsers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.distribution(q) == [4, 4, 4]


_ANSWER_AND_DIE = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from app.store import open_store
store = open_store(sys.argv[2] or None, sys.argv[3])
store.join(sys.argv[4], "other-process")
store.answer(sys.argv[4], sys.argv[5], "other-process", 1)
os.kill(os.getpid(), signal.SIGKILL)  # a worker killed right after the answer
"""


def test_another_process_sees_answers_and_a_killed_worker_loses_none(store, backend):
    room, token = store.create_room("teacher")
    store.join(room.code, "here")
    q = store.push_question(room.code, token, Ask("choice", "Q?", ["a", "b"]))
    store.answer(room.code, q.id, "here", 0)
    url, folder = backend
    done = subprocess.run(
        [sys.executable, "-c", _ANSWER_AND_DIE, str(ROOT), url or "", str(folder), room.code, q.id],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert store.member_count(room.code) == 2
    assert store.distribution(q) == [1, 1]
    assert store.my_answer(q.id, "other-process") == 1


def test_an_unreachable_store_raises_the_calm_error(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with pytest.raises(StoreUnavailable) as caught:
        open_store(None, blocked / "data").create_room("t")
    assert "cannot be reached" in str(caught.value) and str(tmp_path) not in str(caught.value)
    pytest.importorskip("psycopg")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    with pytest.raises(StoreUnavailable):
        open_store(f"postgresql://ap:secret@127.0.0.1:{port}/none").room("ABCDEF")


def test_settings_come_from_the_environment(monkeypatch, tmp_path):
    from app import store as store_module

    monkeypatch.delenv("AP_DATABASE_URL", raising=False)
    monkeypatch.delenv("AP_DATA_DIR", raising=False)
    assert store_module.settings() == (None, ROOT / "data")
    monkeypatch.setenv("AP_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("AP_DATABASE_URL", " postgresql://x@h/db ")
    assert store_module.settings() == ("postgresql://x@h/db", tmp_path)
    assert os.environ["AP_DATA_DIR"] == str(tmp_path)


def test_earlier_questions_are_the_rooms_replaced_ones_latest_first(store, clock):
    room, token = store.create_room("teacher")
    other, other_token = store.create_room("teacher")
    assert store.earlier_questions(room.code) == []
    asked = []
    for i in range(4):
        clock.now += 1
        asked.append(store.push_question(room.code, token, Ask("choice", f"Q{i}?", ["a", "b"], 0)))
    store.push_question(other.code, other_token, Ask("choice", "Elsewhere?", ["a", "b"]))
    store.reveal(room.code, token, asked[1].id)
    past = store.earlier_questions(room.code)
    assert [q.prompt for q in past] == ["Q2?", "Q1?", "Q0?"]  # not the one on screen, not another room's
    assert [q.revealed for q in past] == [False, True, False]
    assert [q.prompt for q in store.earlier_questions(room.code, limit=2)] == ["Q2?", "Q1?"]


def test_threads_one_after_another_share_one_connection(store):
    """Streamlit runs each script run in a new thread: the pool hands the next one the connection the last one
    left, instead of opening a connection per thread (per rerun)."""
    import threading

    room, _ = store.create_room("teacher")
    opened = []
    real_open = store.db._open

    def counting_open():
        opened.append(threading.current_thread().name)
        return real_open()

    store.db._open = counting_open
    counts = []
    for i in range(5):
        thread = threading.Thread(target=lambda: counts.append(store.member_count(room.code)), name=f"run-{i}")
        thread.start()
        thread.join()
    assert counts == [0] * 5
    assert len(opened) <= 1  # at most one new connection for five runs (none when the pool had one idle)


def test_a_deleted_sqlite_file_is_made_again_and_nothing_is_acknowledged_that_it_does_not_hold(tmp_path, clock):
    """The file deleted under a running app (issue 44, item 7): the pooled connections wrote on into the unlinked
    file, so answers and a new class were acknowledged and lost. Now a class that went with the file is refused,
    a new class goes into a new file with its schema, and a fresh store (another process, a restart) reads it."""
    data = tmp_path / "data"
    store = open_store(None, data, clock=clock)
    room, token = store.create_room("teacher")
    store.join(room.code, "ana")
    asked = store.push_question(room.code, token, Ask("choice", "Q?", ["a", "b"]))
    store.answer(room.code, asked.id, "ana", 0)
    (data / "classroom.sqlite3").unlink()  # as `rm classroom.sqlite3` does: its -wal and -shm stay

    with pytest.raises(RoomError, match="no class with this code"):  # refused: that class went with the file
        store.answer(room.code, asked.id, "ana", 1)
    again, again_token = store.create_room("teacher-2")
    store.join(again.code, "bo")
    later = store.push_question(again.code, again_token, Ask("choice", "Q2?", ["a", "b"]))
    store.answer(again.code, later.id, "bo", 1)

    reopened = open_store(None, data, clock=clock)
    assert reopened.teacher_room(again.code, again_token).code == again.code
    assert reopened.my_answer(later.id, "bo") == 1


def test_a_write_whose_sqlite_file_is_deleted_while_it_runs_is_refused(tmp_path, clock):
    """Deleted between the connection's check and the commit: the write raises the calm error instead of
    returning, and the next write goes to a new file."""
    data = tmp_path / "data"
    store = open_store(None, data, clock=clock)
    store.create_room("teacher")
    with pytest.raises(StoreUnavailable):
        with store.db.transaction() as run:
            run("INSERT INTO hits (browser, action, at) VALUES (?, ?, ?)", ("b", "join", clock()))
            (data / "classroom.sqlite3").unlink()
    room, token = store.create_room("teacher")
    assert open_store(None, data, clock=clock).teacher_room(room.code, token).code == room.code


def test_a_time_limit_closes_the_question_and_the_answers_in_are_kept(store, clock):
    room, token = store.create_room("teacher")
    for b in ("ana", "bo", "cy"):
        store.join(room.code, b)
    q = store.push_question(room.code, token, Ask("choice", "Which is a key?", ["q", "k"], 1, seconds=30))
    assert store.current_question(room.code) == q and q.closes_in == 30 and not q.closed
    clock.now += 10
    store.answer(room.code, q.id, "ana", 0)
    clock.now += 19.5
    store.answer(room.code, q.id, "bo", 1)
    assert store.current_question(room.code).closes_in == pytest.approx(0.5)
    clock.now += 0.5  # 30 s after it was asked: closed
    assert store.current_question(room.code).closed and store.current_question(room.code).closes_in == 0
    for late, pick in (("cy", 1), ("ana", 1)):  # a first answer and a change, both late
        with pytest.raises(RoomError) as caught:
            store.answer(room.code, q.id, late, pick)
        assert str(caught.value) == CLOSED and str(caught.value).startswith("This question is closed")
    assert store.distribution(q) == [1, 1] and store.my_answer(q.id, "ana") == 0


def test_the_teacher_closes_reopens_and_resets_a_question(store):
    room, token = store.create_room("teacher")
    for b in ("ana", "bo"):
        store.join(room.code, b)
    q = store.push_question(room.code, token, Ask("choice", "Which is a key?", ["q", "k"], 1, seconds=60))
    store.answer(room.code, q.id, "ana", 1)
    for act in (store.close_question, store.reopen_question, store.reset_question):
        with pytest.raises(RoomError, match="not valid for this class"):
            act(room.code, "forged-token", q.id)
    store.close_question(room.code, token, q.id)
    assert store.current_question(room.code).closed
    with pytest.raises(RoomError, match="This question is closed"):
        store.answer(room.code, q.id, "bo", 0)
    assert store.distribution(q) == [0, 1]  # nothing already in is lost
    store.reopen_question(room.code, token, q.id)  # open again, with no time limit
    reopened = store.current_question(room.code)
    assert not reopened.closed and reopened.closes_in is None
    store.answer(room.code, q.id, "bo", 0)
    assert store.distribution(q) == [1, 1]
    other, other_token = store.create_room("teacher")
    store.reset_question(other.code, other_token, q.id)  # another room's teacher: nothing happens
    assert store.distribution(q) == [1, 1]
    store.reset_question(room.code, token, q.id)
    assert store.distribution(q) == [0, 0] and store.my_answer(q.id, "ana") is None
    store.answer(room.code, q.id, "ana", 0)  # after a reset, students answer again
    assert store.distribution(q) == [1, 0]


@pytest.mark.parametrize("seconds", [-1, MAX_SECONDS + 1, 1.5, "10", True, None, float("nan")])
def test_a_bad_time_limit_gets_a_clear_message(store, seconds):
    room, token = store.create_room("teacher")
    with pytest.raises(RoomError, match=f"whole number of seconds from 0 \\(none\\) to {MAX_SECONDS}"):
        store.push_question(room.code, token, Ask("choice", "Q?", ["a", "b"], seconds=seconds))
    assert store.current_question(room.code) is None
    assert store.push_question(room.code, token, Ask("choice", "Q?", ["a", "b"], seconds=12.0)).closes_in == 12


def test_the_results_are_every_answer_with_pseudonyms_and_right_or_wrong(store, clock):
    from app.store.results import class_results

    room, token = store.create_room("teacher")
    for b in ("zed-browser", "amy-browser", "leaver"):
        store.join(room.code, b)
        clock.now += 1
    first = store.push_question(room.code, token, Ask("choice", "Which is a key?", ["q", "=k", "v"], 1))
    store.answer(room.code, first.id, "amy-browser", 1)
    clock.now += 2
    store.answer(room.code, first.id, "zed-browser", 0)
    clock.now += 1
    store.answer(room.code, first.id, "leaver", 2)
    store.leave(room.code, "leaver")  # left: still in the results, numbered after those still in
    clock.now += 4
    second = store.push_question(room.code, token, Ask("choice", "Any thoughts?", ["yes", "no"]))
    store.answer(room.code, second.id, "zed-browser", 1)
    other, other_token = store.create_room("teacher")  # another class's answers stay out
    store.join(other.code, "amy-browser")
    store.answer(
        other.code, store.push_question(other.code, other_token, Ask("choice", "X?", ["a", "b"])).id, "amy-browser", 0
    )
    results = class_results(store, room.code, token)
    assert results.students == ["S01", "S02", "S03"]  # every student, the one who left too
    rows = results.answers
    got = [(r.number, r.question, r.kind, r.student, r.answer, r.right_answer, r.right) for r in rows]
    assert got == [
        (1, "Which is a key?", "multiple choice", "S02", "=k", "=k", True),  # amy joined second
        (1, "Which is a key?", "multiple choice", "S01", "q", "=k", False),
        (1, "Which is a key?", "multiple choice", "S03", "v", "=k", False),
        (2, "Any thoughts?", "multiple choice", "S01", "no", None, None),  # no right option: neither
    ]
    assert [r.at for r in rows] == [clock.now - 7, clock.now - 5, clock.now - 4, clock.now]
    assert not any("browser" in r.student or r.student == "leaver" for r in rows)  # the ids never leave the store
    with pytest.raises(RoomError, match="not valid for this class"):
        class_results(store, room.code, other_token)


def test_free_text_answers_are_one_line_per_student_and_the_filter_holds_rude_ones_back(store, clock):
    from app.store.free_text import NO_ANSWER, TEXT_CHARS, TextAnswers
    from app.store.results import class_results

    texts = TextAnswers(store)
    room, token = store.create_room("teacher")
    for b in ("ana", "bo", "cy"):
        store.join(room.code, b)
    with pytest.raises(RoomError, match="no options"):
        store.push_question(room.code, token, Ask("text", "Say it", ["a", "b"]))
    choice = store.push_question(room.code, token, Ask("choice", "Pick", ["a", "b"]))
    with pytest.raises(RoomError, match="picking one of its options"):
        texts.answer(room.code, choice.id, "ana", "a")
    clock.now += 1
    q = store.push_question(room.code, token, Ask("text", "One word for attention?", [], seconds=60))
    assert q.options == () and q.kind == "text"
    with pytest.raises(RoomError, match="not one of this question's options"):
        store.answer(room.code, q.id, "ana", 0)
    for empty in ("", "   \n\t "):
        with pytest.raises(RoomError, match="Write the answer"):
            texts.answer(room.code, q.id, "ana", empty)
    with pytest.raises(RoomError, match=f"at most {TEXT_CHARS} fit"):
        texts.answer(room.code, q.id, "ana", "x" * (TEXT_CHARS + 1))
    assert texts.answers(q.id) == []
    assert texts.answer(room.code, q.id, "ana", "  weighted\n  average ") is False  # trimmed, on one line
    clock.now += 1
    assert texts.answer(room.code, q.id, "bo", "this is shit") is True  # the word filter holds it back
    clock.now += 1
    texts.answer(room.code, q.id, "cy", "<b>soft</b>max [x](http://e.com)")  # kept as typed
    got = texts.answers(q.id)
    assert [(a.text, a.flagged, a.shown, a.visible) for a in got] == [
        ("weighted average", False, None, True),
        ("this is shit", True, None, False),
        ("<b>soft</b>max [x](http://e.com)", False, None, True),
    ]
    assert not any(b in a.handle for a in got for b in ("ana", "bo", "cy"))
    assert texts.mine(q.id, "bo") == got[1] and texts.mine(q.id, "nobody") is None
    with pytest.raises(RoomError, match="not valid for this class"):
        texts.show(room.code, "forged", q.id, got[1].handle, True)
    texts.show(room.code, token, q.id, got[1].handle, True)  # the teacher shows the flagged one
    texts.show(room.code, token, q.id, got[0].handle, False)  # and hides a clean one
    assert [a.visible for a in texts.answers(q.id)] == [False, True, True]
    with pytest.raises(RoomError) as caught:
        texts.show(room.code, token, q.id, "0" * 16, True)
    assert str(caught.value) == NO_ANSWER
    clock.now += 1
    texts.answer(room.code, q.id, "bo", "queries and keys")  # a new answer: the teacher's say starts again
    assert [(a.text, a.shown, a.visible) for a in texts.answers(q.id)][1:] == [
        ("<b>soft</b>max [x](http://e.com)", None, True),
        ("queries and keys", None, True),
    ]
    store.close_question(room.code, token, q.id)
    with pytest.raises(RoomError, match="This question is closed"):
        texts.answer(room.code, q.id, "ana", "late")
    rows = [(r.number, r.kind, r.student, r.answer, r.right) for r in class_results(store, room.code, token).answers]
    assert rows == [
        (2, "free text", "S01", "weighted average", None),
        (2, "free text", "S03", "<b>soft</b>max [x](http://e.com)", None),
        (2, "free text", "S02", "queries and keys", None),
    ]
