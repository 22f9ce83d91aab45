"""The Heads page's figures: a metric per head, heads compared, one head on two sentences."""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from app.ui import theme
from app.ui.heatmap import MASKED_COLOR, safe_label, tick_labels

DIVERGING = "RdBu"
SIMILARITY_WIDTH_PX = 700  # plot width the similarity matrix's column labels are thinned for
TITLE, MARGIN = dict(x=0.0, font=dict(size=15)), dict(l=10, r=10, t=40, b=10)  # a figure's title (plus its text)
CATEGORIES = dict(type="category", tickmode="array")  # an axis of token or head names, its ticks given


def layer_head_heatmap(
    values: np.ndarray, title: str, *, selected: tuple[int, int], fmt: str, labels: np.ndarray
) -> go.Figure:
    """A metric per head as a ``[layer, head]`` heatmap (hover: the value and the head's pattern label), the
    ``selected`` head framed."""
    n_layers, n_heads = values.shape
    layer, head = selected
    name = html.escape(title)
    hover = f"layer %{{y}}, head %{{x}}<br>{name} %{{z:{fmt}}}<br>%{{customdata}}<extra></extra>"
    cells = dict(texttemplate="%{z:" + fmt + "}", textfont=dict(size=max(11, theme.current().tick_px - 2)))
    axes = dict(
        x=list(range(n_heads)), y=list(range(n_layers)), colorscale="Viridis", colorbar=dict(title=name, thickness=12)
    )
    fig = go.Figure(go.Heatmap(z=values.astype(float), customdata=labels, hovertemplate=hover, **cells, **axes))
    frame = dict(color="#d62728", width=3)
    fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5, line=frame)
    fig.update_layout(title=TITLE | {"text": name}, height=max(240, 34 * n_layers + 110), margin=MARGIN)
    axes = dict(xaxis=dict(title="head", dtick=1, side="top"), yaxis=dict(title="layer", dtick=1, autorange="reversed"))
    return fig.update_layout(**axes)


def similarity_figure(divergence: np.ndarray, labels: list[str], order: np.ndarray) -> go.Figure:
    """The head × head JS divergence matrix, rows and columns in ``order`` (similar heads adjacent)."""
    d = divergence[np.ix_(order, order)].astype(np.float32)
    names = [safe_label(labels[i]) for i in order]  # "L0 H3": unique, so categorical axes carry the hover
    n = len(names)
    hover, scale = "%{y} vs %{x}<br>JS divergence %{z:.3f} nats<extra></extra>", dict(zmin=0.0, zmax=float(np.log(2)))
    bar = dict(colorscale="Viridis_r", colorbar=dict(title="JS (nats)", thickness=12))
    fig = go.Figure(go.Heatmap(z=d, x=names, y=names, hovertemplate=hover, **scale, **bar))
    # every label gets a full line of the theme's type: the figure grows with the heads, past 1,400 px every k-th
    label_px = theme.current().label_px
    side = max(360, min(1400, label_px * n + 140))
    ticks = names[:: max(1, math.ceil(n * label_px / (side - 140)))]
    # across, the plot is as wide as the page's column (~700 px at a 1280 px window): thinned for that
    x_ticks = names[:: max(1, math.ceil(n * label_px / SIMILARITY_WIDTH_PX))]
    fig.update_layout(height=side, margin=dict(l=10, r=10, t=10, b=10))
    x_axis = CATEGORIES | dict(tickvals=x_ticks, ticktext=x_ticks, tickangle=-90, side="top")
    return fig.update_layout(
        xaxis=x_axis, yaxis=CATEGORIES | dict(tickvals=ticks, ticktext=ticks, autorange="reversed")
    )


def difference_heatmap(diff: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str) -> go.Figure:
    """A signed ``[q, k]`` difference (B − A): red where B attends more, blue where A does."""
    q_lab, k_lab = [safe_label(t) for t in query_tokens], [safe_label(t) for t in key_tokens]
    n_q, n_k = diff.shape
    bound = float(np.nanmax(np.abs(diff))) or 1e-6
    hover, scale = "%{y} → %{x}<br>B − A %{z:+.3f}<extra></extra>", dict(zmin=-bound, zmax=bound, zmid=0.0)
    bar = dict(colorscale=DIVERGING, reversescale=True, colorbar=dict(title="B − A", thickness=12))
    fig = go.Figure(go.Heatmap(z=diff.astype(np.float32), x=k_lab, y=q_lab, hovertemplate=hover, **scale, **bar))
    side = max(360, min(760, 22 * max(n_q, n_k) + 160))
    xv, xt = tick_labels(k_lab, side - 160)
    yv, yt = tick_labels(q_lab, side - 160)
    keys = dict(CATEGORIES, title="key (attended to)", tickvals=xv, ticktext=xt, tickangle=-60, side="top")
    fig.update_layout(title=TITLE | {"text": html.escape(title)}, height=side, margin=MARGIN, plot_bgcolor=MASKED_COLOR)
    queries = dict(CATEGORIES, title="query (attending)", tickvals=yv, ticktext=yt, autorange="reversed")
    return fig.update_layout(xaxis=keys | dict(scaleanchor="y", constrain="domain"), yaxis=queries)  # square cells
