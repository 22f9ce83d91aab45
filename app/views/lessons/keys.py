"""The lessons page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

import re
import tomllib

import streamlit as st

from app.runtime.rooms import lesson_store
from app.store import RoomError, StoreUnavailable
from app.url_params import Param, as_text, integer
from engine.registry import ASSETS


class Lessons:
    """The Lessons page's keys; ``lesson`` and ``step`` are also its URL parameters. Prefixes: ``prev`` / ``next`` +
    ``top`` or ``bottom``, ``goto`` + a step's number, ``row`` / ``again`` / ``region`` / ``look`` + a step's id."""

    lesson = "lesson"  # the saved lesson on screen, by id ("": the built-in one)
    builtin = "lesson_builtin"  # a saved lesson's "Back to the built-in lesson" button
    answers = "lesson_answers"  # {step id: the picked token position or option index} (check.answers)
    step, steps_table = "lesson_step", "lesson_steps_table"
    softmax_scale, softmax = "lesson_softmax_scale", "lesson_softmax"
    prev, next, goto, row, again = "lesson_prev_", "lesson_next_", "lesson_goto_", "lesson_row_", "lesson_again_"
    region, look = "lesson_region_", "lesson_look_"  # the captioning check's region pick and its revealed map


class Draft:
    """A teacher's lesson: the draft, "Add this view to my lesson", the editor and the page's tabs. Prefixes + a
    step's id: ``up``, ``down``, ``delete`` and each step's ``edit_*`` form."""

    lesson, saved, owned, said = "draft_lesson", "draft_saved", "draft_owned", "draft_said"
    tab = "lessons_tab"  # the Lessons page's tabs: take a lesson / write a lesson
    add_open, add_form, add = "draft_add_open", "draft_add_form", "draft_add"
    add_title, add_note, add_question = "draft_add_title", "draft_add_note", "draft_add_question"
    add_options, add_right = "draft_add_options", "draft_add_right"
    add_kind, add_word = "draft_add_kind", "draft_add_word"  # the add box's kind of question and its query word
    title, save, download = "draft_title", "draft_save", "draft_download"
    upload, use_upload = "draft_upload", "draft_use_upload"
    builtin, clear, copy, edit_shared = "draft_builtin", "draft_clear", "draft_copy", "draft_edit_shared"
    up, down, delete = "draft_up_", "draft_down_", "draft_delete_"
    edit_form, edit_title, edit_note = "draft_edit_form_", "draft_edit_title_", "draft_edit_note_"
    edit_save, edit_kind, edit_question = "draft_edit_save_", "draft_edit_kind_", "draft_edit_question_"
    edit_options, edit_right, edit_explain = "draft_edit_options_", "draft_edit_right_", "draft_edit_explain_"
    edit_model, edit_text, edit_word = "draft_edit_model_", "draft_edit_text_", "draft_edit_word_"
    edit_occurrence, edit_layer, edit_head = "draft_edit_occurrence_", "draft_edit_layer_", "draft_edit_head_"
    edit_causal, edit_expect = "draft_edit_causal_", "draft_edit_expect_"
    edit_captioner, edit_scene = "draft_edit_captioner_", "draft_edit_scene_"


#: every edit field's key prefix (+ a step's id): the editor forgets them all when another lesson is opened
EDIT_FIELDS = tuple(v for k, v in vars(Draft).items() if k.startswith("edit_") and k not in ("edit_form", "edit_save"))


class Offline:
    """The offline pack's buttons: ``build`` / ``download`` + a place; ``built``: {place: (what it is of, its HTML)}."""

    build, download, built = "offline_build_", "offline_download_", "offline_built"


BUILTIN_FILE = ASSETS / "lessons" / "attention-in-eleven-steps.toml"
MAX_STEPS = 40  # steps a lesson may have
ID_RE = re.compile(r"[A-Za-z0-9_-]{1,40}")  # a saved lesson's id, a step's id


def lesson_ref(raw: str) -> str:
    """A saved lesson's id (``""``: the built-in lesson); whether the class store has it, the page says."""
    value = raw.strip()
    if value and not ID_RE.fullmatch(value):
        raise ValueError(f"{raw[:60]!r} is not a lesson id")
    return value


def lesson_steps() -> int:
    """How many ``[[steps]]`` the lesson on the Lessons page has: the saved one ``lesson`` names, else (also when it
    cannot be read) the built-in one."""
    builtin = len(tomllib.loads(BUILTIN_FILE.read_text(encoding="utf-8"))["steps"])
    lid = st.session_state.get(Lessons.lesson)
    try:
        steps = tomllib.loads(lesson_store().lesson(lid).body)["steps"] if lid else None
    except (RoomError, StoreUnavailable, tomllib.TOMLDecodeError, KeyError, TypeError):
        return builtin
    return len(steps) if isinstance(steps, list) and 0 < len(steps) <= MAX_STEPS else builtin


PAGE = frozenset({"lessons"})
#: the saved lesson, then its step (read second: its bound is that lesson's length). The step has no default, so the
#: address always names the step on screen; a lesson file's link may name any lesson's step.
PARAMS = (
    Param(Lessons.lesson, lesson_ref, "", PAGE),
    Param(Lessons.step, integer(1, lesson_steps), None, PAGE, show=as_text, check=integer(1, MAX_STEPS)),
)
