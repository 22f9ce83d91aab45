"""A teacher's own lesson through AppTest (issue 21, 3): "Add this view to my lesson" on a page, the editor on the
Lessons page (reorder, edit, delete), the downloaded file read back, a saved lesson opened read-only by its link,
and a lesson run step by step in a class, seen by a student in another session.

Each test has its own class store (AP_DATA_DIR in a temporary folder). The Positional page is the view added:
it draws without a model, and its tab is a link parameter.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app.store import open_store, settings
from app.store.lessons import LessonStore
from app.views.classroom.keys import ROOM
from app.views.lessons.draft import TAKE_TAB, WRITE_TAB
from app.views.lessons.keys import Draft
from app.views.lessons.lesson_file import Choice, Lesson, Link, Step, read_lesson
from app.views.positional.keys import Positional
from apptest_helpers import APP, ROOT, assert_clean, messages, open_page

LESSONS = str(ROOT / "app" / "views" / "lessons" / "page.py")
CLASS = str(ROOT / "app" / "views" / "classroom" / "page.py")


@pytest.fixture(autouse=True)
def own_store(monkeypatch, tmp_path):
    monkeypatch.delenv("AP_DATABASE_URL", raising=False)
    monkeypatch.setenv("AP_DATA_DIR", str(tmp_path / "data"))


def add_view(at: AppTest, title: str = "", note: str = "", question: str = "", options: str = "", right: int = 1):
    at.text_input(key=Draft.add_title).input(title)
    at.text_area(key=Draft.add_note).input(note)
    at.text_input(key=Draft.add_question).input(question)
    at.text_area(key=Draft.add_options).input(options)
    at.number_input(key=Draft.add_right).set_value(right)
    at.button(key=Draft.add).click().run()
    assert_clean(at)


def draft(at: AppTest) -> Lesson:
    return at.session_state[Draft.lesson]


@pytest.fixture()
def downloads(monkeypatch) -> dict[str, object]:
    """{deferred file id: the callable a download button registered}: what the server runs when the button is
    clicked (AppTest's media manager is gone once a run ends, so the callables are kept here)."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    kept: dict[str, object] = {}
    register = MediaFileManager.add_deferred

    def add_deferred(self, data_callable, *args, **kwargs):
        file_id = register(self, data_callable, *args, **kwargs)
        kept[file_id] = data_callable
        return file_id

    monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)
    return kept


def exported(at: AppTest, downloads: dict) -> bytes:
    """The file the editor's download button serves."""
    (button,) = [b for b in at.get("download_button") if b.proto.label.startswith("Download as a file")]
    data = downloads[button.proto.deferred_file_id]()
    return data.encode("utf-8") if isinstance(data, str) else data


def test_add_views_reorder_edit_delete_export_and_open_again(downloads):
    at = open_page("positional", **{Draft.add_open: True})
    assert_clean(at)
    add_view(at, note="Sinusoids: each column a frequency.\nLook at the stripes.")
    said = " ".join(messages(at.success))
    assert "Added as step 1 of your lesson" in said
    at.session_state[Positional.tab] = "RoPE"
    at.run()
    add_view(at, title="Rotations", question="What does RoPE rotate?", options="q and k\nv\nthe output", right=1)
    add_view(at, title="A third view")
    lesson = draft(at)
    first, second, third = lesson.steps
    assert first.title == "" and first.text == "Sinusoids: each column a frequency.\nLook at the stripes."
    assert first.links == (Link("positional.py", "Open this view: Positional encodings", {}),)
    assert second.links[0].params == {Positional.tab: "rope"}  # the Share box's link parameters of that view
    assert second.check == Choice("What does RoPE rotate?", ("q and k", "v", "the output"), 0)
    assert at.text_area(key=Draft.add_note).value == ""  # the form is ready for the next view

    at.switch_page(LESSONS)
    at.run()
    assert_clean(at)
    assert at.session_state[Draft.tab] == WRITE_TAB  # the Lessons page opens on the editor after an add
    at.button(key=f"{Draft.up}{second.id}").click().run()
    assert [s.id for s in draft(at).steps] == [second.id, first.id, third.id]
    at.button(key=f"{Draft.delete}{third.id}").click().run()
    at.text_input(key=f"{Draft.edit_title}{first.id}").input("Sinusoids")
    at.button(key=f"{Draft.edit_save}{first.id}").click().run()
    assert_clean(at)
    assert [s.title for s in draft(at).steps] == ["Rotations", "Sinusoids"]
    at.text_input(key=Draft.title).input("Positions, week 3").run()

    data = exported(at, downloads)
    assert read_lesson(data) == draft(at) and draft(at).title == "Positions, week 3"
    assert b'[[steps]]\nid = "' in data and b'pos_tab = "rope"' in data and b"answer = 1" in data

    at.button(key=Draft.clear).click().run()
    assert not draft(at).steps
    bad = b'format = 1\ntitle = "x"\n[[steps]]\ntitel = "y"\n'
    at.file_uploader(key=Draft.upload).set_value(("bad.toml", bad, "application/toml")).run()
    assert_clean(at)
    assert "Step 1: unknown key 'titel'; the keys allowed here are" in " ".join(messages(at.warning))
    at.file_uploader(key=Draft.upload).set_value(("week3.toml", data, "application/toml")).run()
    at.button(key=Draft.use_upload).click().run()
    assert_clean(at)
    assert draft(at) == read_lesson(data)


def test_a_bad_question_leaves_the_draft_alone_with_a_message():
    at = open_page("positional", **{Draft.add_open: True})
    add_view(at, question="Which?", options="only one")
    assert "needs 2 to 8 options" in " ".join(messages(at.warning))
    assert Draft.lesson not in at.session_state or not draft(at).steps
    assert at.text_input(key=Draft.add_question).value == "Which?"  # kept, to correct


def test_a_saved_lesson_opens_read_only_by_its_link_and_its_text_stays_literal():
    at = open_page("positional", **{Draft.add_open: True})
    add_view(at, title="See [this](http://evil.example) ![x](http://evil.example/i.png)", note="**bold?** $x$")
    at.switch_page(LESSONS)
    at.run()
    at.button(key=Draft.save).click().run()
    assert_clean(at)
    lid, secret = at.session_state[Draft.saved]
    share = next(c.value for c in at.code if f"lesson={lid}" in c.value)
    assert "lesson_edit" not in share and secret not in share

    student = AppTest.from_file(str(APP), default_timeout=60)
    student.run()
    student.switch_page(LESSONS)
    student.query_params["lesson"] = lid
    student.run()
    assert_clean(student)
    header = student.header[0].value
    assert "[this]" not in header and "\\[this\\]" in header  # escaped: shown as typed, never a link or image
    assert not student.button(key=Draft.copy).disabled
    assert Draft.edit_shared not in [b.key for b in student.button]  # not the author's: no Edit button
    student.button(key=Draft.copy).click().run()  # a copy of one's own to change
    assert draft(student).steps[0].title.startswith("See [this]")

    student.query_params["lesson"] = "AAAAAAAAAAAA"  # a new lesson link opens on the lesson, not on the editor
    student.run()
    assert "no saved lesson with this link" in " ".join(messages(student.warning))


def start_class() -> tuple[AppTest, str]:
    teacher = AppTest.from_file(str(APP), default_timeout=60)
    teacher.run()
    teacher.switch_page(CLASS)
    teacher.run()
    teacher.button(key=ROOM.start).click().run()
    assert_clean(teacher)
    return teacher, teacher.session_state[ROOM.teacher][0]


def test_a_lesson_runs_in_a_room_step_by_step():
    from app.views.lessons.plan import STEPS

    teacher, code = start_class()
    student = AppTest.from_file(str(APP), default_timeout=60)
    student.query_params["room"] = code
    student.run()
    assert_clean(student)
    teacher.button(key=ROOM.lesson_start).click().run()  # the built-in lesson, the first choice
    assert_clean(teacher)
    teacher.button(key=ROOM.lesson_next).click().run()
    teacher.button(key=ROOM.lesson_next).click().run()
    assert f"Step 3 of {len(STEPS)}: {STEPS[2].title}" in " ".join(messages(teacher.markdown))
    student.run()  # one poll of the panel's fragment
    assert_clean(student)
    assert f"Step 3 of {len(STEPS)}: {STEPS[2].title}" in " ".join(messages(student.markdown))
    link = STEPS[2].links[0]
    assert any(p.proto.label == link.label for p in student.get("page_link"))
    teacher.button(key=ROOM.lesson_prev).click().run()
    student.run()
    assert f"Step 2 of {len(STEPS)}" in " ".join(messages(student.markdown))
    teacher.button(key=ROOM.lesson_stop).click().run()
    student.run()
    assert "Step 2 of" not in " ".join(messages(student.markdown))


def test_a_teachers_own_lesson_runs_in_the_room():
    teacher, code = start_class()
    teacher.session_state[Draft.lesson] = Lesson(
        "Week 3",
        (Step("a", "", "Look at the [CLS] column", ()), Step("b", "Heads", "", (Link("heads.py", "All heads", {}),))),
    )
    teacher.run()
    teacher.radio(key=ROOM.lesson_pick).set_value("draft").run()
    teacher.button(key=ROOM.lesson_start).click().run()
    assert_clean(teacher)
    assert "Step 1 of 2: Look at the \\[CLS\\] column" in " ".join(m.value for m in teacher.markdown)


def test_the_authors_edit_link_lets_another_device_change_the_lesson():
    at = open_page("positional", **{Draft.add_open: True})
    add_view(at, title="Sinusoids")
    at.switch_page(LESSONS)
    at.run()
    at.button(key=Draft.save).click().run()
    lid, secret = at.session_state[Draft.saved]

    laptop = AppTest.from_file(str(APP), default_timeout=60)
    laptop.session_state[Draft.tab] = WRITE_TAB  # whichever tab was open, the link is read
    laptop.run()
    laptop.switch_page(LESSONS)
    laptop.query_params.update({"lesson": lid, "lesson_edit": secret})
    laptop.run()
    assert_clean(laptop)
    assert "lesson_edit" not in laptop.query_params and laptop.query_params["lesson"] == lid  # the secret left
    assert laptop.session_state[Draft.tab] == TAKE_TAB
    laptop.button(key=Draft.edit_shared).click().run()
    assert laptop.session_state[Draft.saved] == (lid, secret) and laptop.session_state[Draft.tab] == WRITE_TAB
    laptop.text_input(key=f"{Draft.edit_title}{draft(laptop).steps[0].id}").input("Sinusoids, changed")
    laptop.button(key=f"{Draft.edit_save}{draft(laptop).steps[0].id}").click().run()
    laptop.button(key=Draft.save).click().run()
    assert_clean(laptop)
    from app.runtime.rooms import class_store
    from app.store.lessons import LessonStore

    assert "Sinusoids, changed" in LessonStore(class_store()).lesson(lid).body


def test_a_view_of_the_lessons_page_keeps_its_step():
    at = open_page("lessons", **{Draft.add_open: True, "lesson_step": 4})
    add_view(at, note="Step 4 of the built-in lesson")
    assert draft(at).steps[0].links[0].params == {"lesson_step": "4"}


def test_the_add_box_and_the_editor_say_where_the_draft_lives():
    """A reload lost the draft silently ("Added as step 1" again): next to "Add" and in the editor, the user reads
    where the draft lives (this browser, a day) and how to keep it (save or download); the class store holds it
    under this browser's id from the first change, and forgets it when the draft is emptied."""
    at = open_page("positional", **{Draft.add_open: True})
    assert_clean(at)
    box = " ".join(messages(at.sidebar.caption))
    assert "The draft is kept in this browser only, for a day: a reload brings it back" in box
    assert "**save**" in box and "**download**" in box
    add_view(at, title="Sinusoids")
    at.switch_page(LESSONS)
    at.run()
    assert_clean(at)
    said = " ".join(messages(at.info))
    assert "This draft is kept in this browser only, for a day (a reload brings it back" in said
    assert "**save** it below" in said and "**download** it as a lesson file" in said
    assert [b.label for b in at.button if b.label.startswith("Save")], "the Save button the message points to"
    kept = LessonStore(open_store(*settings())).kept_draft(at.session_state[ROOM.browser])  # another process's store
    assert kept is not None and read_lesson(kept) == draft(at)
    at.button(key=Draft.clear).click().run()
    assert "This draft is kept in this browser only" not in " ".join(messages(at.info))  # nothing to lose yet
    assert LessonStore(open_store(*settings())).kept_draft(at.session_state[ROOM.browser]) is None


def test_a_lesson_file_nested_fifty_thousand_levels_deep_gets_a_message_naming_it():
    at = open_page("lessons", **{Draft.tab: WRITE_TAB})
    deep = ("format = 1\ntitle = 'x'\nx = " + "[" * 50_000 + "]" * 50_000 + "\n").encode()
    at.file_uploader(key=Draft.upload).set_value(("deep.toml", deep, "application/toml")).run()
    assert_clean(at)  # not the guard's "could not use one of its settings"
    assert "`deep.toml` cannot be opened: The file is nested too deeply" in " ".join(messages(at.warning))
