"""A teacher's own lesson: the draft, and "Add this view to my lesson" on every page (the editor: ``editor.py``).

Every change goes through :func:`change`, which writes the lesson file and reads it back, so the draft is
always a valid lesson; it is also kept in the class store under the browser's anonymous id, with the saved lesson it
edits, so a reload starts from it. :func:`add_view_box` makes the view on screen a step with a multiple-choice or
(one head on screen) a "which token" question whose ``expect`` is the head's top key.
"""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import replace

import streamlit as st

from app import url_state
from app.runtime.rooms import lesson_store
from app.state import K, bounded, default, default_from, settle
from app.state import Look as Shown
from app.store import RoomError, StoreUnavailable
from app.ui.clicks import once
from app.ui.guard import plain_error, show_error
from app.ui.safe_text import md
from app.url_params import shown_view
from app.views.classroom.browser_cookie import browser_cookie_missing, browser_id, remember_browser
from app.views.lessons import check_editor, lesson_file
from app.views.lessons.check_editor import choice_from, clean
from app.views.lessons.data import lesson_attention
from app.views.lessons.keys import EDIT_FIELDS, Draft
from app.views.lessons.lesson_file import (
    Lesson,
    LessonFileError,
    Link,
    Predict,
    Step,
    counted,
    read_lesson,
    write_lesson,
)
from app.views.step_by_step.keys import Step as Walk

TAKE_TAB, WRITE_TAB = "Take a lesson", "Write a lesson"
LEFT_OUT = ("present",)  # link parameters a lesson step does not keep (presenter mode is the teacher's own)
EMPTY = Lesson("My lesson", ())
PREDICT_PAGES = ("explore", "heads", "step_by_step")  # text pages with one head on screen (K.layer, K.head)
ADD_KINDS = {"choice": "Multiple choice", "predict": "Which token does this head look at from a word?"}
KEEP_IT = (
    ":material/info: The draft is kept in this browser only, for a day: a reload brings it back, another browser or "
    "device does not see it. To keep it, **save** it or **download** it (Lessons page, “Write a lesson”)."
)
KEEP_IT_HELP = (
    "The app keeps your draft under an anonymous id this browser holds in a cookie (no name). Saving stores the "
    "lesson for good and gives you a link to open it again (and an edit link); downloading gives you a lesson "
    "file to open here later."
)
Words = dict[int, tuple[str, int]]  # {token position: (word, occurrence)} a "which token" question can ask about


def draft() -> Lesson:
    """This session's lesson draft; a new session starts from the draft this browser kept (a reload)."""
    return default_from(Draft.lesson, _kept) or EMPTY


def _kept() -> Lesson:
    """The draft this browser kept in the class store (and the saved lesson it edits), else empty."""
    if browser_cookie_missing():  # a new browser (or one that never wrote a draft): nothing to look up
        return EMPTY
    try:
        store, browser = lesson_store(), browser_id()
        body = store.kept_draft(browser)
        lesson, saved = (read_lesson(body), store.kept_draft_lesson(browser)) if body else (EMPTY, None)
    except (StoreUnavailable, RoomError, LessonFileError):
        return EMPTY  # the store is a bonus here: the session starts an empty draft
    if saved is not None:  # the draft edits a saved lesson: "Save changes" updates it, its links stay the same
        st.session_state[Draft.saved] = saved
        owned()[saved[0]] = saved[1]
    return lesson


def keep(lesson: Lesson) -> None:
    """Write the draft to the class store under this browser's id, with the saved lesson it edits."""
    try:
        body = write_lesson(lesson) if lesson.steps else ""
        lesson_store().keep_draft(browser_id(), body, st.session_state.get(Draft.saved))
    except (StoreUnavailable, RoomError):
        pass  # the session still holds the draft; the editor says how to keep it (save, download)


def remember() -> None:
    """While there is a draft, the browser keeps its anonymous id in its cookie (what :func:`_kept` reads back)."""
    if draft().steps:
        remember_browser()


def owned() -> dict[str, str]:
    """{saved lesson id: edit secret} this session may change (its own saves, and edit links it opened)."""
    return default(Draft.owned, {})


def change(lesson: Lesson, place: str = "editor", done: str = "") -> bool:
    """Make ``lesson`` the draft when it reads back from its own file and say ``done`` (if any) in ``place``; else
    say why there (the draft is unchanged)."""
    try:
        checked = read_lesson(write_lesson(lesson)) if lesson.steps else lesson
    except LessonFileError as exc:
        say(place, "warning", str(exc))
        return False
    st.session_state[Draft.lesson] = checked
    keep(checked)
    if done:
        say(place, "success", done)
    return True


def use(lesson: Lesson, saved: tuple[str, str] | None = None) -> None:
    """Put ``lesson`` in the editor (``saved``: the id and edit secret of the stored lesson it is, if any)."""
    before = st.session_state.get(Draft.saved)
    st.session_state[Draft.saved] = saved  # first, so the kept draft names the lesson it edits
    if not change(lesson):
        st.session_state[Draft.saved] = before
        return
    st.session_state[Draft.title] = lesson.title
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(EDIT_FIELDS)]:
        del st.session_state[key]  # the edit forms start from the new lesson's steps
    open_tab(WRITE_TAB)


def use_button(where, label: str, key: str, lesson: Lesson, saved: tuple[str, str] | None = None, **kwargs) -> None:
    """A button (in ``where``: ``st`` or a column) that puts ``lesson`` in the editor (:func:`use`)."""
    where.button(label, key=key, on_click=once(use), args=(lesson, saved), **kwargs)


def open_tab(tab: str) -> None:
    """Open the Lessons page on ``tab`` (:data:`TAKE_TAB` or :data:`WRITE_TAB`) at its next run."""
    st.session_state[Draft.tab] = tab


def say(place: str, level: str, text: str) -> None:
    """Leave a message for ``place`` (``"add"`` or ``"editor"``), shown once by :func:`said`."""
    st.session_state[Draft.said] = (place, level, text)


def said(place: str) -> None:
    """The message the last action left for ``place``, shown once."""
    message = st.session_state.get(Draft.said)
    if not message or message[0] != place:
        return
    del st.session_state[Draft.said]
    if message[1] == "success":
        st.success(md(message[2]), icon=":material/check_circle:")
    else:
        show_error(message[2], level=message[1])


# ---------------------------------------------------------------- "Add this view to my lesson"


def add_view_box() -> None:
    """The sidebar expander of every page: the view on screen becomes the draft's next step (lazy while closed)."""
    box = st.sidebar.expander(
        "Add this view to my lesson", icon=":material/playlist_add:", key=Draft.add_open, on_change="rerun"
    )
    if box.open is False:
        return
    with box:
        remember()
        st.caption(
            f"Your lesson has {counted(len(draft().steps), 'step')}. This page, as it is now, becomes the next one: "
            "reorder, edit, save, share or download it on the Lessons page, tab “Write a lesson”."
        )
        st.caption(KEEP_IT, help=KEEP_IT_HELP)
        view, words = _question_kind()
        with st.form(key=Draft.add_form, border=False):
            st.text_input("Step title (optional)", key=Draft.add_title, max_chars=lesson_file.TITLE_CHARS)
            note = "What to look at in this view, and why."
            st.text_area(
                "Note for the class", key=Draft.add_note, max_chars=lesson_file.TEXT_CHARS, height=90, placeholder=note
            )
            if words:
                _predict_fields(view, words)
            else:
                st.text_input("A question (optional)", key=Draft.add_question, max_chars=lesson_file.QUESTION_CHARS)
                st.text_area("Its options, one per line", key=Draft.add_options, height=80)
                most = lesson_file.MAX_OPTIONS
                st.number_input("Number of the right option", min_value=1, max_value=most, key=Draft.add_right)
            add, icon = "Add this view to my lesson", ":material/playlist_add:"
            st.form_submit_button(add, type="primary", icon=icon, key=Draft.add, on_click=once(_add_view))
        said("add")


def _view() -> Predict | str | None:
    """The head on screen as a predict check (question, word, expect empty), why it cannot be one, or None."""
    state = st.session_state
    if (url_state.shown_page() or "explore") not in PREDICT_PAGES:
        return None
    model, text, _ = shown_view()  # the model and sentence the page traces (a typed Hub id or folder included)
    if model not in check_editor.predict_models():
        return (
            f"the model on screen (“{model}”) is not one a lesson's “which token” question reads: one of this "
            "server's encoders or decoders of the model list (not an encoder-decoder, a typed or trained model)."
        )
    if not text.strip():
        return "the sentence on screen is empty."
    if len(text) > (most := lesson_file.SENTENCE_CHARS):
        return f"the sentence on screen has {len(text):,} characters; a lesson's question holds at most {most}."
    causal, own = state.get(K.causal), state.get(K.causal_default)
    if state.get(K.causal_for) != model or own is None or bool(causal) == bool(own):
        causal = None  # the model's own mask (what the page shows unless the toggle changed it)
    layer, head = bounded(state.get(K.layer), 0, 4096), bounded(state.get(K.head), 0, 4096)
    return Predict("", model, text, "", "", "", layer, head, None if causal is None else bool(causal))


def _words(view: Predict) -> Words | str:
    """The sentence's tokens as the model reads it in a lesson (specials left out), or why they cannot be read."""
    try:
        tokens = lesson_attention(view.model, view.text, view.causal).tokens
    except Exception as exc:  # noqa: BLE001 — the model run may raise anything: the reason, multiple choice still
        return plain_error(exc)
    seen: Counter[str] = Counter()
    words: Words = {}
    for i, (string, special) in enumerate(zip(tokens.strings, tokens.special)):
        word = string.strip()
        occurrence = seen[word.lower()]  # as find_token counts them
        seen[word.lower()] += 1
        if word and not special and len(word) <= lesson_file.WORD_CHARS:
            words[i] = (word, occurrence)
    return words or "the sentence on screen has no word a question can ask about."


def _question_kind() -> tuple[Predict | None, Words]:
    """The kind of question (outside the form, so a new kind shows its fields at once); the view and its words."""
    view = _view()
    if not isinstance(view, Predict):
        settle(Draft.add_kind, "choice")
        if view:
            st.caption(md("Multiple choice only: " + view))
        return None, {}
    if st.session_state.get(Draft.add_kind) not in ADD_KINDS:
        settle(Draft.add_kind, "choice")
    if st.radio("Kind of question", list(ADD_KINDS), format_func=ADD_KINDS.get, key=Draft.add_kind) != "predict":
        return view, {}
    words = _words(view)
    if isinstance(words, str):  # the radio is drawn: its value stays (Add then says why, as here)
        st.caption(md("Multiple choice only: " + words))
        return view, {}
    return view, words


def _predict_fields(view: Predict, words: Words) -> None:
    """The "which token" question's one field, the word (first: the token highlighted on the page, else the first)."""
    mask = "" if view.causal is None else ", causal mask " + ("on" if view.causal else "off")
    label = check_editor.predict_models()[view.model]
    st.caption(
        md(f"{label}, layer {view.layer} head {view.head}{mask}, on the sentence on screen.")
        + " Students pick the token they think the word looks at; the answer is read from the model when they "
        "answer. Change the question or add an explanation in the editor."
    )
    if st.session_state.get(Draft.add_word) not in words:
        shown = (st.session_state.get(key) for key in (Shown.focus, Walk.query))
        settle(Draft.add_word, next((i for i in shown if i in words), next(iter(words))))
    st.selectbox(
        "From the word",
        list(words),
        key=Draft.add_word,
        format_func=lambda i: words[i][0] + (f" ({_nth(words[i][1] + 1)})" if words[i][1] else ""),
        help="The sentence's tokens as the model reads them.",
    )


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _view_check() -> Predict | str:
    """The predict check of the view and the picked word, or why not."""
    view = _view()
    if not isinstance(view, Predict):
        return "This view cannot ask which token a head looks at" + (f": {view}" if view else ".")
    words = _words(view)
    if isinstance(words, str):
        return words[:1].upper() + words[1:]
    picked = st.session_state.get(Draft.add_word)
    if picked not in words:  # a stale or forged pick: the picker offers the sentence's words
        return "Pick the word the question asks about among the sentence's words."
    word, occurrence = words[picked]
    question = f"Which token does head {view.layer}.{view.head} look at from “{word}”?"
    check = replace(view, question=question, word=word, occurrence=occurrence)
    return check_editor.with_top_key(check)  # the model checks the head and word; expect: its top key


def _add_view() -> None:
    """on_click of the form: the last run's page and its link parameters become a step."""
    state = st.session_state
    page = url_state.shown_page() or "explore"
    params = {k: v for k, v in url_state.page_params(page).items() if k not in LEFT_OUT}
    try:
        if state.get(Draft.add_kind) == "predict":
            check = _view_check()
            if isinstance(check, str):
                raise LessonFileError(check)
        else:
            check = choice_from(state.get(Draft.add_question), state.get(Draft.add_options), state.get(Draft.add_right))
    except LessonFileError as exc:
        say("add", "warning", str(exc))
        return
    name = lesson_file.PAGE_TITLES.get(page, page)
    title, note, lesson = clean(state.get(Draft.add_title), False), clean(state.get(Draft.add_note)), draft()
    taken = {step.id for step in lesson.steps}
    sid = next(sid for sid in iter(lambda: f"s{secrets.token_hex(3)}", None) if sid not in taken)
    link = Link(f"{page}.py", f"Open this view: {name}", params)
    step = Step(sid, title or ("" if note else name), note, (link,), check)
    added = f"Added as step {len(lesson.steps) + 1} of your lesson."
    if change(replace(lesson, steps=(*lesson.steps, step)), "add", added):
        for key in (Draft.add_title, Draft.add_note, Draft.add_question, Draft.add_options):
            state[key] = ""
        open_tab(WRITE_TAB)  # the Lessons page opens on the editor
