"""Tables and the weights chart of the Step-by-step page (the numbers: ``engine.analysis.stepwise.AttentionSteps``).

Numbers are rounded to ``DECIMALS``; columns that can hold −∞ (the mask, the softmax input) are text, so "−∞" reads
as such. Token labels in Plotly are HTML-escaped.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.runtime.caches import shared_table
from app.ui.charts import content_key
from app.ui.heatmap import safe_label

DECIMALS = 4
MAX_DIMS = 8  # vectors longer than this show their first dims; the rest sit in an expander
MINUS_INF = "−∞"
BAR_COLOR = "#1f77b4"
BLOCKED_COLOR = "#bdbdbd"


def fmt(value: float) -> str:
    """One number for a text column: ``−∞`` / ``+∞`` or rounded to ``DECIMALS``."""
    if np.isneginf(value):
        return MINUS_INF
    if np.isposinf(value):
        return "+∞"
    return f"{float(value):.{DECIMALS}f}"


def parse(text: str) -> float:
    """Inverse of :func:`fmt` (tests read the tables back with it)."""
    text = str(text).strip()
    if text == MINUS_INF:
        return -np.inf
    if text == "+∞":
        return np.inf
    return float(text)


def text_column(values: np.ndarray) -> list[str]:
    return [fmt(v) for v in np.asarray(values, dtype=float).ravel()]


def rounded(values: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(values, dtype=float), DECIMALS)


def frame_table(data: Any, index: list[str], columns: list[str] | None = None):
    """What ``st.dataframe`` sends for ``pd.DataFrame(data, index=index, columns=columns)``: a ``pyarrow.Table``
    converted once per server process for the same numbers and labels (not on every rerun of every student)."""
    import pyarrow as pa

    columns_key = None if columns is None else tuple(map(str, columns))
    key = ("step table", content_key(data), tuple(map(str, index)), columns_key)
    return shared_table(key, lambda: pa.Table.from_pandas(pd.DataFrame(data, index=index, columns=columns)))


def show_vectors(name: str, matrix: np.ndarray, row_labels: list[str], *, key: str, height: int | None = None) -> None:
    """A table of vectors: the first ``MAX_DIMS`` dims, and every dim in an expander when there are more."""
    d = np.atleast_2d(matrix).shape[1]
    kwargs = {"height": height} if height else {}
    st.dataframe(vector_table(matrix, row_labels, MAX_DIMS), key=f"{key}_short", **kwargs)
    if d > MAX_DIMS:
        with st.expander(f"All {d} dimensions of {name}"):
            st.dataframe(vector_table(matrix, row_labels), key=f"{key}_full", **kwargs)


def vector_table(matrix: np.ndarray, row_labels: list[str], dims: int | None = None):
    """``[rows, d]`` as the table that is sent (:func:`frame_table`), rounded, columns ``d0, d1, …`` (``dims``)."""
    matrix = np.atleast_2d(np.asarray(matrix, dtype=float))
    width = matrix.shape[1] if dims is None else min(dims, matrix.shape[1])
    return frame_table(rounded(matrix[:, :width]), row_labels, [f"d{j}" for j in range(width)])


def weights_bar(weights: np.ndarray, key_labels: list[str], blocked: np.ndarray, title: str) -> go.Figure:
    """Bars of one query's softmax weights ``[n_k]`` over the key tokens; keys the mask blocks (``blocked``) grey."""
    labels = [safe_label(t) for t in key_labels]
    n = len(labels)
    step = max(1, -(-n // 60))  # at most ~60 tick labels
    fig = go.Figure(
        go.Bar(
            x=list(range(n)),
            y=np.asarray(weights, dtype=float),
            marker_color=[BLOCKED_COLOR if b else BAR_COLOR for b in blocked],
            customdata=np.array(
                [[lab, "blocked by the mask" if b else ""] for lab, b in zip(labels, blocked)], dtype=object
            ),
            hovertemplate="key %{x} <b>%{customdata[0]}</b><br>weight %{y:.4f} %{customdata[1]}<extra></extra>",
        )
    )
    fig.update_layout(
        title=dict(text=html.escape(title, quote=True), x=0.0, font=dict(size=15)),
        height=360,
        margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(
            title="key token (attended to)",
            tickmode="array",
            tickvals=list(range(0, n, step)),
            ticktext=labels[::step],
            tickangle=-60,
        ),
        yaxis=dict(title="softmax weight", range=[0, 1.02]),
        bargap=0.15,
    )
    return fig


def steps_csv(steps, key_labels: list[str]) -> bytes:
    """One query's steps as CSV (full precision; −∞ written as ``-inf``)."""
    frame = pd.DataFrame(
        {
            "key": key_labels,
            "q_dot_k": steps.raw[0],
            "scaled": steps.scaled[0],
            **({"bias": steps.bias[0]} if steps.bias is not None else {}),
            "mask": steps.mask[0],
            "softmax_input": steps.masked[0],
            "weight": steps.weights[0],
        }
    )
    return frame.to_csv(index=False, float_format="%.8g").encode("utf-8")
