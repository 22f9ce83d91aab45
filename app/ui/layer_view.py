"""A layer's heads drawn in the browser (``layer_view.js``): picking a head, a layer or a token there sends nothing
to the server. The cells travel as float16 (3 significant digits, what the page prints), exports stay exact."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from app.state import K, Look
from app.ui.theme import current

HERE = Path(__file__)
mount = st.components.v2.component(
    "attention_playground.layer_view", js=HERE.with_suffix(".js").read_text(), css=HERE.with_suffix(".css").read_text()
)


@dataclass(frozen=True)
class LayerData:
    """What the view draws: ``values`` ``[layers, heads, rows, cols]`` (NaN: blocked), the sent ``layers``' numbers
    and a label per row and column (``square``: one sequence on both axes, so a token can be highlighted)."""

    values: np.ndarray
    layers: tuple[int, ...]
    q_labels: tuple[str, ...]
    k_labels: tuple[str, ...]
    square: bool = True
    value_name: str = "weight"


def short(label: str) -> str:
    """A label as the canvas draws it (text, not HTML: nothing to escape), long tokens shortened."""
    return label if len(label) <= 24 else label[:23] + "…"


def payload(data: LayerData, layer: int, head: int, focus: int | None, suffix: str = "", caption: str = "") -> bytes:
    """The view's bytes: a 4-byte little-endian length, the JSON header, padding to 8 bytes, then float16 cells."""
    look = current()
    n_layers, n_heads, rows, cols = data.values.shape
    header = {
        "layers": list(data.layers),
        "n_heads": n_heads,
        "rows": rows,
        "cols": cols,
        "q": [short(t) for t in data.q_labels],
        "k": [short(t) for t in data.k_labels],
        "square": data.square,
        "layer": layer,
        "head": head,
        "focus": focus if data.square and focus is not None and 0 <= focus < rows else None,
        "suffix": suffix,
        "caption": caption,
        "colors": list(look.colors),
        "text_color": look.text,
        "font_px": look.tick_px,
        "digits": 3,
        "value_name": data.value_name,
        "params": {"layer": K.layer, "head": K.head, "focus": Look.focus},
    }
    head_bytes = json.dumps(header).encode()
    pad = -(4 + len(head_bytes)) % 8
    cells = np.ascontiguousarray(data.values, dtype="<f2").tobytes()
    return len(head_bytes).to_bytes(4, "little") + head_bytes + b"\0" * pad + cells


def layer_view(key: str, data: LayerData, layer: int, head: int, focus: int | None, **text: str) -> None:
    """Mount the view (``text``: its title's ``suffix`` and its ``caption``)."""
    mount(key=key, data=payload(data, layer, head, focus, **text))
