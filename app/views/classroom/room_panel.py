"""A student's view of the class they joined, drawn above every page: a join link (``?room=CODE``) joins once, the
browser's cookie finds the room again after a reload, and every :data:`POLL_S` seconds the panel reads the question
on screen, which takes an answer until its time is up or the teacher closes it or reveals the answer.
"""

from __future__ import annotations

import contextlib

import plotly.graph_objects as go
import streamlit as st

from app.runtime.rooms import class_store, lesson_store
from app.store import RoomError, StoreUnavailable
from app.ui.charts import ready, show_chart
from app.ui.guard import calm_errors, show_error
from app.ui.heatmap import safe_label, unique_labels
from app.ui.safe_text import md, quoted
from app.views.classroom.browser_cookie import browser_cookie_missing, browser_id, refused, remember_browser
from app.views.classroom.countdown import countdown
from app.views.classroom.free_text import text_box
from app.views.classroom.keys import ROOM
from app.views.classroom.room_lesson import show_step

#: a "which head is this?" map with up to this many key tokens fits half the teacher's page, every column label
#: printed upright at the theme's size; a longer sentence's map gets the page's width and a smaller type
QUESTION_MAP_HALF = 16
QUESTION_MAP_TICK_PX = 11  # up to 32 upright labels, none overlapping, across the page (its plot ~590 px)
POLL_S = 2.0  # seconds between a student's looks at the room (30 students: 15 small reads a second)
#: the answer's controls as touch targets of at least 44 × 44 px (a radio's row is 22 px tall by default)
ANSWER_CSS = f"""<style>
[class*="st-key-{ROOM.pick}"] [role="radiogroup"] {{ row-gap: 0; }}
[class*="st-key-{ROOM.pick}"] label[data-testid="stRadioOption"] {{ display: flex; align-items: center;
  min-height: 44px; min-width: 44px; padding-right: 0.75rem; }}
[class*="st-key-{ROOM.send}"] button, [class*="st-key-{ROOM.token_list}"] [role="group"] {{ min-height: 44px; }}
</style>"""


def student_panel() -> None:
    """Join the room a link names (once per link) and show the joined room's question, if any."""
    link = st.query_params.get("room")
    state = st.session_state
    if link is not None and state.get(ROOM.link_seen) != link:
        state[ROOM.link_seen] = link
        state[ROOM.join_error] = None
        with refused(ROOM.join_error):
            state[ROOM.joined] = class_store().join(link, browser_id()).code
    elif link is None and not state.get(ROOM.joined) and not state.get(ROOM.looked_up):
        _find_my_room()
    if link is not None and state.get(ROOM.join_error):
        show_error(state[ROOM.join_error], before=f"Could not join the class {quoted(link, 12)}: ")
    if state.get(ROOM.joined):
        remember_browser()  # a reload, a new tab or another worker: the same student
        _question(state[ROOM.joined])


def _find_my_room() -> None:
    """Once per session: the room this browser joined before (a reload without ``?room=``), if its id came back."""
    st.session_state[ROOM.looked_up] = True
    if browser_cookie_missing():  # a fresh id has joined nothing: no query for every visitor
        return
    with contextlib.suppress(StoreUnavailable):  # the panel is a bonus on this page: the page itself keeps working
        if (room := class_store().joined_room(browser_id())) is not None:
            st.session_state[ROOM.joined] = room.code


@st.fragment(run_every=POLL_S)
def _question(code: str) -> None:
    with calm_errors("class question"), st.container(border=True):
        store = class_store()
        try:
            room = store.room(code)
            lesson = lesson_store().room_lesson(room.code)
            question = store.current_question(room.code)
            mine = None if question is None else store.my_answer(question.id, browser_id())
        except RoomError as exc:
            show_error(str(exc), level="info")
            if st.button("Leave the class", key=ROOM.leave):
                _leave(code)
            return
        except StoreUnavailable as exc:
            show_error(str(exc), level="error")
            return
        if lesson is not None:  # the step of the lesson the teacher is running (issue 21, 3)
            show_step(lesson)
        if question is None:
            st.caption(f"Class **{room.code}**: you are in. The teacher's questions will appear here.")
            return
        st.caption(f"Class **{room.code}**: a question from your teacher")
        st.markdown(f"**{md(question.prompt)}**")
        if question.kind == "head":
            question_map(question, f"{ROOM.map}{question.id}")
        if question.kind == "text":
            countdown(question)
            text_box(room.code, question)
            return
        labels = [md(o) for o in question.options]
        if question.revealed:
            _revealed(question, mine)
            return
        if question.closed:
            said = "You did not answer in time." if mine is None else f"Your answer is in: **{labels[mine]}**."
            st.info(f"This question is closed: the teacher stopped taking answers. {said}", icon=":material/lock:")
            return
        countdown(question)
        st.html(ANSWER_CSS)
        pick_key, list_key = f"{ROOM.pick}{question.id}", f"{ROOM.token_list}{question.id}"
        pick = st.radio(
            "Your answer",
            range(len(labels)),
            index=mine,
            format_func=lambda i: labels[i],
            key=pick_key,
            horizontal=len(labels) > 4,
            on_change=_copy,
            args=(pick_key, list_key),
        )
        if question.kind == "predict":  # the sentence's tokens as a list too: easier than a tap on a phone
            st.selectbox(
                "Or pick the token from a list",
                range(len(labels)),
                index=mine,
                format_func=lambda i: labels[i],
                key=list_key,
                placeholder="Choose a token",
                on_change=_copy,
                args=(list_key, pick_key),
            )
        if st.button("Send my answer", key=f"{ROOM.send}{question.id}", disabled=pick is None, type="primary"):
            with refused():
                store.answer(room.code, question.id, browser_id(), pick)
                mine = pick
        if mine is not None:
            st.caption(
                f"Your answer is in: **{labels[mine]}**. You can change it until the question closes or the teacher reveals the answer."
            )


def _copy(source: str, target: str) -> None:
    """on_change of a "which token" answer's radio or list: the other one shows the same token."""
    st.session_state[target] = st.session_state.get(source)


def _leave(code: str) -> None:
    """Out of the room for good: a reload does not bring it back (the join link does)."""
    with contextlib.suppress(StoreUnavailable):
        class_store().leave(code, browser_id())
    st.session_state[ROOM.joined] = None
    st.rerun()


def _revealed(question, mine: int | None) -> None:
    right = question.answer
    if right is None:
        st.info("The teacher has closed this question.", icon=":material/info:")
    elif mine == right:
        st.success(f"Right: **{md(question.options[right])}**.", icon=":material/check_circle:")
    else:
        said = "You did not answer. " if mine is None else f"You said {md(question.options[mine])}. "
        st.info(f"{said}The answer: **{md(question.options[right])}**.", icon=":material/info:")


def question_map(question, key: str) -> None:
    """The map a "which head is this?" question shows (``detail["map"]``), the head not named on it."""
    detail = question.detail
    grid, queries, keys = detail.get("map"), detail.get("queries"), detail.get("keys")
    if not (all(isinstance(v, list) for v in (grid, queries, keys)) and len(grid) == len(queries)):
        return
    # the tokens' own labels, no numbers (the answers are numbered), kept apart after shortening
    x = unique_labels([safe_label(str(k)) for k in keys])
    y = unique_labels([safe_label(str(q)) for q in queries])
    dense = len(x) > QUESTION_MAP_HALF  # every label printed, upright; past 16 in a smaller type
    zmax, hover = max(max(max(row) for row in grid), 1e-6), "from %{y}<br>to %{x}<br>weight %{z:.3f}<extra></extra>"
    fig = go.Figure(go.Heatmap(z=grid, x=x, y=y, colorscale="Blues", zmin=0, zmax=zmax, hovertemplate=hover))
    fig.update_traces(colorbar=dict(thickness=12))
    axis = dict(type="category", tickmode="array")
    fig.update_layout(
        height=160 + 22 * len(queries),
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis=dict(title="looks at (key)", tickvals=x, ticktext=x, tickangle=-90, **axis),
        yaxis=dict(title="from (query)", autorange="reversed", tickvals=y, ticktext=y, **axis),
    )
    themed = ready(fig)
    if dense:  # the theme's tick size, smaller: up to 32 labels side by side
        themed.spec["layout"]["xaxis"]["tickfont"]["size"] = QUESTION_MAP_TICK_PX
    show_chart(themed, key=key, width="stretch")
    st.caption("Each row: how much one token looks at every token (the row sums to 1). Which head drew it?")
