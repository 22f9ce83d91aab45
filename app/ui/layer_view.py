"""A layer's heads drawn in the browser (``engine/views/layer_view.js``): picking a head, a layer or a token there
sends nothing to the server. The view keeps the page's ``layer``, ``head`` and ``focus`` URL parameters, and tells
the server its choice just before another control makes it run (it lands in session state as if picked there)."""

from __future__ import annotations

import streamlit as st

from app.state import K, Look
from app.ui.charts import page_source
from app.ui.theme import current, download_format, presenting
from engine.views.layer_view import CSS, JS, Choice, LayerData, encode

__all__ = ["LayerData", "layer_view"]
PARAMS = {"layer": K.layer, "head": K.head, "focus": Look.focus}
mount = st.components.v2.component("attention_playground.layer_view", js=JS, css=CSS)


def layer_view(
    key: str, data: LayerData, layer: int, head: int, focus: int | None, grid: bool = False, **text: str
) -> None:
    """Mount the view on ``layer``, ``head`` and ``focus`` (``text``: its title's ``suffix`` and its ``caption``;
    ``grid``: every sent layer × head as one grid of buttons, the model view)."""
    look = current()
    colours = {
        "colors": list(look.colors),
        "text_color": look.text,
        "font_px": look.tick_px,
        "download": download_format(),
        "fill": presenting(),  # the projector: the map fills the first screen
    }
    choice = Choice(layer, head, focus, look=colours, params=PARAMS, source=page_source(), grid=grid, id=key, **text)
    _, n_heads, rows, _ = data.values.shape
    tokens = range(rows if data.n_tokens is None else data.n_tokens)
    fits = {"layer": data.layers.__contains__, "head": range(n_heads).__contains__, "focus": tokens.__contains__}
    mount(key=key, data=encode(data, choice), on_view_change=lambda: take(key, fits))


def take(key: str, fits: dict) -> None:
    """The view's choice into the session's shared keys, for the run it asked; a value the view could not have sent
    (a forged message: ``fits`` says what it could) is dropped."""
    told = (st.session_state.get(key) or {}).get("view") or {}
    for name, target in PARAMS.items():
        value = told.get(name)
        if (type(value) is int and fits[name](value)) or (name == "focus" and value is None and "focus" in told):
            st.session_state[target] = value
