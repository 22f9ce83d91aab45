"""The Captions page's mistakes view: the held-out scenes our captioner gets wrong, and where it looked."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from app.controls.pickers import pick_index
from app.figures import shared_build
from app.ui.charts import set_source, show_chart
from app.ui.clicks import once
from app.ui.guard import attempt
from app.ui.safe_text import md
from app.ui.theme import side_by_side
from app.views.captions.data import (
    HELD_OUT_SCENES,
    CaptionRequest,
    caption_attention,
    caption_mistakes,
    caption_picture,
)
from app.views.captions.figures import picture_with_boxes, word_panels
from app.views.captions.keys import Captions


def _open_mistake(scene: int) -> None:
    """on_click of "Open this scene": the caption view on that held-out scene, greedy as the list was made."""
    st.session_state.update(
        {Captions.view: "caption", Captions.source: "scene", Captions.scene: scene, Captions.search: "greedy"}
    )


def mistakes_section(model_id: str, pretrained: bool = False) -> None:
    """The held-out scenes the model captions wrongly, and where it looked while writing one of them."""
    if pretrained:
        st.info(
            "The mistakes view needs the held-out scenes' grammar captions, which only the scene captioner was "
            "trained to write: pick it as the model to see them."
        )
        return
    n = HELD_OUT_SCENES
    if (mistakes := attempt(lambda: caption_mistakes(model_id), f"Captioning the {n} held-out scenes…")) is None:
        return
    st.write(
        f"Greedy decoding gets **{n - len(mistakes)} of {n}** held-out scenes exactly right. Here are the other "
        f"{len(mistakes)}, with where the model looked while it wrote the wrong caption."
    )
    if not mistakes:
        st.info("No mistakes to show: every held-out caption is right.")
        return
    table = pd.DataFrame([dataclasses.asdict(m) for m in mistakes])  # scene, reference, written
    st.dataframe(table, hide_index=True, key=Captions.mistakes, height=240)
    st.caption(
        "Held-out scenes (never trained on) whose greedy caption differs from the grammar's: the scene "
        "number, the true caption and the written one."
    )
    names = [f"scene {m.scene}: {m.written}" for m in mistakes]
    chosen = mistakes[pick_index("Look at", len(mistakes), Captions.mistake, format_func=names.__getitem__)]
    request = CaptionRequest(source="scene", scene=chosen.scene, model_id=model_id)
    if (found := attempt(lambda: (caption_picture(request), caption_attention(request)))) is None:
        return
    picture, view = found
    set_source(model_id, picture.described)
    st.markdown(f"**Reference**: {md(chosen.reference)}  \n**Written**: :red[{md(chosen.written)}]")
    left, right = side_by_side([1, 3])
    with left:
        fig = shared_build(
            picture_with_boxes, picture.image, picture.boxes, view.cell_px, title=f"Scene {chosen.scene}"
        )
        show_chart(fig, key=Captions.mistake_picture)
        st.caption("The scene with its objects' true boxes (dotted) and the 8×8 attention grid.")
    with right:
        show_chart(shared_build(word_panels, picture.image, view), key=Captions.mistake_panels)
        st.caption(
            "Where the model looked for each word it wrote (each map on its own colour scale). At the wrong "
            "word, does its map sit on the other object, spread out over the background, or on the right "
            "object after all (then the mistake is not in where it looked)?"
        )
    click = dict(key=Captions.open_mistake, on_click=once(_open_mistake), args=(chosen.scene,))
    st.button("Open this scene in the captioner", icon=":material/open_in_new:", **click)
