"""The captioning lesson's knowledge check: "where will it look for 'circle'?", predicted on the picture, then
revealed from the real model.

The student sees a held-out scene cut into nine regions (a 3×3 split along the captioner's grid cells) and
picks the region they think the model looks at when it writes the word. The answer is read from the model
when the student answers (``where_it_looks``: the word's α map in the model's own greedy caption,
its peak cell and the region that holds it), never written in the lesson: a retrained checkpoint changes the
answer, not the lesson.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app.ui.charts import show_chart
from app.ui.clicks import once
from app.ui.guard import show_error
from app.ui.safe_text import md
from app.views.captions import data as captions
from app.views.captions.data import where_it_looks
from app.views.captions.figures import picture_with_boxes, region_box, region_lines
from app.views.captions.map_data import REGIONS, region_bounds
from app.views.lessons.keys import Lessons
from app.views.vit.figures import overlay


def reveal_text(look: captions.Peak, picked: int, word: str) -> str:
    """ "You picked X; the model's map for “circle” peaks in cell (r, c), in the Y region (α = a)." """
    r, c = look.peak
    alpha = float(look.view.alphas[look.word, r, c])
    where = (
        f"the model's map for “{md(word)}” peaks in cell {look.view.peaks[look.word]} (row {r}, column {c}, "
        f"α = {alpha:.3f}), in the **{look.region_name}**"
    )
    if picked == look.region:
        return f"You picked **{REGIONS[picked]}**: {where}. Well predicted."
    return f"You picked **{REGIONS[picked]}**; {where}."


def where_check(
    step_id: str, check, picked: int | None, record: Callable[[str, str], None], forget: Callable[[str], None]
) -> None:
    """Pick a region of the scene; then the word's real α map is drawn over it and compared with the pick.

    ``check`` names ``question``, ``model``, ``scene`` (a held-out scene), ``word`` and ``explain``; ``picked`` is
    the answer kept so far (a region's index) or None; ``record(step_id, widget key)`` keeps a pick and
    ``forget(step_id)`` clears it (the knowledge check's own callbacks).
    """
    try:
        look = where_it_looks(check.scene, check.word, check.model)
    except Exception as err:  # noqa: BLE001 — every failure becomes a message
        show_error(err)
        return
    st.markdown(check.question)
    image, view = look.picture.image, look.view
    bounds = region_bounds(view.grid)
    side = image.shape[0]
    if picked is None or not 0 <= picked < len(REGIONS):
        fig = region_lines(
            picture_with_boxes(image, (), view.cell_px, title=f"Held-out scene {check.scene}"),
            bounds,
            view.cell_px,
            side,
        )
        show_chart(fig, key=f"{Lessons.look}{step_id}")
        st.caption(
            "The scene the captioner describes, cut into nine regions (dashed lines) along its 8×8 grid of cells."
        )
        key = f"{Lessons.region}{step_id}"
        st.pills(
            f"Click the region you think it looks at when it writes “{md(check.word)}”",
            list(range(len(REGIONS))),
            key=key,
            format_func=lambda i: REGIONS[i],
            on_change=record,
            args=(step_id, key),
            help="Your guess is kept; then the model's real attention map is shown.",
        )
        return
    st.markdown(reveal_text(look, picked, check.word))
    fig = overlay(
        image,
        view.alphas[look.word],
        view.cell_px,
        mark=view.peaks[look.word],
        unit="cell",
        title=f"Where it looks for “{check.word}”",
    )
    show_chart(
        region_box(region_lines(fig, bounds, view.cell_px, side), bounds, picked, view.cell_px),
        key=f"{Lessons.look}{step_id}",
    )
    st.caption(
        f"The model's α for “{md(check.word)}” in its own caption, “{md(look.caption)}”: brighter cells got "
        f"more weight. Your region is outlined in orange, the peak cell in cyan. {md(check.explain)}"
    )
    st.button(
        "Try again", key=f"{Lessons.again}{step_id}", on_click=once(forget), args=(step_id,), icon=":material/replay:"
    )


def is_right(check, picked: int) -> bool:
    """Whether ``picked`` is the region of the word's attention peak in the real model."""
    try:
        return picked == where_it_looks(check.scene, check.word, check.model).region
    except Exception:  # noqa: BLE001 — a captioner that cannot run grades nothing right; its error shows where the page draws it
        return False
