"""The Heads page's figures: a metric per head, heads compared, one head on two sentences, a phone's grid."""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from app.state import K
from app.ui import theme
from app.ui.head_views import PHONE_GRID_PX, PHONE_TILES_PER_ROW, clicked_in, model_view_spec
from app.ui.heatmap import MASKED_COLOR, safe_label, tick_labels

DIVERGING = "RdBu"
SIMILARITY_WIDTH_PX = 700  # plot width the similarity matrix's column labels are thinned for


def layer_head_heatmap(
    values: np.ndarray, title: str, *, selected: tuple[int, int], fmt: str, labels: np.ndarray
) -> go.Figure:
    """A metric per head as a ``[layer, head]`` heatmap (hover: the value and the head's pattern label), the
    ``selected`` head framed."""
    n_layers, n_heads = values.shape
    layer, head = selected
    fig = go.Figure(
        go.Heatmap(
            z=values.astype(float),
            x=list(range(n_heads)),
            y=list(range(n_layers)),
            customdata=labels,
            colorscale="Viridis",
            colorbar=dict(title=html.escape(title), thickness=12),
            hovertemplate=f"layer %{{y}}, head %{{x}}<br>{html.escape(title)} %{{z:{fmt}}}"
            "<br>%{customdata}<extra></extra>",
            texttemplate="%{z:" + fmt + "}",
            textfont=dict(size=max(11, theme.current().tick_px - 2)),
        )
    )
    frame = dict(color="#d62728", width=3)
    fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5, line=frame)
    fig.update_layout(
        title=dict(text=html.escape(title), x=0.0, font=dict(size=15)),
        height=max(240, 34 * n_layers + 110),
        margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(title="head", dtick=1, side="top"),
        yaxis=dict(title="layer", dtick=1, autorange="reversed"),
    )
    return fig


def similarity_figure(divergence: np.ndarray, labels: list[str], order: np.ndarray) -> go.Figure:
    """The head × head JS divergence matrix, rows and columns in ``order`` (similar heads adjacent)."""
    d = divergence[np.ix_(order, order)].astype(np.float32)
    names = [safe_label(labels[i]) for i in order]  # "L0 H3": unique, so categorical axes carry the hover
    n = len(names)
    fig = go.Figure(
        go.Heatmap(
            z=d,
            x=names,
            y=names,
            colorscale="Viridis_r",
            zmin=0.0,
            zmax=float(np.log(2)),
            hovertemplate="%{y} vs %{x}<br>JS divergence %{z:.3f} nats<extra></extra>",
            colorbar=dict(title="JS (nats)", thickness=12),
        )
    )
    # every label gets a full line of the theme's type: the figure grows with the heads, past 1,400 px every k-th
    label_px = theme.current().label_px
    side = max(360, min(1400, label_px * n + 140))
    ticks = names[:: max(1, math.ceil(n * label_px / (side - 140)))]
    # across, the plot is as wide as the page's column (~700 px at a 1280 px window): thinned for that
    x_ticks = names[:: max(1, math.ceil(n * label_px / SIMILARITY_WIDTH_PX))]
    fig.update_layout(
        height=side,
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis=dict(type="category", tickmode="array", tickvals=x_ticks, ticktext=x_ticks, tickangle=-90, side="top"),
        yaxis=dict(type="category", tickmode="array", tickvals=ticks, ticktext=ticks, autorange="reversed"),
    )
    return fig


def difference_heatmap(diff: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str) -> go.Figure:
    """A signed ``[q, k]`` difference (B − A): red where B attends more, blue where A does."""
    q_lab = [safe_label(t) for t in query_tokens]
    k_lab = [safe_label(t) for t in key_tokens]
    n_q, n_k = diff.shape
    bound = float(np.nanmax(np.abs(diff))) or 1e-6
    fig = go.Figure(
        go.Heatmap(
            z=diff.astype(np.float32),
            x=k_lab,
            y=q_lab,
            colorscale=DIVERGING,
            reversescale=True,
            zmin=-bound,
            zmax=bound,
            zmid=0.0,
            hovertemplate="%{y} → %{x}<br>B − A %{z:+.3f}<extra></extra>",
            colorbar=dict(title="B − A", thickness=12),
        )
    )
    side = max(360, min(760, 22 * max(n_q, n_k) + 160))
    xv, xt = tick_labels(k_lab, side - 160)
    yv, yt = tick_labels(q_lab, side - 160)
    fig.update_layout(
        title=dict(text=html.escape(title), x=0.0, font=dict(size=15)),
        height=side,
        margin=dict(l=10, r=10, t=40, b=10),
        plot_bgcolor=MASKED_COLOR,
        xaxis=dict(
            title="key (attended to)",
            type="category",
            tickmode="array",
            tickvals=xv,
            ticktext=xt,
            tickangle=-60,
            side="top",
            scaleanchor="y",
            constrain="domain",
        ),
        yaxis=dict(
            title="query (attending)", type="category", tickmode="array", tickvals=yv, ticktext=yt, autorange="reversed"
        ),
    )
    return fig


def pick_grid_head(chart_key: str, n_heads: int, per_row: int) -> None:
    """on_select of a phone's grid of heads (rows of ``per_row`` heads): the clicked head is chosen."""
    picked = clicked_in(chart_key, -(-n_heads // per_row), per_row)
    if picked is not None and picked[0] * per_row + picked[1] < n_heads:
        st.session_state[K.head] = picked[0] * per_row + picked[1]


def phone_grid_spec(tiles: np.ndarray, head: int, per_row: int = PHONE_TILES_PER_ROW) -> dict:
    """One layer's heads ``[1, heads, s, t]`` as rows of ``per_row`` tiles (a phone's grid), each row named by
    its heads; a click's ``[row, column]`` is turned back into a head by :func:`pick_grid_head`."""
    n_heads = tiles.shape[1]
    rows = -(-n_heads // per_row)
    padded = np.zeros((rows * per_row, *tiles.shape[2:]), dtype=tiles.dtype)
    padded[:n_heads] = tiles[0]
    spec = model_view_spec(
        padded.reshape(rows, per_row, *tiles.shape[2:]),
        selected=divmod(head, per_row),
        width_px=PHONE_GRID_PX,
        per_tile=True,
        layer_names=[f"H{r * per_row}–{min(n_heads, (r + 1) * per_row) - 1}" for r in range(rows)],
    )
    layout = spec["layout"]
    layout["xaxis"].update(ticktext=[f"+{c}" for c in range(per_row)], title={"text": "head (row's first + …)"})
    layout["yaxis"]["title"] = {"text": "heads"}
    markers = spec["data"][-1]
    markers["text"] = [str(i) if i < n_heads else "" for i in range(rows * per_row)]  # row by row, as the markers
    markers["hovertemplate"] = "head %{text}<br>tap to open it large<extra></extra>"
    return spec
