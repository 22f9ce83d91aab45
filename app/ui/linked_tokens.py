"""Linked tokens: pick a token once (``Look.focus``, kept across pages) and every attention map outlines its row and
its column, through the map's block edges (pooled and zoomed maps too)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.state import PERSIST, Look, settle
from app.ui.charts import ReadyFigure, frame, with_shapes
from app.ui.map_data import MapData
from app.ui.safe_text import md

FOCUS_COLOR = "#e8590c"  # orange: apart from the blue scale and the grey mask
PILLS_MAX = 40  # more tokens than this: the select box only


def focus() -> int | None:
    value = st.session_state.get(Look.focus)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def set_focus(position: object) -> None:
    st.session_state[Look.focus] = position


def focus_picker(strings: list[str] | tuple[str, ...], key_prefix: str) -> int | None:
    """The token picker above a page's maps; returns the highlighted position (None: none)."""
    n = len(strings)
    if focus() is not None and focus() >= n:  # a shorter sentence or another model
        set_focus(None)
    key = f"{key_prefix}_focus_pills" if n <= PILLS_MAX else f"{key_prefix}_focus_select"
    settle(key, focus())  # the highlight picked on another page (or in the link)

    def picked() -> None:
        set_focus(st.session_state.get(key))

    if n <= PILLS_MAX:
        st.pills(
            "Highlight a token",
            list(range(n)),
            format_func=lambda i: _plain(strings[i]),
            key=key,
            on_change=picked,
            help="Click a token to outline its row (where it looks) and its column (who "
            "looks at it) in every map on the page; click it again to clear.",
        )
    else:
        st.selectbox(
            "Highlight a token",
            [None, *range(n)],
            key=key,
            on_change=picked,
            **PERSIST,
            format_func=lambda i: "none" if i is None else f"{i} · {strings[i]}",
        )
    return focus()


def _plain(token: str) -> str:
    """A token as a pill label: markdown escaped, spaces shown."""
    return md(token) if token.strip() else "␣"


def row_of(data: MapData, position: int) -> int | None:
    """The row (block) of ``data`` that holds query ``position``, or None when it is not drawn."""
    edges = np.asarray(data.q_edges)
    if not edges[0] <= position < edges[-1]:
        return None
    return int(np.searchsorted(edges, position, side="right") - 1)


def column_of(data: MapData, position: int) -> int | None:
    """The column (block) of ``data`` that holds key ``position``, or None (hidden, or outside the zoom)."""
    keys = np.asarray(data.k_pos)
    j = int(np.searchsorted(keys, position))
    if j >= keys.size or keys[j] != position:
        return None
    return int(np.searchsorted(np.asarray(data.k_edges), j, side="right") - 1)


def outline_shapes(data: MapData, position: int | None) -> list[dict]:
    """The frames around the row and the column of token ``position`` on a self-attention map of ``data``."""
    if position is None:
        return []
    n_rows, n_cols = np.asarray(data.values).shape
    row, col = row_of(data, position), column_of(data, position)
    shapes = [] if row is None else [frame(-0.5, n_cols - 0.5, row - 0.5, row + 0.5, FOCUS_COLOR)]
    return shapes + ([] if col is None else [frame(col - 0.5, col + 0.5, -0.5, n_rows - 0.5, FOCUS_COLOR)])


def outline(fig, data: MapData, position: int | None):
    """``fig`` with token ``position`` framed (a shared :class:`ReadyFigure` is not changed)."""
    shapes = outline_shapes(data, position)
    if isinstance(fig, ReadyFigure):
        return with_shapes(fig, shapes)
    for shape in shapes:
        fig.add_shape(**shape)
    return fig
