"""A lesson walked through in a class: the teacher picks one (built in, the draft, or a saved one's link) and moves
through it; the room's step is in the class store, so every student's panel shows it with a link to its view.
Text from any lesson but the built-in one is shown literally.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import streamlit as st

from app.links import open_page
from app.runtime.rooms import lesson_store
from app.store import StoreUnavailable
from app.store.lessons import RoomLesson
from app.ui.clicks import once
from app.ui.guard import show_error
from app.ui.safe_text import md
from app.views.classroom.browser_cookie import refused
from app.views.classroom.keys import ROOM
from app.views.lessons.draft import draft
from app.views.lessons.keys import Lessons
from app.views.lessons.lesson_file import PAGE_TITLES, Lesson, LessonFileError, read_lesson
from app.views.lessons.plan import LESSON

NOTE_CHARS = 600  # of a step's note shown in a student's panel (the view itself is the lesson)


def snapshot(lesson: Lesson, markdown: bool = False) -> list[dict[str, Any]]:
    """What students see of each step: title, note and first link (``markdown``: the built-in lesson's own text)."""
    out = []
    for step in lesson.steps:
        item: dict[str, Any] = {"title": step.title, "note": step.text, "markdown": markdown}
        if step.links:
            link = step.links[0]
            item |= {"page": link.page.removesuffix(".py"), "label": link.label, "params": dict(link.params)}
        out.append(item)
    return out


def show_step(lesson: RoomLesson) -> None:
    """The room's step, as a student's panel (and the teacher's page) shows it."""
    step = lesson.current
    trusted = step.get("markdown") is True

    def text(s: object) -> str:
        return str(s) if trusted else "  \n".join(md(line) for line in str(s).split("\n"))

    title, note = str(step.get("title") or ""), str(step.get("note") or "")
    if len(note) > NOTE_CHARS:
        note = note[: NOTE_CHARS - 1] + "…"
    st.markdown(f"**Step {lesson.step + 1} of {len(lesson.steps)}: {text(title or note.split(chr(10))[0])}**")
    if title and note:
        st.caption(text(note))
    if step.get("page") in PAGE_TITLES:
        params = step.get("params") if isinstance(step.get("params"), dict) else {}
        label = str(step.get("label") or "Open this step's view")
        open_page(f"{step['page']}.py", label if trusted else md(label), params, icon=":material/open_in_new:")


def lesson_id(text: object) -> str:
    """The lesson id in a pasted share link (``…/lessons?lesson=ID``) or the id itself."""
    raw = str(text or "").strip()
    if "?" in raw or "/" in raw:
        found = parse_qs(urlsplit(raw).query).get(Lessons.lesson)
        return found[0] if found else ""
    return raw


def teacher_controls(code: str, token: str) -> None:
    """The Class page's "Run a lesson": pick and start one, then Previous / Next / Stop."""
    if problem := st.session_state.pop(ROOM.lesson_error, None):
        show_error(problem)
    try:
        running = lesson_store().room_lesson(code)
    except StoreUnavailable as exc:
        show_error(str(exc), level="error")
        return
    if running is None:
        _pick(code, token)
        return
    with st.container(border=True):
        st.caption(f"Running: {md(running.title)}. Your students see this step above their page.")
        show_step(running)
    buttons = (
        ("Previous step", ROOM.lesson_prev, "arrow_back", -1, running.step == 0),
        ("Next step", ROOM.lesson_next, "arrow_forward", 1, running.step >= len(running.steps) - 1),
        ("Stop the lesson", ROOM.lesson_stop, "stop", None, False),
    )
    for column, (label, key, icon, by, off) in zip(st.columns(3), buttons):
        column.button(
            label,
            key=key,
            on_click=once(_act),
            args=(code, token, by),
            disabled=off,
            icon=f":material/{icon}:",
            type="primary" if by == 1 else "secondary",
            width="stretch",
        )


def _pick(code: str, token: str) -> None:
    mine = draft()
    choices = {"builtin": f"{LESSON.title} (built in, {len(LESSON.steps)} steps)"}
    if mine.steps:
        choices["draft"] = f"Your lesson: {mine.title} ({len(mine.steps)} steps)"
    choices["saved"] = "A saved lesson (paste its link)"
    pick = st.radio("Lesson", list(choices), format_func=lambda c: md(choices[c]), key=ROOM.lesson_pick)
    if pick == "saved":
        st.text_input("Link of the lesson", key=ROOM.lesson_ref, max_chars=400, placeholder="http://…/lessons?lesson=…")
    st.button(
        "Start this lesson in the class",
        key=ROOM.lesson_start,
        on_click=once(_start),
        args=(code, token),
        icon=":material/play_arrow:",
        type="primary",
    )


def _start(code: str, token: str) -> None:
    state = st.session_state
    pick = state.get(ROOM.lesson_pick) or "builtin"
    with refused(ROOM.lesson_error, LessonFileError):
        lesson = draft() if pick == "draft" and draft().steps else LESSON
        if pick == "saved":
            lesson = read_lesson(lesson_store().lesson(lesson_id(state.get(ROOM.lesson_ref))).body)
        lesson_store().start_in_room(code, token, lesson.title, snapshot(lesson, markdown=lesson is LESSON))


def _act(code: str, token: str, by: int | None) -> None:
    """on_click of Previous / Next (``by`` steps on) and Stop (``by`` None)."""
    with refused(ROOM.lesson_error):
        if by is None:
            lesson_store().stop_in_room(code, token)
        else:
            lesson_store().move_in_room(code, token, by, relative=True)
