"""Plotly figures of attention patterns: one head large, or a grid of heads.

Inputs are numpy arrays and display strings (from ``AttentionTrace``); nothing here computes
attention. Token text is escaped, since Plotly reads a subset of HTML in labels and hover text.
"""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

COLORSCALE = "Blues"
MASKED_COLOR = "#d9d9d9"
GRID_MAX_CELLS = 64  # a grid thumbnail is pooled down to at most this many rows/columns
LABEL_PX = 15  # vertical pixels one tick label needs; with more tokens than fit, every k-th is printed


def safe_label(text: str) -> str:
    """Token text safe for Plotly labels: HTML escaped, long tokens shortened."""
    text = text if len(text) <= 24 else text[:23] + "…"
    return html.escape(text, quote=True)


def _ticks(labels: list[str], plot_px: int) -> tuple[list[int], list[str]]:
    fit = max(4, plot_px // LABEL_PX)
    step = max(1, math.ceil(len(labels) / fit))
    idx = list(range(0, len(labels), step))
    return idx, [labels[i] for i in idx]


def attention_heatmap(
    pattern: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str],
    *,
    blocked: np.ndarray | None = None,
    title: str = "",
    height: int | None = None,
) -> go.Figure:
    """One head's pattern ``[q_pos, k_pos]`` with tokens on both axes.

    Args:
        pattern: attention weights (rows sum to 1).
        query_tokens, key_tokens: display strings, one per row / column.
        blocked: bool ``[q_pos, k_pos]``, True where the mask blocks attention; drawn grey.
        title: figure title.
        height: pixels; defaults to grow with the token count.

    Returns:
        A Plotly figure; hovering a cell shows "query → key: weight".
    """
    n_q, n_k = pattern.shape
    if (len(query_tokens), len(key_tokens)) != (n_q, n_k):
        raise ValueError(
            f"pattern is {n_q}×{n_k} but there are {len(query_tokens)} query and {len(key_tokens)} key tokens"
        )
    q_lab = [safe_label(t) for t in query_tokens]
    k_lab = [safe_label(t) for t in key_tokens]
    z = pattern.astype(float)
    if blocked is not None:
        z = np.where(blocked, np.nan, z)
    hover_q = np.repeat(np.array(q_lab, dtype=object)[:, None], n_k, axis=1)
    hover_k = np.repeat(np.array(k_lab, dtype=object)[None, :], n_q, axis=0)
    custom = np.stack([hover_q, hover_k], axis=-1)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(n_k)),
            y=list(range(n_q)),
            customdata=custom,
            colorscale=COLORSCALE,
            zmin=0.0,
            zmax=float(np.nanmax(z)) if np.isfinite(np.nanmax(z)) else 1.0,
            hovertemplate="query %{y} <b>%{customdata[0]}</b> → key %{x} <b>%{customdata[1]}</b>"
            "<br>weight %{z:.3f}<extra></extra>",
            hoverongaps=False,
            colorbar=dict(title="weight", thickness=12),
        )
    )
    side = height or max(320, min(900, 22 * max(n_q, n_k) + 140))
    xv, xt = _ticks(k_lab, side - 140)
    yv, yt = _ticks(q_lab, side - 140)
    fig.update_layout(
        title=dict(text=html.escape(title), x=0.0, font=dict(size=15), yref="container", automargin=True),
        height=side,
        margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        plot_bgcolor=MASKED_COLOR,
        xaxis=dict(title="key (attended to)", tickmode="array", tickvals=xv, ticktext=xt, tickangle=-60, side="top"),
        yaxis=dict(title="query (attending)", tickmode="array", tickvals=yv, ticktext=yt, autorange="reversed"),
    )
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False)
    return fig


def pool_max(matrix: np.ndarray, size: int) -> np.ndarray:
    """Shrink a square-ish matrix to at most ``size``×``size`` cells by taking block maxima.

    Maxima (not means) keep a sharp one-token pattern visible after shrinking.
    """
    n_q, n_k = matrix.shape
    if n_q <= size and n_k <= size:
        return matrix
    rq = np.linspace(0, n_q, min(size, n_q) + 1).astype(int)
    rk = np.linspace(0, n_k, min(size, n_k) + 1).astype(int)
    rows = np.maximum.reduceat(matrix, rq[:-1], axis=0)
    return np.maximum.reduceat(rows, rk[:-1], axis=1)


def head_grid(
    patterns: np.ndarray,
    tokens: list[str],
    *,
    titles: list[str] | None = None,
    cols: int | None = None,
    selected: int | None = None,
) -> tuple[go.Figure, bool]:
    """Small heatmaps of several heads ``[head, q_pos, k_pos]`` in a grid.

    Each thumbnail has its own colour scale (0 to that head's maximum), so weak heads stay
    readable. Long inputs are pooled to ``GRID_MAX_CELLS`` (block maxima).

    Returns:
        ``(figure, pooled)``: pooled is True when thumbnails were shrunk.
    """
    n_heads = patterns.shape[0]
    cols = cols or min(n_heads, 6 if n_heads > 4 else n_heads)
    rows = math.ceil(n_heads / cols)
    titles = titles or [f"head {h}" for h in range(n_heads)]
    titles = [f"<b>▶ {t}</b>" if h == selected else t for h, t in enumerate(titles)]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.02, vertical_spacing=0.06)
    pooled = False
    labels = [safe_label(t) for t in tokens]
    for h in range(n_heads):
        p = patterns[h]
        small = pool_max(p, GRID_MAX_CELLS)
        pooled |= small.shape != p.shape
        r, c = divmod(h, cols)
        trace_kwargs = {}
        if small.shape == p.shape:
            trace_kwargs = dict(
                customdata=np.stack(
                    [np.repeat(np.array(labels, dtype=object)[:, None], p.shape[1], 1),
                     np.repeat(np.array(labels, dtype=object)[None, :], p.shape[0], 0)], -1),
                hovertemplate=f"head {h}<br>%{{customdata[0]}} → %{{customdata[1]}}: %{{z:.3f}}<extra></extra>",
            )
        else:
            trace_kwargs = dict(hovertemplate=f"head {h}<br>block max %{{z:.3f}}<extra></extra>")
        fig.add_trace(
            go.Heatmap(z=small, colorscale=COLORSCALE, zmin=0, zmax=float(small.max()) or 1.0, showscale=False, **trace_kwargs),
            row=r + 1,
            col=c + 1,
        )
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    fig.update_layout(height=max(260, 190 * rows), margin=dict(l=5, r=5, t=30, b=5), plot_bgcolor=MASKED_COLOR)
    fig.update_annotations(font_size=12)
    return fig, pooled
