"""The knowledge check that ends a lesson step: answer first, then see the real model (or the explained answer).

A predict check reveals the head's real row (``data.row_for``, Explore's numbers); a look check reveals the word's
α map over a held-out scene cut into nine regions. Answers are kept per session ({step id: answer}).
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from app.state import default
from app.ui.charts import show_chart
from app.ui.clicks import once
from app.ui.guard import show_error
from app.ui.safe_text import md
from app.views.captions.data import Peak, where_it_looks
from app.views.captions.figures import picture_with_boxes, region_box, region_lines
from app.views.captions.map_data import REGIONS, region_bounds
from app.views.lessons.data import QueryRow, row_for
from app.views.lessons.keys import Lessons
from app.views.lessons.lesson_file import Choice, Look, Predict, Step
from app.views.vit.figures import overlay

BARS = dict(height=260, margin=dict(l=10, r=10, t=30, b=10))  # a check's and a demo's bar chart


def answers() -> dict[str, int]:
    """This session's answers (created empty on first use)."""
    return default(Lessons.answers, {})


def _record(step_id: str, key: str) -> None:
    """on_change of a check's widget: keep the answer (a cleared or forged value records nothing)."""
    value = st.session_state.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        answers()[step_id] = value


def _forget(step_id: str) -> None:
    """on_click of "Try again"."""
    answers().pop(step_id, None)


def _picked(step: Step, n: int, key: str, label: str, names, help: str = "", radio: bool = False) -> int | None:
    """The student's answer among ``n`` options, or None after drawing the pills (or radio) that ask for it."""
    picked = answers().get(step.id)
    if picked is not None and 0 <= picked < n:
        return picked
    widget = st.radio if radio else st.pills
    extra = {"index": None} if radio else {"help": help}
    widget(label, list(range(n)), key=key, format_func=names, on_change=_record, args=(step.id, key), **extra)
    return None


def _try_again(step: Step, explain: str) -> None:
    st.caption(explain)
    st.button(
        "Try again", key=f"{Lessons.again}{step.id}", on_click=once(_forget), args=(step.id,), icon=":material/replay:"
    )


def row_figure(row: QueryRow, picked: int) -> go.Figure:
    """The revealed row as bars: the student's pick in orange, the head's top key in dark blue."""
    labels = [f"{i} · {s}" for i, s in enumerate(row.keys)]
    colours = ["#e8710a" if i == picked else "#1f3b73" if i == row.top else "#9db4d8" for i in range(len(labels))]
    hover = "%{x}: %{y:.3f}<extra></extra>"
    fig = go.Figure(go.Bar(x=labels, y=row.weights, marker_color=colours, hovertemplate=hover))
    return fig.update_layout(
        BARS, yaxis_title="weight", title=f"Where “{row.query_label}” looks", xaxis_type="category"
    )


def predict_check(step: Step, check: Predict) -> None:
    """Click a token; then the real weights of the query's row are drawn and compared with the pick."""
    try:
        row = row_for(check)
    except Exception as err:  # noqa: BLE001 — the check's model run may raise anything: a message in its place
        show_error(err)
        return
    st.markdown(check.question)
    label = f"Click the token you think “{md(check.word)}” looks at"
    help = "Your guess is kept; then the real head's weights are shown."
    picked = _picked(step, len(row.keys), f"lesson_pick_{step.id}", label, lambda i: row.keys[i], help)
    if picked is None:
        return
    mine = f"You picked **{md(row.keys[picked])}** (weight {row.weights[picked]:.3f})"
    if picked == row.top:
        st.markdown(mine + ": that is the head's top key. Well predicted.")
    else:
        st.markdown(mine + f"; the head's top key is **{md(row.keys[row.top])}** (weight {row.weights[row.top]:.3f}).")
    show_chart(row_figure(row, picked), key=f"{Lessons.row}{step.id}")
    _try_again(step, check.explain)


def choice_check(step: Step, check: Choice) -> None:
    """A multiple-choice question; the explained answer appears once the student has answered."""
    options = check.options
    picked = _picked(step, len(options), f"lesson_choice_{step.id}", check.question, options.__getitem__, radio=True)
    if picked is None:
        return
    st.markdown(check.question)
    verdict = ":green[Right]" if picked == check.answer else ":red[Not quite]"
    st.markdown(f"You answered **{options[picked]}**. {verdict}: the answer is **{options[check.answer]}**.")
    _try_again(step, check.explain)


def where_check(step: Step, check: Look) -> None:
    """Pick a region of the scene; then the word's real α map is drawn over it and compared with the pick."""
    try:
        look = where_it_looks(check.scene, check.word, check.model)
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err)
        return
    st.markdown(check.question)
    image, view = look.picture.image, look.view
    bounds, side, key = region_bounds(view.grid), image.shape[0], f"{Lessons.look}{step.id}"
    if answers().get(step.id) not in range(len(REGIONS)):
        scene = picture_with_boxes(image, (), view.cell_px, title=f"Held-out scene {check.scene}")
        show_chart(region_lines(scene, bounds, view.cell_px, side), key=key)
        st.caption(
            "The scene the captioner describes, cut into nine regions (dashed lines) along its 8×8 grid of cells."
        )
    label = f"Click the region you think it looks at when it writes “{md(check.word)}”"
    help = "Your guess is kept; then the model's real attention map is shown."
    picked = _picked(step, len(REGIONS), f"{Lessons.region}{step.id}", label, REGIONS.__getitem__, help)
    if picked is None:
        return
    st.markdown(reveal_text(look, picked, check.word))
    title = f"Where it looks for “{check.word}”"
    fig = overlay(image, view.alphas[look.word], view.cell_px, mark=view.peaks[look.word], unit="cell", title=title)
    show_chart(region_box(region_lines(fig, bounds, view.cell_px, side), bounds, picked, view.cell_px), key=key)
    _try_again(
        step,
        f"The model's α for “{md(check.word)}” in its own caption, “{md(look.caption)}”: brighter cells got more "
        f"weight. Your region is outlined in orange, the peak cell in cyan. {md(check.explain)}",
    )


def reveal_text(look: Peak, picked: int, word: str) -> str:
    """What the student picked and where the model's map for ``word`` peaks."""
    r, c = look.peak
    alpha = float(look.view.alphas[look.word, r, c])
    where = (
        f"the model's map for “{md(word)}” peaks in cell {look.view.peaks[look.word]} (row {r}, column {c}, "
        f"α = {alpha:.3f}), in the **{look.region_name}**"
    )
    if picked == look.region:
        return f"You picked **{REGIONS[picked]}**: {where}. Well predicted."
    return f"You picked **{REGIONS[picked]}**; {where}."


def is_right(step: Step, picked: int) -> bool:
    """Whether an answer is right: a choice's answer, else the real model's top key or peak region."""
    check = step.check
    if isinstance(check, Choice):
        return picked == check.answer
    try:
        if isinstance(check, Look):
            return picked == where_it_looks(check.scene, check.word, check.model).region
        return picked == row_for(check).top
    except Exception:  # noqa: BLE001 — a model that cannot run grades nothing right (the check shows why)
        return False


def summary(check: Choice | Predict | Look) -> str:
    """A check in one line, for the editor's list of steps."""
    if isinstance(check, Choice):
        return f"Question: {md(check.question)} (answer: {md(check.options[check.answer])})"
    if isinstance(check, Predict):
        where = f"{md(check.model)}, layer {check.layer} head {check.head}"
        return f"Check: which token does “{md(check.word)}” look at ({where}); the answer is read from the model."
    where = f"“{md(check.word)}” (scene {check.scene})"
    return f"Check: where does {md(check.model)} look when it writes {where}; the answer is read from the model."


def knowledge_check(step: Step) -> None:
    """The check that ends ``step``."""
    st.subheader("Check yourself", divider="gray")
    draw = {Predict: predict_check, Look: where_check, Choice: choice_check}[type(step.check)]
    draw(step, step.check)
