"""Class: a teacher starts a room, students join with a code, link or QR code, and answer live questions.

The room lives in the class store (every app process reads it); the teacher's browser keeps its secret (the control
link); students see questions above any page (``room_panel``). On a projector (``?present=1``) the first screen is
the code, the join link, its QR code and the live poll; the teacher's controls are folded under them.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

import plotly.graph_objects as go
import streamlit as st

from app.links import app_link
from app.runtime.rooms import HEAD_CHOICES, class_store, head_question, predict_question
from app.state import DEFAULT_TEXT, default_from
from app.store import MAX_SECONDS, ROOM_HOURS, Ask, RoomError, StoreUnavailable
from app.ui.charts import ready, show_chart
from app.ui.clicks import once
from app.ui.guard import calm_errors, show_error
from app.ui.heatmap import safe_label
from app.ui.safe_text import isolated, md
from app.ui.share_box import qr_png
from app.ui.theme import controls, current, presenting
from app.views.classroom.browser_cookie import (
    TEACHER_COOKIE,
    browser_id,
    read_cookie,
    refused,
    remember_browser,
    write_cookie,
)
from app.views.classroom.countdown import countdown
from app.views.classroom.free_text import answered, moderation, words_chart
from app.views.classroom.keys import ROOM
from app.views.classroom.results import take_home
from app.views.classroom.room_lesson import teacher_controls
from app.views.classroom.room_panel import QUESTION_MAP_HALF, question_map

PAGE_PATH = "classroom"  # this page's URL path (its file name)
TEACHER_PARAM = "teacher"  # the control link's parameter: CODE-TOKEN
PREDICT_MODELS = ("minilm", "tiny-gpt-stories")
#: the "which token" form's defaults: MiniLM's pronoun head, "it" → "animal" (the Lessons page's measured head)
PREDICT_DEFAULT = (DEFAULT_TEXT, 3, 1, "it")
HISTORY = 10  # earlier questions listed under the live one
#: presenter mode: the join link wraps clear of its copy button; the QR code's side follows the window's height
PROJECTED_CSS = f"""<style>
.st-key-{ROOM.invite} pre {{ padding-right: 3.2rem !important; }}
.st-key-{ROOM.invite} pre code {{ white-space: pre-wrap !important; word-break: break-all; }}
.st-key-{ROOM.invite} [data-testid="stElementContainer"]:has([data-testid="stImage"]) {{ width: 100% !important; }}
.st-key-{ROOM.invite} [data-testid="stFullScreenFrame"] > div {{ width: min(34vh, 100%) !important; }}
.st-key-{ROOM.invite} [data-testid="stImage"], .st-key-{ROOM.invite} [data-testid="stImageContainer"],
.st-key-{ROOM.invite} [data-testid="stImage"] img {{ width: 100% !important; }}
</style>"""
FOLDED = "Ask a question, run a lesson, end the class"  # presenter mode: the expander that holds the controls
LIVE_S = 0.5  # seconds between the teacher's looks at the answers: an answer shows within 2 s (tests/e2e/test_class_room_e2e.py)


def _teacher() -> tuple[str, str] | None:
    """The class this browser teaches: from the control link (then taken out of the address bar), the session, or
    the browser's teacher cookie if its class is still open."""
    if link := st.query_params.get(TEACHER_PARAM):
        del st.query_params[TEACHER_PARAM]  # the secret does not stay on a projected screen or in the share box
        code, _, token = link.partition("-")
        st.session_state[ROOM.teacher] = (code, token)
    return default_from(ROOM.teacher, _teacher_from_cookie)


def _teacher_from_cookie() -> tuple[str, str] | None:
    """A new session's class: the one in the browser's teacher cookie, if it is still open."""
    kept = read_cookie(TEACHER_COOKIE)
    if not kept:
        return None
    code, _, token = kept.partition("-")
    try:
        class_store().teacher_room(code, token)
    except RoomError:
        return None  # that class has ended: the page offers a new one (and forgets the cookie)
    except StoreUnavailable:
        pass  # main() says the store is away; the class may still be there
    return code, token


def _start() -> None:
    st.write(
        "Start a class and your students join with a six-character code, a link or a QR code: no accounts, no "
        "names. Then push questions to every student's screen and watch the answers come in."
    )
    if st.button("Start a class", type="primary", icon=":material/groups:", key=ROOM.start):
        with refused():
            room, token = class_store().create_room(browser_id())
            st.session_state[ROOM.teacher] = (room.code, token)
            st.rerun()


def _invite(code: str, token: str | None = None) -> None:
    """The code, the join link and its QR code; without ``token`` (presenter mode) readable from the back of the room,
    else beside the teacher's control link."""
    join, projected = app_link("", {"room": code}), token is None
    if projected:
        st.html(PROJECTED_CSS)
    left, right = [st.container(key=ROOM.invite)] * 2 if projected else st.columns([3, 2])
    with left:
        st.markdown(f"## Class code: `{code}`" if projected else f"Class code: **`{code}`**")
        st.caption("Students open this link (or scan the code) on any page of the app:")
        st.code(join, language=None, wrap_lines=True)
        if token:
            with st.expander("Your control link (keep it to yourself)", icon=":material/key:"):
                _control_link(code, token)
    with right:
        if (png := qr_png(join)) is not None:
            st.image(png, caption=f"Scan to join class {code}", alt="QR code of the join link")


def _control_link(code: str, token: str) -> None:
    st.caption("Open it on another device to run this class from there. Anyone with it controls the class.")
    st.code(app_link(PAGE_PATH, {TEACHER_PARAM: f"{code}-{token}"}), language=None, wrap_lines=True)


def _projected_control_link(code: str, token: str) -> None:
    """Presenter mode: the control link stays off the projected screen (a photo of it would give anyone the class)
    until the teacher turns on the switch that shows it."""
    if st.toggle("Show my control link on this screen (the room can read it)", key=ROOM.show_link):
        _control_link(code, token)
    else:
        st.caption(
            "Your control link is hidden on the projector: anyone who reads it controls the class. Show it for a "
            "moment to copy it (the button beside it) and open it on another device, then hide it again."
        )


def _class_note() -> None:
    st.caption(f"A class lasts {ROOM_HOURS:g} hours. Nothing about students is kept but an anonymous id per browser.")


@st.fragment(run_every=LIVE_S)
def _live(code: str, token: str) -> None:
    with calm_errors("class live"), refused(level="error"):
        store = class_store()
        count, question = store.member_count(code), store.current_question(code)
        counts = None if question is None else store.distribution(question)
        st.metric("Students joined", count)
        if question is None:
            st.caption("No question yet: push one below.")
            return
        st.markdown(f"**{md(question.prompt)}**")
        state = "answer revealed" if question.revealed else "closed: no more answers" if question.closed else "live"
        n = answered(question) if question.kind == "text" else sum(counts)
        st.caption(f"{n} of {count} answered · {state}")
        countdown(question, large=presenting())
        answer = st.empty()  # the projector: the answer above the charts, inside the first screen; else below them
        _results(question, counts, ROOM.results)
        if question.revealed and question.answer is not None:
            with answer.container() if presenting() else contextlib.nullcontext():
                st.success(f"The answer: **{md(question.options[question.answer])}**", icon=":material/check_circle:")
        if not question.revealed:
            _question_buttons(code, token, question, n)
        if problem := st.session_state.pop(ROOM.reveal_error, None):
            show_error(problem)


def _question_buttons(code: str, token: str, question, answered: int) -> None:
    """Reveal, Close or Reopen, and Reset (after a confirmation) of the question on screen. Callbacks: each runs
    before the fragment draws again, which then shows what it did."""
    qid, store = question.id, class_store()
    if st.session_state.get(ROOM.reset_asked) == qid:
        plural = "" if answered == 1 else "s"
        st.warning(f"Clear the {answered} answer{plural} to this question? Students can answer again while it is open.")
        yes, no = st.columns(2)
        yes.button(
            "Clear the answers",
            key=f"{ROOM.reset}yes_{qid}",
            on_click=once(_act),
            args=(store.reset_question, code, token, qid),
        )
        no.button("Keep them", key=f"{ROOM.reset}no_{qid}", on_click=once(_ask_reset), args=(None,))
        return
    reveal, toggle, reset = st.columns(3)
    if question.kind != "text":  # a free-text question has no answer to reveal
        reveal.button(
            "Reveal the answer",
            key=f"{ROOM.reveal}{qid}",
            type="primary",
            on_click=once(_act),
            args=(store.reveal, code, token, qid),
        )
    act = store.reopen_question if question.closed else store.close_question
    label, icon = ("Reopen", "lock_open") if question.closed else ("Close", "lock")
    toggle.button(
        label, key=f"{ROOM.close}{qid}", icon=f":material/{icon}:", on_click=once(_act), args=(act, code, token, qid)
    )
    reset.button(
        "Reset answers", key=f"{ROOM.reset}{qid}", icon=":material/restart_alt:", on_click=once(_ask_reset), args=(qid,)
    )


def _ask_reset(question_id: str | None) -> None:
    st.session_state[ROOM.reset_asked] = question_id


def _act(act, code: str, token: str, question_id: str) -> None:
    """on_click of a question's buttons: ``act`` (the store's reveal, close, reopen or reset) on it."""
    st.session_state[ROOM.reset_asked] = None
    with refused(ROOM.reveal_error):
        act(code, token, question_id)


def _results(question, counts: list[int], prefix: str) -> None:
    """The class's answers; beside them a "which head" question's map (all along: it is the question; a long
    sentence's below), or a revealed "which token" question's real row."""
    if question.kind == "text":
        words_chart(question, f"{prefix}words_{question.id}")
        return
    head, keys = question.kind == "head", question.detail.get("keys")
    weights = question.detail.get("weights") if question.kind == "predict" and question.revealed else None
    row = isinstance(weights, list) and len(weights) == len(question.options)
    if not (head or row):
        _distribution(question, counts, f"{prefix}answers_{question.id}")
        return
    wide = head and not (isinstance(keys, list) and len(keys) <= QUESTION_MAP_HALF)  # no room for a label per token
    left, right = (st.container(), st.container()) if wide else st.columns([2, 3] if head else 2)
    with left:
        _distribution(question, counts, f"{prefix}answers_{question.id}", title="The class's answers")
    with right:
        if head:
            question_map(question, f"{prefix}{ROOM.map}{question.id}")
        else:
            _head_row(question, [float(w) for w in weights], f"{prefix}row_{question.id}")


#: px per bar of a poll's chart; on the projector a long poll's bars share PRESENT_BARS_PX (so it fits 1280×720),
#: never below BAR_PX_MIN (Plotly thins the labels that would overlap)
BAR_PX, PRESENT_BARS_PX, BAR_PX_MIN = 28, 256, 8


def bar_px(n: int, projector: bool) -> int:
    """Height of one bar of ``n``: :data:`BAR_PX`, or on the projector what fits :data:`PRESENT_BARS_PX`."""
    return max(BAR_PX_MIN, min(BAR_PX, PRESENT_BARS_PX // max(n, 1))) if projector else BAR_PX


def _bars(question, values, colours, key: str, xaxis: dict, title: str = "", hover: str = "%{x}") -> None:
    """Horizontal bars, one per option in the options' order: the answers and the head's row line up side by side
    (a one-line title, at most 20 px: half the projector's width holds "The model: layer 3 head 1"). Every bar is
    labelled (in a type no taller than its bar: Plotly would drop every other label); on the projector no toolbar
    covers the title."""
    labels = [f"{i + 1}. {safe_label(o)}" for i, o in enumerate(question.options)]  # numbered: always distinct
    px, look = bar_px(len(labels), presenting()), current()
    title_px = min(look.title_px, 20)
    top = title_px + 24 if title else 10
    hover = f"%{{y}}: {hover}<extra></extra>"
    fig = go.Figure(go.Bar(x=values, y=labels, orientation="h", marker_color=colours, hovertemplate=hover))
    fig.update_layout(
        height=70 + px * len(labels) + top,
        margin=dict(l=10, r=10, t=top, b=30),
        title=dict(text=title, y=1, yref="container", yanchor="top", pad=dict(t=8)) if title else None,
        xaxis=xaxis,
        yaxis=dict(autorange="reversed", type="category", tickmode="array", tickvals=labels, ticktext=labels),
    )
    themed = ready(fig)
    themed.spec["layout"]["yaxis"]["tickfont"]["size"] = min(look.tick_px, px)
    if title:
        themed.spec["layout"]["title"]["font"]["size"] = title_px
    show_chart(themed, key=key, width="stretch", toolbar=not presenting())


def _distribution(question, counts: list[int], key: str, title: str = "") -> None:
    right = question.answer if question.revealed else None
    colours = ["#2ca02c" if i == right else "#4c78a8" for i in range(len(counts))]
    xaxis = dict(title="students", rangemode="tozero", dtick=1 if max(counts, default=0) < 10 else None)
    _bars(question, counts, colours, key, xaxis, title)
    st.caption(
        "Each bar is one answer, numbered in the order students see them; its length is how many students picked "
        "it" + (" (green: the right answer)." if right is not None else ". The right one turns green when revealed.")
    )


def _head_row(question, weights: list[float], key: str) -> None:
    """The real head's weights from the question's token over every token of the sentence (read when it was asked)."""
    detail = question.detail
    best = max(range(len(weights)), key=weights.__getitem__)
    colours = ["#2ca02c" if i == best else "#f58518" for i in range(len(weights))]
    query = question.options[detail["query"]] if 0 <= detail.get("query", -1) < len(question.options) else "?"
    title = f"The model: layer {detail.get('layer')} head {detail.get('head')}"
    xaxis = dict(title=f"attention weight from “{safe_label(query)}”", range=[0, max(max(weights), 1e-6) * 1.05])
    _bars(question, weights, colours, key, xaxis, title, hover="%{x:.3f}")


def _history(code: str) -> None:
    """The room's earlier questions with their answers: a replaced question's results stay on the page."""
    store = class_store()
    try:
        past = [(q, store.distribution(q)) for q in store.earlier_questions(code, HISTORY)]
        said = [answered(q) if q.kind == "text" else sum(counts) for q, counts in past]
    except StoreUnavailable:
        return  # the live part above already says the store is away
    if not past:
        return
    st.subheader("Earlier questions")
    for i, (question, counts) in enumerate(past):
        with st.expander(f"{isolated(question.prompt)} · {said[i]} answered", expanded=i == 0):
            if question.answer is not None:
                said = "The answer" if question.revealed else "The answer (not revealed to the class)"
                st.caption(f"{said}: **{md(question.options[question.answer])}**")
            _results(question, counts, ROOM.past)


def _push_choice(code: str, token: str) -> None:
    with st.form("class_choice_form", clear_on_submit=False):
        prompt = st.text_input(
            "Question", max_chars=300, key=ROOM.q_prompt, placeholder="Which vector does a query get compared with?"
        )
        options = st.text_area(
            "Options, one per line (2 to 8)", key=ROOM.q_options, placeholder="the keys\nthe values\nthe queries"
        )
        right = st.number_input(
            "Number of the right option (0: none)", min_value=0, max_value=8, value=0, key=ROOM.q_right
        )
        seconds = _time_limit(ROOM.q_seconds)
        if st.form_submit_button("Ask the class", type="primary", key=ROOM.ask_choice):
            lines = [line for line in options.splitlines() if line.strip()]
            answer = int(right) - 1 if right else None
            _push(code, token, Ask("choice", prompt, lines, answer, seconds=seconds))


def _time_limit(key: str) -> int:
    """A form's "Time limit (seconds)" box (0: none)."""
    help = "0: no limit. When the time is up the question takes no more answers; every screen counts down."
    return int(st.number_input("Time limit (seconds)", 0, MAX_SECONDS, 0, 10, key=key, help=help))


def _push_model(code: str, token: str, kind: str) -> None:
    """The form of a question read from a model: "which token does a head look at?" (``predict``: from a word) or
    "which head is this?" (``head``: its map, among :data:`HEAD_CHOICES` heads)."""
    predict = kind == "predict"
    key = ROOM.p_ if predict else ROOM.h_
    text, layer, head, word = PREDICT_DEFAULT
    with st.form(f"class_{kind}_form", clear_on_submit=False):
        model = st.selectbox("Model", PREDICT_MODELS, key=f"{key}model")
        text = st.text_input("Sentence", value=text, max_chars=400, key=f"{key}text")
        cols = st.columns(3 if predict else 2)
        layer = cols[0].number_input("Layer", min_value=0, max_value=63, value=layer, key=f"{key}layer")
        head = cols[1].number_input("Head", min_value=0, max_value=63, value=head, key=f"{key}head")
        if predict:
            word = cols[2].text_input("From the token", value=word, max_chars=40, key=f"{key}word")
            st.caption(
                "Students pick the token they think this head looks at most from that token; the answer is read "
                "from the model when you push the question."
            )
        else:
            st.caption(
                f"Students see this head's map of the sentence (not its name) and pick it among {HEAD_CHOICES} "
                "heads of the same model; the map is read from the model when you push the question."
            )
        seconds = _time_limit(f"{key}seconds")
        if st.form_submit_button("Ask the class", type="primary", key=ROOM.ask_predict if predict else ROOM.ask_head):
            read = (model, text, int(layer), int(head))
            try:
                asked = predict_question(*read, word) if predict else head_question(*read)
            except Exception as exc:  # noqa: BLE001 — a RoomError or an engine error (the text, the model), calmly
                show_error(str(exc) if isinstance(exc, RoomError) else exc)
                return
            _push(code, token, replace(asked, seconds=seconds))


def _push(code: str, token: str, ask: Ask) -> None:
    with refused():
        class_store().push_question(code, token, ask)
        st.rerun()


def main() -> None:
    teacher = _teacher()
    if teacher is None:
        st.title("Class")
        write_cookie(TEACHER_COOKIE, "", 0)  # its class ended (if any): a reload starts clean
        _start()
        return
    code, token = teacher
    try:
        class_store().teacher_room(code, token)
    except (RoomError, StoreUnavailable) as exc:
        st.title("Class")
        show_error(str(exc))
        if st.button("Start a new class", key=ROOM.restart):
            st.session_state[ROOM.teacher] = None
            st.rerun()
        return
    remember_browser()  # the browser keeps the class it teaches (and its anonymous id) for a reload or a reconnect
    write_cookie(TEACHER_COOKIE, f"{code}-{token}", int(ROOM_HOURS * 3600))
    if presenting():  # the projector: the code, link, QR code and the poll fill the first screen; controls folded
        invite, live = st.columns([2, 3], gap="large")
        with invite:
            _invite(code)
        with live:
            _live(code, token)
        with controls(FOLDED):
            _projected_control_link(code, token)
            moderation(code, token, masked=True)
            _class_note()
            _teacher_tools(code, token)
        _history(code)
        return
    st.title("Class")
    _invite(code, token)
    _class_note()
    _live(code, token)
    moderation(code, token, masked=False)
    _history(code)
    _teacher_tools(code, token)


def _teacher_tools(code: str, token: str) -> None:
    """Asking a question, running a lesson and ending the class."""
    st.subheader("Ask a question")
    tabs = ["Multiple choice", "Free text", "Which token does a head look at?", "Which head is this?"]
    choice, text, predict, which = st.tabs(tabs)
    with choice:
        _push_choice(code, token)
    with text:
        with st.form("class_text_form", clear_on_submit=False):
            prompt = st.text_input("Question", max_chars=300, key=ROOM.t_prompt, placeholder="One word for attention?")
            st.caption("Each student sends a short answer; the class sees their words, rude ones held back for you.")
            seconds = _time_limit(ROOM.t_seconds)
            if st.form_submit_button("Ask the class", type="primary", key=ROOM.ask_text):
                _push(code, token, Ask("text", prompt, [], seconds=seconds))
    with predict:
        _push_model(code, token, "predict")
    with which:
        _push_model(code, token, "head")
    st.subheader("Run a lesson")
    teacher_controls(code, token)
    st.subheader("Results to take home")
    take_home(code, token)
    if st.button("End the class", key=ROOM.end, icon=":material/logout:"):
        with refused():
            class_store().close_room(code, token)
            st.session_state[ROOM.teacher] = None
            st.rerun()


main()
