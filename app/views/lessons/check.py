"""The knowledge check that ends each lesson step: predict-then-reveal, or multiple choice.

Answering first and seeing the truth second is the point: a student who guessed *street* for "it" and then
sees the head's bar on *animal* remembers it. The revealed numbers are the real head's row
(``lesson_row``), the same ones Explore shows for that sentence, layer and head. Answers are kept
per session in ``st.session_state[Lessons.answers]`` ({step id: answer}), so leaving a step and coming back
shows the reveal again, and the page can say how many checks are answered.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from app.state import default
from app.ui.charts import show_chart
from app.ui.clicks import once
from app.ui.guard import show_error
from app.ui.safe_text import md
from app.views.lessons.data import QueryRow, row_for
from app.views.lessons.keys import Lessons
from app.views.lessons.lesson_file import Choice, Look, Predict, Step


def answers() -> dict[str, int]:
    """This session's answers (created empty on first use)."""
    return default(Lessons.answers, {})


def _record(step_id: str, key: str) -> None:
    """on_change of a check's widget: keep the answer (a cleared widget records nothing)."""
    value = st.session_state.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:  # a forged value records nothing
        answers()[step_id] = value


def _forget(step_id: str) -> None:
    """on_click of "Try again"."""
    answers().pop(step_id, None)


def row_figure(row: QueryRow, picked: int) -> go.Figure:
    """The revealed row as bars: the student's pick in orange, the head's top key in dark blue."""
    labels = [f"{i} · {s}" for i, s in enumerate(row.keys)]
    colours = ["#e8710a" if i == picked else "#1f3b73" if i == row.top else "#9db4d8" for i in range(len(labels))]
    fig = go.Figure(
        go.Bar(x=labels, y=row.weights, marker_color=colours, hovertemplate="%{x}: %{y:.3f}<extra></extra>")
    )
    fig.update_layout(
        height=260,
        margin=dict(l=10, r=10, t=30, b=10),
        yaxis_title="weight",
        title=f"Where “{row.query_label}” looks",
        xaxis=dict(type="category"),
    )
    return fig


def reveal_text(row: QueryRow, picked: int) -> str:
    """ "You picked X (weight a); the head's top key is Y (weight b)." with the real numbers."""
    mine = f"You picked **{md(row.keys[picked])}** (weight {row.weights[picked]:.3f})"
    if picked == row.top:
        return mine + ": that is the head's top key. Well predicted."
    return mine + f"; the head's top key is **{md(row.keys[row.top])}** (weight {row.weights[row.top]:.3f})."


def predict_check(step: Step, check: Predict) -> None:
    """Click a token; then the real weights of the query's row are drawn and compared with the pick."""
    try:
        row = row_for(check)
    except Exception as err:  # noqa: BLE001 — the check's model run may raise anything: a message in its place
        show_error(err)
        return
    st.markdown(check.question)
    picked = answers().get(step.id)
    if picked is None or not 0 <= picked < len(row.keys):
        key = f"lesson_pick_{step.id}"
        st.pills(
            f"Click the token you think “{md(check.word)}” looks at",
            list(range(len(row.keys))),
            key=key,
            format_func=lambda i: row.keys[i],
            on_change=_record,
            args=(step.id, key),
            help="Your guess is kept; then the real head's weights are shown.",
        )
        return
    st.markdown(reveal_text(row, picked))
    show_chart(row_figure(row, picked), key=f"{Lessons.row}{step.id}")
    st.caption(check.explain)
    st.button(
        "Try again", key=f"{Lessons.again}{step.id}", on_click=once(_forget), args=(step.id,), icon=":material/replay:"
    )


def choice_check(step: Step, check: Choice) -> None:
    """A multiple-choice question; the explained answer appears once the student has answered."""
    picked = answers().get(step.id)
    if picked is None or not 0 <= picked < len(check.options):
        key = f"lesson_choice_{step.id}"
        st.radio(
            check.question,
            list(range(len(check.options))),
            index=None,
            key=key,
            format_func=lambda i: check.options[i],
            on_change=_record,
            args=(step.id, key),
        )
        return
    st.markdown(check.question)
    verdict = ":green[Right]" if picked == check.answer else ":red[Not quite]"
    st.markdown(
        f"You answered **{check.options[picked]}**. {verdict}: the answer is **{check.options[check.answer]}**."
    )
    st.caption(check.explain)
    st.button(
        "Try again", key=f"{Lessons.again}{step.id}", on_click=once(_forget), args=(step.id,), icon=":material/replay:"
    )


def is_right(step: Step, picked: int) -> bool:
    """Whether an answer is right: the head's real top key for a predict check, the answer for a choice."""
    if isinstance(step.check, Choice):
        return picked == step.check.answer
    if isinstance(step.check, Look):
        from app.views.lessons.caption_check import is_right as looked_right  # the captioner's check (issue 22)

        return looked_right(step.check, picked)
    try:
        return picked == row_for(step.check).top
    except Exception:  # noqa: BLE001 — the check's model run failed (predict_check shows why): not right
        return False


def knowledge_check(step: Step) -> None:
    """The check that ends ``step``."""
    st.subheader("Check yourself", divider="gray")
    if isinstance(step.check, Predict):
        predict_check(step, step.check)
    elif isinstance(step.check, Look):
        from app.views.lessons.caption_check import where_check  # the captioner's check (issue 22)

        where_check(step.id, step.check, answers().get(step.id), _record, _forget)
    else:
        choice_check(step, step.check)
