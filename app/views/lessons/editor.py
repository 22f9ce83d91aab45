"""The Lessons page's "Write a lesson" tab: the draft's steps (move, delete, edit: ``check_editor.py``), save and
share links, the TOML file and offline pack, open a file or the built-in lesson (the draft itself: ``draft.py``)."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app.links import app_link
from app.runtime.rooms import lesson_store
from app.state import default, defaults
from app.store import RoomError, StoreUnavailable
from app.ui.clicks import once
from app.ui.guard import show_error
from app.ui.safe_text import md, quoted
from app.views.classroom.browser_cookie import browser_id
from app.views.lessons import check_editor, lesson_file
from app.views.lessons.check import summary
from app.views.lessons.check_editor import clean
from app.views.lessons.draft import EMPTY, change, draft, keep, owned, remember, said, say, use_button
from app.views.lessons.keys import Draft, Lessons
from app.views.lessons.lesson_file import Lesson, LessonFileError, Link, Step, file_name, read_lesson, write_lesson
from app.views.lessons.offline_pack import lesson_pack_buttons
from app.views.lessons.plan import LESSON

EDIT_PARAM = "lesson_edit"  # the author's edit link: ?lesson=ID&lesson_edit=SECRET (read once, then removed)
#: the step row's buttons: label, key prefix, icon, how far it moves the step (None: deletes it)
MOVES = (
    ("Up", Draft.up, "arrow_upward", -1),
    ("Down", Draft.down, "arrow_downward", 1),
    ("Delete", Draft.delete, "delete", None),
)
NO_STEPS = (
    "Your lesson has no steps yet. On any page, open **Add this view to my lesson** in the sidebar: the view on screen "
    "becomes a step, with your note and, if you like, a question. Or start from the built-in lesson or open a lesson "
    "file, below."
)
KEEP_DRAFT = (
    "This draft is kept in this browser only, for a day (a reload brings it back; another browser or device does not "
    "see it). To keep it, **save** it below (a link opens it again, on any device) or **download** it as a lesson file."
)


def editor() -> None:
    """The Lessons page's "Write a lesson" tab."""
    lesson = draft()
    remember()
    default(Draft.title, lesson.title)
    st.text_input("Title of your lesson", key=Draft.title, max_chars=lesson_file.TITLE_CHARS, on_change=_retitle)
    if lesson.steps:
        st.info(KEEP_DRAFT, icon=":material/save:")
    else:
        st.info(NO_STEPS, icon=":material/info:")
    for i, step in enumerate(lesson.steps):
        _step_row(i, step, len(lesson.steps))
    said("editor")
    _save_box(lesson)
    _file_box(lesson)


def _describe(link: Link) -> str:
    """ "Explore: model minilm · layer 3 · head 1" (the text is left out: it is long)."""
    shown = [f"{name} {value}" for name, value in link.params.items() if len(value) <= 40]
    return lesson_file.PAGE_TITLES.get(link.page.removesuffix(".py"), link.page) + (
        ": " + " · ".join(shown) if shown else ""
    )


def _step_row(i: int, step: Step, n: int) -> None:
    with st.container(border=True):
        head, *buttons = st.columns([5, 1.1, 1.4, 1.4], vertical_alignment="center")
        head.markdown(f"**{i + 1}. {md(step.title or step.text[:80])}**")
        for column, (label, prefix, icon, by) in zip(buttons, MOVES):
            help = f"{label} this step" if by is None else f"Move this step {label.lower()}"
            edge = (by == -1 and i == 0) or (by == 1 and i == n - 1)
            key, icon = f"{prefix}{step.id}", f":material/{icon}:"
            column.button(label, key=key, icon=icon, on_click=once(_move), args=(step.id, by), disabled=edge, help=help)
        if step.text and step.title:
            st.caption(md(step.text if len(step.text) <= 300 else step.text[:299] + "…"))
        for link in step.links:
            st.caption("Opens " + md(_describe(link)))
        if step.check is not None:
            st.caption(summary(step.check))
        with st.expander("Edit this step", icon=":material/edit:"):
            sid = step.id
            defaults({Draft.edit_title + sid: step.title, Draft.edit_note + sid: step.text})
            kind = check_editor.kind_picker(step)  # outside the form: a new kind shows its fields at once
            with st.form(key=Draft.edit_form + sid, border=False):
                st.text_input("Title", key=Draft.edit_title + sid, max_chars=lesson_file.TITLE_CHARS)
                st.text_area("Note", key=Draft.edit_note + sid, max_chars=lesson_file.TEXT_CHARS, height=120)
                check_editor.fields(step, kind)
                st.form_submit_button("Save this step", key=Draft.edit_save + sid, on_click=once(_edit), args=(sid,))


def _find(sid: str) -> tuple[Lesson, int]:
    lesson = draft()
    return lesson, next((i for i, step in enumerate(lesson.steps) if step.id == sid), -1)


def _move(sid: str, by: int | None) -> None:
    """on_click of Up / Down (``by``: -1 or 1) and Delete (``by`` None)."""
    lesson, i = _find(sid)
    steps = list(lesson.steps)
    if i < 0 or (by is not None and not 0 <= i + by < len(steps)):
        return
    if by is None:
        del steps[i]
    else:
        steps[i], steps[i + by] = steps[i + by], steps[i]
    change(replace(lesson, steps=tuple(steps)))


def _edit(sid: str) -> None:
    state = st.session_state
    lesson, i = _find(sid)
    if i < 0:
        return
    step = lesson.steps[i]
    try:
        check = check_editor.read_check(sid)
        problem = check_editor.model_problem(check) if check != step.check else None  # ask the model what changed
    except LessonFileError as exc:
        problem = str(exc)
    title, note = clean(state.get(Draft.edit_title + sid), False), clean(state.get(Draft.edit_note + sid))
    if not problem and not title and not note:
        problem = "give it a title or a note."
    if problem:
        say("editor", "warning", f"Step {i + 1}: {problem}")
        return
    steps = (*lesson.steps[:i], replace(step, title=title, text=note, check=check), *lesson.steps[i + 1 :])
    change(replace(lesson, steps=steps), done=f"Step {i + 1} changed." + check_editor.top_key_note(check))


def _retitle() -> None:
    title = clean(st.session_state.get(Draft.title), False) or EMPTY.title
    change(replace(draft(), title=title))


# ---------------------------------------------------------------- save, share, download, open


def _save_box(lesson: Lesson) -> None:
    st.markdown("**Save and share**")
    saved = st.session_state.get(Draft.saved)
    st.button(
        "Save changes" if saved else "Save and get a link",
        key=Draft.save,
        on_click=once(_save),
        disabled=not lesson.steps,
        icon=":material/cloud_upload:",
        help="Kept on this server; anyone with the link can open it, only you can change it.",
    )
    if not saved:
        return
    lid, secret = saved
    st.caption("Anyone with this link opens your lesson (read only). In a class, the Class page runs it step by step.")
    st.code(app_link("lessons", {Lessons.lesson: lid}), language=None, wrap_lines=True)
    with st.expander("Your edit link (keep it to yourself)", icon=":material/key:"):
        st.caption("Open it on another device to change this lesson from there. Anyone with it can change it.")
        st.code(app_link("lessons", {Lessons.lesson: lid, EDIT_PARAM: secret}), language=None, wrap_lines=True)


def _save() -> None:
    lesson = draft()
    lid, secret = st.session_state.get(Draft.saved) or (None, None)
    try:
        lid, secret = lesson_store().save(browser_id(), lesson.title, write_lesson(lesson), lid, secret)
    except (RoomError, StoreUnavailable) as exc:
        say("editor", "error" if isinstance(exc, StoreUnavailable) else "warning", str(exc))
        return
    st.session_state[Draft.saved] = (lid, secret)
    owned()[lid] = secret
    keep(lesson)  # a reload brings back the draft with the lesson it now edits
    say("editor", "success", "Saved. Share the link below.")


def _file_box(lesson: Lesson) -> None:
    st.markdown("**A lesson file**")
    st.download_button(
        "Download as a file (TOML)",
        data=lambda: write_lesson(lesson),
        file_name=file_name(lesson),
        mime="application/toml",
        key=Draft.download,
        on_click="ignore",
        disabled=not lesson.steps,
        icon=":material/download:",
    )
    st.caption("A plain text file you can keep, change in any editor, put under version control and open here again.")
    lesson_pack_buttons("draft", lesson)
    st.caption("The offline pack: the steps with their charts and data in one HTML file a student opens from disk.")
    help = f"A .toml lesson file, at most {lesson_file.MAX_BYTES // 1000} kB."
    upload = st.file_uploader("Open a lesson file", ["toml"], key=Draft.upload, max_upload_size=1, help=help)
    if upload is not None:
        try:
            opened = read_lesson(upload.getvalue())
        except LessonFileError as exc:
            show_error(str(exc), before=f"{quoted(upload.name, 40)} cannot be opened: ")
        else:
            st.caption(f"{quoted(upload.name, 40)}: {md(opened.title)}, {len(opened.steps)} steps.")
            put = "Put it in the editor (replaces your draft)"
            use_button(st, put, Draft.use_upload, opened, icon=":material/upload_file:")
    left, right = st.columns(2)
    help = "Replaces your draft with the built-in lesson's steps, to change as you like."
    use_button(left, "Start from the built-in lesson", Draft.builtin, LESSON, help=help)
    use_button(right, "Empty the draft", Draft.clear, EMPTY, disabled=not lesson.steps)
