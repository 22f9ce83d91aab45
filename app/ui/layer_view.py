"""A layer's heads drawn in the browser (``engine/views/layer_view.js``): picking a head, a layer or a token there
sends nothing to the server. The view keeps the page's ``layer``, ``head`` and ``focus`` URL parameters."""

from __future__ import annotations

import streamlit as st

from app.state import K, Look
from app.ui.theme import current
from engine.views.layer_view import CSS, JS, Choice, LayerData, encode

__all__ = ["LayerData", "layer_view"]
PARAMS = {"layer": K.layer, "head": K.head, "focus": Look.focus}
mount = st.components.v2.component("attention_playground.layer_view", js=JS, css=CSS)


def layer_view(key: str, data: LayerData, layer: int, head: int, focus: int | None, **text: str) -> None:
    """Mount the view on ``layer``, ``head`` and ``focus`` (``text``: its title's ``suffix`` and its ``caption``)."""
    look = current()
    colours = {"colors": list(look.colors), "text_color": look.text, "font_px": look.tick_px}
    mount(key=key, data=encode(data, Choice(layer, head, focus, look=colours, params=PARAMS, **text)))
