"""A teacher's own lesson (issue 21, 3): "Add this view to my lesson" on every page, and the lesson editor.

The draft is this session's :class:`app.views.lessons.lesson_file.Lesson` (``Draft.lesson``). Every change goes through
:func:`_replace`, which writes the lesson file and reads it back with the checks an uploaded file gets, so the
draft is always a lesson that can be downloaded, saved and opened again; a change that would break it (a note
too long, a question with one option) gets a message and changes nothing. Each change is also kept in the class
store under the browser's anonymous id (``browser_id``, its cookie written while there is a draft), with
the saved lesson it edits (``Draft.saved``: id and edit secret), so a new session of the same browser (a reload)
starts from it and "Save changes" still updates that lesson; the add box and the editor say where it lives.

- :func:`add_view_box`: a sidebar expander under "Share this view" on every page (drawn by
  ``share_box.share_expander``): the page on screen and its link parameters (``url_state.page_params``, the
  Share box's own link), a title, a note and an optional multiple-choice question become the draft's next step.
  On a text page with one head on screen (Explore, Heads, Step by step) the question may instead be "which
  token does this head look at from a word?": a predict check of the view's model, sentence, mask, layer and
  head, the word picked among the sentence's tokens as the model reads them, the answer read from the model
  when a student answers (``expect``: the head's top key). The model list, trace and checks are the lesson
  editor's (``check_editor``); a view it cannot make one from (another page, a model not on that list, a
  sentence too long for a lesson file) offers multiple choice only and says why.
- :func:`editor`: the Lessons page's "Write a lesson" tab: the steps with Up / Down / Delete and an edit form
  each (title, note and the knowledge check of any kind: ``app/views/lessons/check_editor.py``); save in the class store (a share link ``?lesson=ID`` that opens it read-only, and an edit link for the
  author), download as a TOML file, open a file, or start from the built-in lesson.

Text typed here is shown literally (``safe_text.md``): a draft may come from anyone's file.
"""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import dataclass, replace

import streamlit as st

from app import url_state
from app.links import app_link
from app.routes import PAGES
from app.runtime.rooms import browser_cookie_missing, browser_id, lesson_store
from app.state import K, bounded, default, default_from, settle
from app.state import Look as Shown
from app.store import RoomError, StoreUnavailable
from app.ui.clicks import once
from app.ui.guard import plain_error, show_error
from app.ui.safe_text import md, quoted
from app.url_params import shown_view
from app.views.classroom.browser_cookie import remember_browser
from app.views.lessons import check_editor
from app.views.lessons.check_editor import choice_from
from app.views.lessons.keys import Draft, Lessons
from app.views.lessons.lesson_file import (
    MAX_BYTES,
    MAX_OPTIONS,
    QUESTION_CHARS,
    SENTENCE_CHARS,
    TEXT_CHARS,
    TITLE_CHARS,
    WORD_CHARS,
    Choice,
    Lesson,
    LessonFileError,
    Link,
    Look,
    Predict,
    Step,
    file_name,
    read_lesson,
    write_lesson,
)
from app.views.step_by_step.keys import Step as Walk

EDIT_PARAM = "lesson_edit"  # the author's edit link: ?lesson=ID&lesson_edit=SECRET (read once, then removed)
TAKE_TAB, WRITE_TAB = "Take a lesson", "Write a lesson"
PAGE_TITLES = {file.removesuffix(".py"): title for file, title, _ in PAGES}
LEFT_OUT = ("present",)  # link parameters a lesson step does not keep (presenter mode is the teacher's own)
EMPTY = Lesson("My lesson", ())
PREDICT_PAGES = ("explore", "heads", "step_by_step")  # text pages with one head on screen (K.layer, K.head)
ADD_KINDS = {"choice": "Multiple choice", "predict": "Which token does this head look at from a word?"}
# where the draft lives, said next to "Add" and in the editor (a reload used to lose it silently)
KEEP_IT = (
    ":material/info: The draft is kept in this browser only, for a day: a reload brings it back, another browser or "
    "device does not see it. To keep it, **save** it or **download** it (Lessons page, “Write a lesson”)."
)
KEEP_IT_HELP = (
    "The app keeps your draft under an anonymous id this browser holds in a cookie (no name). Saving stores the "
    "lesson for good and gives you a link to open it again (and an edit link); downloading gives you a lesson "
    "file to open here later."
)


def draft() -> Lesson:
    """This session's lesson draft (empty until a view is added or a lesson opened); a new session starts from
    the draft this browser kept (:func:`_kept`: a reload, or a page opened by typing its address)."""
    return default_from(Draft.lesson, _start) or EMPTY


def _start() -> Lesson:
    """A new session's draft: the one this browser kept (the saved lesson it edits, if any, remembered too)."""
    lesson, saved = _kept()
    if saved is not None:  # the draft edits a saved lesson: "Save changes" updates it, its links stay the same
        st.session_state[Draft.saved] = saved
        owned()[saved[0]] = saved[1]
    return lesson


def _kept() -> tuple[Lesson, tuple[str, str] | None]:
    """The draft this browser kept in the class store, when its id came back in its cookie, and the saved lesson
    (id, edit secret) it edits, if any; else an empty draft."""
    if browser_cookie_missing():  # a new browser (or one that never wrote a draft): nothing to look up
        return EMPTY, None
    try:
        store, browser = lesson_store(), browser_id()
        body = store.kept_draft(browser)
        if not body:
            return EMPTY, None
        return read_lesson(body), store.kept_draft_lesson(browser)
    except (StoreUnavailable, RoomError, LessonFileError):
        return EMPTY, None  # the store is a bonus here: the session starts an empty draft, as it did before


def _keep(lesson: Lesson) -> None:
    """Write the draft (every change) to the class store under this browser's id, with the saved lesson it edits
    (``Draft.saved``), so a reload brings both back."""
    try:
        lesson_store().keep_draft(
            browser_id(), write_lesson(lesson) if lesson.steps else "", st.session_state.get(Draft.saved)
        )
    except (StoreUnavailable, RoomError):
        pass  # the session still holds the draft; the editor says how to keep it (save, download)


def _remember_browser() -> None:
    """While there is a draft, the browser keeps its anonymous id in its cookie (what :func:`_kept` reads back)."""
    if draft().steps:
        remember_browser()


def owned() -> dict[str, str]:
    """{saved lesson id: edit secret} this session may change (its own saves, and edit links it opened)."""
    return default(Draft.owned, {})


def _replace(lesson: Lesson) -> str | None:
    """Make ``lesson`` the draft when it reads back from its own file; else the reason (the draft is unchanged)."""
    try:
        checked = read_lesson(write_lesson(lesson)) if lesson.steps else lesson
    except LessonFileError as exc:
        return str(exc)
    st.session_state[Draft.lesson] = checked
    _keep(checked)
    return None


def use(lesson: Lesson, saved: tuple[str, str] | None = None) -> None:
    """Put ``lesson`` in the editor (``saved``: the id and edit secret of the stored lesson it is, if any)."""
    before = st.session_state.get(Draft.saved)
    st.session_state[Draft.saved] = saved  # first, so the kept draft names the lesson it edits
    problem = _replace(lesson)
    if problem:
        st.session_state[Draft.saved] = before
        _say("editor", "warning", problem)
        return
    st.session_state[Draft.title] = lesson.title
    forms = (Draft.edit_title, Draft.edit_note, *check_editor.FIELDS)
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(forms)]:
        del st.session_state[key]  # the edit forms start from the new lesson's steps
    open_tab(WRITE_TAB)


def open_tab(tab: str) -> None:
    """Open the Lessons page on ``tab`` (:data:`TAKE_TAB` or :data:`WRITE_TAB`) at its next run."""
    st.session_state[Draft.tab] = tab


def _say(place: str, level: str, text: str) -> None:
    st.session_state[Draft.said] = (place, level, text)


def _said(place: str) -> None:
    """The message the last action left for ``place`` (``"add"`` or ``"editor"``), shown once."""
    said = st.session_state.get(Draft.said)
    if not said or said[0] != place:
        return
    del st.session_state[Draft.said]
    if said[1] == "success":
        st.success(md(said[2]), icon=":material/check_circle:")
    else:
        show_error(said[2], level=said[1])


def _clean(text: object, lines: bool = True) -> str:
    """Typed text without control characters (line breaks kept when ``lines``), trimmed."""
    s = str(text or "").replace("\r\n", "\n").replace("\r", "\n")
    s = "".join(c for c in s if c in "\n\t" or (ord(c) >= 32 and ord(c) != 127 and not 0xD800 <= ord(c) <= 0xDFFF))
    return s.strip() if lines else " ".join(s.split())


def _new_id(lesson: Lesson) -> str:
    taken = {step.id for step in lesson.steps}
    while True:
        sid = f"s{secrets.token_hex(3)}"
        if sid not in taken:
            return sid


# ---------------------------------------------------------------- "Add this view to my lesson"


def add_view_box() -> None:
    """The sidebar expander of every page: the view on screen becomes the draft's next step (lazy while closed)."""
    box = st.sidebar.expander(
        "Add this view to my lesson", icon=":material/playlist_add:", key=Draft.add_open, on_change="rerun"
    )
    if box.open is False:
        return
    with box:
        _remember_browser()
        n = len(draft().steps)
        st.caption(
            f"Your lesson has {n} step{'s' if n != 1 else ''}. This page, as it is now, becomes the next one: "
            "reorder, edit, save, share or download it on the Lessons page, tab “Write a lesson”."
        )
        st.caption(KEEP_IT, help=KEEP_IT_HELP)
        view, words = _question_kind()
        with st.form(key=Draft.add_form, border=False):
            st.text_input("Step title (optional)", key=Draft.add_title, max_chars=TITLE_CHARS)
            st.text_area(
                "Note for the class",
                key=Draft.add_note,
                max_chars=TEXT_CHARS,
                height=90,
                placeholder="What to look at in this view, and why.",
            )
            if words:
                _predict_fields(view, words)
            else:
                st.text_input("A question (optional)", key=Draft.add_question, max_chars=QUESTION_CHARS)
                st.text_area("Its options, one per line", key=Draft.add_options, height=80)
                st.number_input("Number of the right option", min_value=1, max_value=MAX_OPTIONS, key=Draft.add_right)
            st.form_submit_button(
                "Add this view to my lesson",
                type="primary",
                icon=":material/playlist_add:",
                key=Draft.add,
                on_click=once(_add_view),
            )
        _said("add")


@dataclass(frozen=True)
class View:
    """The head on screen a "which token" question of the add box asks about (a predict check's fields)."""

    model: str
    label: str  # the model's name in the catalog
    text: str
    causal: bool | None  # None: the model's own mask
    layer: int
    head: int


def _view() -> View | str | None:
    """The view on screen as a predict check reads it; why it cannot make one (plain text), or None on a page
    without one head on screen."""
    state = st.session_state
    if (url_state.shown_page() or "explore") not in PREDICT_PAGES:
        return None
    model, text, _ = shown_view()  # the model and sentence the page traces (a typed Hub id or folder included)
    models = check_editor.predict_models()  # the lesson editor's list for this question
    if model not in models:
        return (
            f"the model on screen (“{model}”) is not one a lesson's “which token” question reads: one of this "
            "server's encoders or decoders of the model list (not an encoder-decoder, a typed or trained model)."
        )
    if not text.strip():
        return "the sentence on screen is empty."
    if len(text) > SENTENCE_CHARS:
        return (
            f"the sentence on screen has {len(text):,} characters; a lesson's question holds at most {SENTENCE_CHARS}."
        )
    causal, own = state.get(K.causal), state.get(K.causal_default)
    if state.get(K.causal_for) != model or own is None or bool(causal) == bool(own):
        causal = None  # the model's own mask (what the page shows unless the toggle changed it)
    layer, head = bounded(state.get(K.layer), 0, 4096), bounded(state.get(K.head), 0, 4096)
    return View(model, models[model], text, None if causal is None else bool(causal), layer, head)


def _words(view: View) -> dict[int, tuple[str, int]] | str:
    """{token position: (word, occurrence)} of the sentence's tokens as the model reads it in a lesson (the
    trace a student's answer reads), specials left out; or why it cannot be read (plain text)."""
    try:
        tokens = check_editor.lesson_attention(view.model, view.text, view.causal).tokens
    except Exception as exc:  # noqa: BLE001 — the model run may raise anything: the reason, multiple choice still
        return plain_error(exc)
    seen: Counter[str] = Counter()
    words: dict[int, tuple[str, int]] = {}
    for i, (string, special) in enumerate(zip(tokens.strings, tokens.special)):
        word = string.strip()
        occurrence = seen[word.lower()]  # as find_token counts them
        seen[word.lower()] += 1
        if word and not special and len(word) <= WORD_CHARS:
            words[i] = (word, occurrence)
    return words or "the sentence on screen has no word a question can ask about."


def _question_kind() -> tuple[View | None, dict[int, tuple[str, int]]]:
    """The kind of question (outside the form: a new kind shows its fields at once), offered where the view can
    make a predict check; the view and its words when that kind is picked."""
    view = _view()
    if not isinstance(view, View):
        settle(Draft.add_kind, "choice")
        if view:
            st.caption(md("Multiple choice only: " + view))
        return None, {}
    if st.session_state.get(Draft.add_kind) not in ADD_KINDS:
        settle(Draft.add_kind, "choice")
    kind = st.radio("Kind of question", list(ADD_KINDS), format_func=ADD_KINDS.get, key=Draft.add_kind)
    if kind != "predict":
        return view, {}
    words = _words(view)
    if isinstance(words, str):  # the radio is drawn: its value stays (Add then says why, as here)
        st.caption(md("Multiple choice only: " + words))
        return view, {}
    return view, words


def _first_word(words: dict[int, tuple[str, int]]) -> int:
    """The word the picker starts from: the token highlighted on the page (Explore, Heads), Step by step's query,
    else the sentence's first word."""
    state = st.session_state
    for key in (Shown.focus, Walk.query):
        if state.get(key) in words:
            return state[key]
    return next(iter(words))


def _predict_fields(view: View, words: dict[int, tuple[str, int]]) -> None:
    """The "which token" question's one field, the word, under what the view fixes."""
    mask = "" if view.causal is None else ", causal mask " + ("on" if view.causal else "off")
    st.caption(
        md(f"{view.label}, layer {view.layer} head {view.head}{mask}, on the sentence on screen.")
        + " Students pick the token they think the word looks at; the answer is read from the model when they "
        "answer. Change the question or add an explanation in the editor."
    )
    if st.session_state.get(Draft.add_word) not in words:
        settle(Draft.add_word, _first_word(words))
    st.selectbox(
        "From the word",
        list(words),
        key=Draft.add_word,
        format_func=lambda i: words[i][0] + (f" ({_nth(words[i][1] + 1)})" if words[i][1] else ""),
        help="The sentence's tokens as the model reads them.",
    )


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def question_for(layer: int, head: int, word: str) -> str:
    """The "which token" question a view's check asks (the editor changes it)."""
    return f"Which token does head {layer}.{head} look at from “{word}”?"


def _view_check() -> Predict | str:
    """The predict check of the view and the picked word (at submit: the last full run's view), or why not."""
    view = _view()
    if not isinstance(view, View):
        return "This view cannot ask which token a head looks at" + (f": {view}" if view else ".")
    words = _words(view)
    if isinstance(words, str):
        return words[:1].upper() + words[1:]
    picked = st.session_state.get(Draft.add_word)
    if picked not in words:  # a stale or forged pick: the picker offers the sentence's words
        return "Pick the word the question asks about among the sentence's words."
    word, occurrence = words[picked]
    check = Predict(
        question_for(view.layer, view.head, word),
        view.model,
        view.text,
        word,
        "",
        "",
        view.layer,
        view.head,
        view.causal,
        occurrence,
    )
    return check_editor.with_top_key(check)  # the model checks the head and word; expect: its top key


def _add_view() -> None:
    """on_click of the form: the last run's page and its link parameters become a step."""
    state = st.session_state
    page = url_state.shown_page() or "explore"
    params = {k: v for k, v in url_state.page_params(page).items() if k not in LEFT_OUT}
    if state.get(Draft.add_kind) == "predict":
        check = _view_check()
        if isinstance(check, str):
            _say("add", "warning", check)
            return
    else:
        try:
            check = choice_from(state.get(Draft.add_question), state.get(Draft.add_options), state.get(Draft.add_right))
        except LessonFileError as exc:
            _say("add", "warning", str(exc))
            return
    name = PAGE_TITLES.get(page, page)
    title, note = _clean(state.get(Draft.add_title), lines=False), _clean(state.get(Draft.add_note))
    lesson = draft()
    step = Step(
        _new_id(lesson),
        title or ("" if note else name),
        note,
        (Link(f"{page}.py", f"Open this view: {name}", params),),
        check,
    )
    problem = _replace(replace(lesson, steps=(*lesson.steps, step)))
    if problem:
        _say("add", "warning", problem)
        return
    for key in (Draft.add_title, Draft.add_note, Draft.add_question, Draft.add_options):
        state[key] = ""
    open_tab(WRITE_TAB)  # the Lessons page opens on the editor
    _say("add", "success", f"Added as step {len(lesson.steps) + 1} of your lesson.")


# ---------------------------------------------------------------- the editor


def editor() -> None:
    """The Lessons page's "Write a lesson" tab."""
    lesson = draft()
    _remember_browser()
    default(Draft.title, lesson.title)
    st.text_input("Title of your lesson", key=Draft.title, max_chars=TITLE_CHARS, on_change=_retitle)
    if not lesson.steps:
        st.info(
            "Your lesson has no steps yet. On any page, open **Add this view to my lesson** in the sidebar: the "
            "view on screen becomes a step, with your note and, if you like, a question. Or start from the "
            "built-in lesson or open a lesson file, below.",
            icon=":material/info:",
        )
    else:
        st.info(
            "This draft is kept in this browser only, for a day (a reload brings it back; another browser or "
            "device does not see it). To keep it, **save** it below (a link opens it again, on any device) or "
            "**download** it as a lesson file.",
            icon=":material/save:",
        )
    for i, step in enumerate(lesson.steps):
        _step_row(i, step, len(lesson.steps))
    _said("editor")
    _save_box(lesson)
    _file_box(lesson)


def _describe(link: Link) -> str:
    """ "Explore: model minilm · layer 3 · head 1" (the text is left out: it is long)."""
    shown = [f"{name} {value}" for name, value in link.params.items() if len(value) <= 40]
    return PAGE_TITLES.get(link.page.removesuffix(".py"), link.page) + (": " + " · ".join(shown) if shown else "")


def _step_row(i: int, step: Step, n: int) -> None:
    with st.container(border=True):
        head, up, down, delete = st.columns([5, 1.1, 1.4, 1.4], vertical_alignment="center")
        head.markdown(f"**{i + 1}. {md(step.title or step.text[:80])}**")
        up.button(
            "Up",
            key=f"{Draft.up}{step.id}",
            icon=":material/arrow_upward:",
            on_click=once(_move),
            args=(step.id, -1),
            disabled=i == 0,
            help="Move this step up",
        )
        down.button(
            "Down",
            key=f"{Draft.down}{step.id}",
            icon=":material/arrow_downward:",
            on_click=once(_move),
            args=(step.id, 1),
            disabled=i == n - 1,
            help="Move this step down",
        )
        delete.button(
            "Delete",
            key=f"{Draft.delete}{step.id}",
            icon=":material/delete:",
            on_click=once(_delete),
            args=(step.id,),
            help="Delete this step",
        )
        if step.text and step.title:
            st.caption(md(step.text if len(step.text) <= 300 else step.text[:299] + "…"))
        for link in step.links:
            st.caption("Opens " + md(_describe(link)))
        if isinstance(step.check, Choice):
            st.caption(f"Question: {md(step.check.question)} (answer: {md(step.check.options[step.check.answer])})")
        elif isinstance(step.check, Predict):
            st.caption(
                f"Check: which token does “{md(step.check.word)}” look at ({md(step.check.model)}, layer "
                f"{step.check.layer} head {step.check.head}); the answer is read from the model."
            )
        elif isinstance(step.check, Look):
            st.caption(
                f"Check: where does {md(step.check.model)} look when it writes “{md(step.check.word)}” (scene "
                f"{step.check.scene}); the answer is read from the model."
            )
        with st.expander("Edit this step", icon=":material/edit:"):
            _edit_form(step)


def _edit_form(step: Step) -> None:
    sid = step.id
    default(f"{Draft.edit_title}{sid}", step.title)
    default(f"{Draft.edit_note}{sid}", step.text)
    kind = check_editor.kind_picker(step)  # outside the form: a new kind shows its fields at once
    with st.form(key=f"{Draft.edit_form}{sid}", border=False):
        st.text_input("Title", key=f"{Draft.edit_title}{sid}", max_chars=TITLE_CHARS)
        st.text_area("Note", key=f"{Draft.edit_note}{sid}", max_chars=TEXT_CHARS, height=120)
        check_editor.fields(step, kind)
        st.form_submit_button("Save this step", key=f"{Draft.edit_save}{sid}", on_click=once(_edit), args=(sid,))


def _find(sid: str) -> tuple[Lesson, int]:
    lesson = draft()
    return lesson, next((i for i, step in enumerate(lesson.steps) if step.id == sid), -1)


def _move(sid: str, by: int) -> None:
    lesson, i = _find(sid)
    j = i + by
    if i < 0 or not 0 <= j < len(lesson.steps):
        return
    steps = list(lesson.steps)
    steps[i], steps[j] = steps[j], steps[i]
    _replace(replace(lesson, steps=tuple(steps)))


def _delete(sid: str) -> None:
    lesson, i = _find(sid)
    if i >= 0:
        _replace(replace(lesson, steps=lesson.steps[:i] + lesson.steps[i + 1 :]))


def _edit(sid: str) -> None:
    state = st.session_state
    lesson, i = _find(sid)
    if i < 0:
        return
    step = lesson.steps[i]
    try:
        check = check_editor.read_check(sid)
    except LessonFileError as exc:
        _say("editor", "warning", f"Step {i + 1}: {exc}")
        return
    problem = check_editor.model_problem(check) if check != step.check else None  # ask the model what changed
    if problem:
        _say("editor", "warning", f"Step {i + 1}: {problem}")
        return
    title, note = (
        _clean(state.get(f"{Draft.edit_title}{sid}"), lines=False),
        _clean(state.get(f"{Draft.edit_note}{sid}")),
    )
    if not title and not note:
        _say("editor", "warning", f"Step {i + 1}: give it a title or a note.")
        return
    changed = replace(step, title=title, text=note, check=check)
    problem = _replace(replace(lesson, steps=lesson.steps[:i] + (changed,) + lesson.steps[i + 1 :]))
    if problem:
        _say("editor", "warning", problem)
    else:
        _say("editor", "success", f"Step {i + 1} changed." + check_editor.top_key_note(check))


def _retitle() -> None:
    title = _clean(st.session_state.get(Draft.title), lines=False) or EMPTY.title
    problem = _replace(replace(draft(), title=title))
    if problem:
        _say("editor", "warning", problem)


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
        _say("editor", "error" if isinstance(exc, StoreUnavailable) else "warning", str(exc))
        return
    st.session_state[Draft.saved] = (lid, secret)
    owned()[lid] = secret
    _keep(lesson)  # a reload brings back the draft with the lesson it now edits
    _say("editor", "success", "Saved. Share the link below.")


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
    from app.views.lessons.offline_pack import lesson_pack_buttons  # imported when the editor is drawn

    lesson_pack_buttons("draft", lesson)
    st.caption("The offline pack: the steps with their charts and data in one HTML file a student opens from disk.")
    upload = st.file_uploader(
        "Open a lesson file",
        type=["toml"],
        key=Draft.upload,
        max_upload_size=1,
        help=f"A .toml lesson file, at most {MAX_BYTES // 1000} kB.",
    )
    if upload is not None:
        try:
            opened = read_lesson(upload.getvalue())
        except LessonFileError as exc:
            show_error(str(exc), before=f"{quoted(upload.name, 40)} cannot be opened: ")
        else:
            st.caption(f"{quoted(upload.name, 40)}: {md(opened.title)}, {len(opened.steps)} steps.")
            st.button(
                "Put it in the editor (replaces your draft)",
                key=Draft.use_upload,
                on_click=once(use),
                args=(opened,),
                icon=":material/upload_file:",
            )
    left, right = st.columns(2)
    from app.views.lessons.plan import LESSON  # the built-in lesson file, read once

    left.button(
        "Start from the built-in lesson",
        key=Draft.builtin,
        on_click=once(use),
        args=(LESSON,),
        help="Replaces your draft with the built-in lesson's steps, to change as you like.",
    )
    right.button("Empty the draft", key=Draft.clear, on_click=once(use), args=(EMPTY,), disabled=not lesson.steps)
