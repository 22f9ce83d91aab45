"""Lessons: the built-in lesson (``plan.py``) or a saved one (``?lesson=ID``, its text shown literally) step by step
(``?lesson_step=k``), each a text, links, a knowledge check and a few live charts; "Write a lesson" is ``editor.py``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app import url_state
from app.controls.pickers import page_tabs
from app.links import open_page
from app.runtime.request import TraceRequest
from app.runtime.rooms import lesson_store
from app.runtime.traces import get_trace
from app.state import PERSIST, bounded, clamp
from app.store import RoomError, StoreUnavailable
from app.ui.charts import show_chart
from app.ui.clicks import once
from app.ui.guard import show_error
from app.ui.safe_text import md
from app.views.lessons.check import BARS, answers, is_right, knowledge_check
from app.views.lessons.data import LESSON_MAX_TOKENS, find_token
from app.views.lessons.draft import TAKE_TAB, WRITE_TAB, open_tab, owned, use_button
from app.views.lessons.editor import EDIT_PARAM, editor
from app.views.lessons.keys import Draft, Lessons
from app.views.lessons.lesson_file import Choice, Lesson, LessonFileError, Link, Step, read_lesson
from app.views.lessons.offline_pack import lesson_pack_buttons
from app.views.lessons.plan import IT_SENTENCE, LESSON, QKV_HEAD, SOFTMAX_KEYS, SOFTMAX_SCORES, STEPS
from engine.analysis.stepwise import attention_steps, query_steps


def _go(k: int, n: int) -> None:
    """on_click of Previous/Next and the contents: show step ``k``."""
    st.session_state[Lessons.step] = bounded(k, 1, n)


def navigation(k: int, n: int, where: str) -> None:
    """Previous / Next buttons (``where`` keeps the keys of the top and bottom rows apart)."""
    left, _, right = st.columns([1, 4, 1])
    for column, label, prefix, to, icon in (
        (left, "Previous", Lessons.prev, k - 1, "arrow_back"),
        (right, "Next", Lessons.next, k + 1, "arrow_forward"),
    ):
        column.button(
            label,
            key=f"{prefix}{where}",
            on_click=once(_go),
            args=(to, n),
            disabled=not 1 <= to <= n,
            icon=f":material/{icon}:",
            width="stretch",
            type="primary" if label == "Next" else "secondary",
        )


def progress(k: int, steps: tuple[Step, ...]) -> None:
    """ "Step k of n", the score and a contents list to jump to any step."""
    done = answers()
    checks = sum(step.check is not None for step in steps)
    right = sum(is_right(step, done[step.id]) for step in steps if step.id in done and step.check is not None)
    answered = sum(step.id in done for step in steps if step.check is not None)
    score = f" · knowledge checks: {answered} of {checks} answered, {right} right" if checks else ""
    st.progress(k / len(steps), text=f"**Step {k} of {len(steps)}**{score}")
    with st.expander("All steps"):
        for i, step in enumerate(steps, start=1):
            mark = " ✓" if step.id in done else ""
            st.button(
                f"{i}. {step.title or f'Step {i}'}{mark}",
                key=f"{Lessons.goto}{i}",
                on_click=once(_go),
                args=(i, len(steps)),
                type="tertiary",
                disabled=i == k,
            )


# ---------------------------------------------------------------- inline demos


def steps_demo() -> None:
    """The query "it" of the Q, K, V step's MiniLM head through q·k, the scale and the softmax (5 strongest keys)."""
    layer, head = QKV_HEAD
    try:
        trace = get_trace(TraceRequest("minilm", IT_SENTENCE, False, LESSON_MAX_TOKENS))
        query = find_token(trace.tokens.strings, "it")
        steps = query_steps(trace, layer, head, query)
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err)
        return
    keys = list(trace.key_tokens.strings)
    order = np.argsort(-steps.weights[0])[:5]
    frame = pd.DataFrame(
        {
            "key": [f"{j} · {keys[j]}" for j in order],
            "q·k": steps.raw[0, order],
            f"× {steps.scale:.3f}": steps.scaled[0, order],
            "softmax weight": steps.weights[0, order],
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        key=Lessons.steps_table,
        column_config={c: st.column_config.NumberColumn(format="%.3f") for c in frame.columns[1:]},
    )
    st.caption(
        f"MiniLM, layer {layer} head {head}, query “it”: the raw dot products, times the scale 1/√d, "
        "then the softmax over all keys (only the five largest weights are listed)."
    )


def softmax_demo() -> None:
    """Four fixed scores through the softmax at a scale the student moves (the calculator's own steps)."""
    st.slider("Scale (multiplies the scores)", 0.0, 5.0, 1.0, 0.1, key=Lessons.softmax_scale, **PERSIST)
    scale = float(np.clip(float(st.session_state.get(Lessons.softmax_scale) or 0.0), 0.0, 5.0))
    k = np.array(SOFTMAX_SCORES, dtype=float)[:, None]  # (n, 1): one-number keys, so q·k = the score
    steps = attention_steps(np.ones((1, 1)), k, np.eye(len(k)), scale, False)
    weights = steps.weights[0]
    bars = go.Bar(x=SOFTMAX_KEYS, y=weights, marker_color="#1f3b73", text=[f"{w:.2f}" for w in weights])
    fig = go.Figure(bars).update_traces(textposition="outside").update_layout(BARS, yaxis_range=[0, 1.1])
    fig.update_layout(
        yaxis_title="weight", title=f"softmax({', '.join(map('{:g}'.format, SOFTMAX_SCORES))} × {scale:.1f})"
    )
    show_chart(fig, key=Lessons.softmax)
    st.caption(
        "Scores 2, 1, 0.5 and −1 for four keys. Scale 0: every key gets 1/4. Scale 5: nearly all weight "
        "on the best key."
    )


DEMOS = {"steps": steps_demo, "softmax": softmax_demo}


# ---------------------------------------------------------------- a lesson shared by link


def line_chart(text: str) -> str:
    """A teacher's note as markdown that shows it literally, line breaks kept."""
    return "  \n".join(md(line) for line in text.split("\n"))


def literal(step: Step, scope: str) -> Step:
    """A step of a lesson someone wrote, its text made literal and its id the lesson's own (answers are per id)."""
    check = step.check
    if check is not None:
        check = replace(check, question=line_chart(check.question), explain=line_chart(check.explain))
    if isinstance(check, Choice):
        check = replace(check, options=tuple(md(o) for o in check.options))
    links = tuple(Link(link.page, md(link.label), link.params) for link in step.links)
    return replace(
        step, id=f"{scope}-{step.id}", title=md(step.title), text=line_chart(step.text), links=links, check=check
    )


def shared_lesson() -> tuple[str, Lesson] | None:
    """The saved lesson ``?lesson=ID`` names, None without one; ``&lesson_edit=SECRET`` (the author's edit link) lets
    this session change it, and leaves the address bar at once."""
    lid = st.session_state.get(Lessons.lesson)
    if not lid:
        return None
    secret = st.query_params.get(EDIT_PARAM)
    if secret is not None:
        del st.query_params[EDIT_PARAM]  # the secret does not stay on a projected screen or in the share box
    try:
        store = lesson_store()
        saved = store.lesson(lid)
        if secret and store.can_edit(lid, secret):
            owned()[lid] = secret
        return lid, read_lesson(saved.body)
    except (RoomError, StoreUnavailable, LessonFileError) as exc:
        show_error(str(exc), before="The lesson of this link cannot be opened: ")
        return None


def shared_header(lid: str, lesson: Lesson) -> None:
    st.subheader(md(lesson.title))
    st.caption(
        "A lesson shared by link (read only)." + (f" {line_chart(lesson.description)}" if lesson.description else "")
    )
    left, right = st.columns(2)
    help = "Your copy opens in “Write a lesson”, to change and save as your own."
    use_button(left, "Copy it into my lesson", Draft.copy, lesson, icon=":material/content_copy:", help=help)
    if lid in owned():
        help = "You wrote this lesson: change it in “Write a lesson”, then save."
        use_button(right, "Edit it", Draft.edit_shared, lesson, (lid, owned()[lid]), icon=":material/edit:", help=help)
    st.button("Back to the built-in lesson", key=Lessons.builtin, on_click=once(_builtin), icon=":material/arrow_back:")


def _builtin() -> None:
    """on_click of "Back to the built-in lesson": its first step (the address loses ``lesson``)."""
    st.session_state[Lessons.lesson] = ""
    st.session_state[Lessons.step] = 1


# ---------------------------------------------------------------- page


def show_step(k: int, step: Step) -> None:
    """One step: its title, text, links, live chart and knowledge check."""
    st.header(f"{k}. {step.title}" if step.title else f"Step {k}")
    if step.text:
        st.markdown(step.text)
    for link in step.links:  # opens the page with the step's sentence, model, layer, head or tab
        open_page(link.page, link.label, link.params, icon=":material/open_in_new:")
    if step.demo in DEMOS:
        DEMOS[step.demo]()
    if step.check is not None:
        knowledge_check(step)


def walk(shared: tuple[str, Lesson] | None) -> None:
    """The lesson a link names (``shared``: its id and lesson), or the built-in one, step by step."""
    if shared is None:
        st.write(
            "A guided path through attention, from why RNNs needed it to pretraining objectives. Each step says "
            "what to look at, opens the page that shows it, and ends with a question to check yourself."
        )
        steps = STEPS
    else:
        lid, lesson = shared
        shared_header(lid, lesson)
        steps = tuple(literal(step, lid) for step in lesson.steps)
    k = clamp(Lessons.step, 1, len(steps))  # a link's step was read by the URL table; the address names it
    progress(k, steps)
    navigation(k, len(steps), "top")
    show_step(k, steps[k - 1])
    st.divider()
    navigation(k, len(steps), "bottom")
    with st.expander("This lesson offline (one HTML file)", icon=":material/offline_pin:"):
        st.caption(
            "Every step with its text, question and charts (their numbers inside), for a laptop with no "
            "server and no internet. Views with no static chart get a note."
        )
        lesson_pack_buttons("walk", LESSON if shared is None else shared[1], emphasis=shared is None)


def main() -> None:
    st.title("Lessons")
    shared = shared_lesson()  # before the tabs: an edit link's secret leaves the address bar whichever tab is open
    if url_state.from_link(Lessons.lesson) and st.session_state.get(Lessons.lesson):
        open_tab(TAKE_TAB)  # a lesson's link opens on the lesson
    take, write = page_tabs([TAKE_TAB, WRITE_TAB], Draft.tab)
    with take:
        if take.open:  # only the open section runs
            walk(shared)
    with write:
        if write.open:
            editor()


main()
