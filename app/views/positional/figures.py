"""Plotly figures for the positional-encodings page: tables, similarity matrices, RoPE pairs, ALiBi biases."""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from app.ui.head_views import GAP, tile_mosaic
from app.ui.heatmap import MASKED_COLOR
from app.views.vit.figures import tile_notes

DIVERGING = "RdBu_r"  # red positive, blue negative, white 0


def matrix_heatmap(
    z: np.ndarray, *, x_title: str, y_title: str, title: str, value_name: str, height: int = 420, bound: float = 0.0
) -> go.Figure:
    """A matrix ``z`` ``[rows, cols]`` on a red/blue scale from −``bound`` to ``bound``, row 0 at the top, NaN cells
    grey; ``value_name`` is what a cell holds. The default bound is the 99.5th percentile of |z|: a few outlier cells
    (learned tables have some) must not wash out the rest."""
    z = np.asarray(z, dtype=np.float32)
    finite = np.abs(z[np.isfinite(z)])
    bound = bound or (float(np.percentile(finite, 99.5)) if finite.size else 1.0) or 1.0
    hover = f"{y_title} %{{y}}<br>{x_title} %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>"
    colorbar = dict(title=value_name, thickness=12)
    heatmap = go.Heatmap(z=z, colorscale=DIVERGING, zmin=-bound, zmax=bound, hoverongaps=False, colorbar=colorbar)
    fig = go.Figure(heatmap.update(hovertemplate=hover))
    margin = dict(l=10, r=10, t=40 if title else 10, b=10)
    title = dict(text=html.escape(title), x=0.0, font=dict(size=15))
    fig.update_layout(title=title, height=height, margin=margin, plot_bgcolor=MASKED_COLOR)
    fig.update_xaxes(title=x_title, showgrid=False, zeroline=False)
    return fig.update_yaxes(title=y_title, showgrid=False, zeroline=False, autorange="reversed")


def dimension_curves(table: np.ndarray, dims: list[int]) -> go.Figure:
    """``table[:, d]`` over position for each chosen dimension ``d`` (one line each)."""
    fig = go.Figure()
    positions = np.arange(table.shape[0])
    for d in dims:
        name = f"dim {d} ({'sin' if d % 2 == 0 else 'cos'}, pair {d // 2})"
        fig.add_trace(go.Scatter(x=positions, y=table[:, d].astype(np.float32), mode="lines", name=name))
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=10, b=10), legend=dict(orientation="h", y=-0.25))
    return fig.update_layout(xaxis_title="position", yaxis_title="value")


def rope_pair_figure(q_path: np.ndarray, k_path: np.ndarray, m: int, n: int, *, pair: int) -> go.Figure:
    """Coordinate pair ``pair`` (i) of a query and a key as RoPE rotates them: ``q_path``, ``k_path`` ``[n_pos, 2]``
    hold ``(x[2i], x[2i+1])`` at positions 0 … n_pos − 1; arrows from the origin at positions ``m`` and ``n``."""
    fig = go.Figure()
    for path, name, color in ((q_path, "query", "#d62728"), (k_path, "key", "#1f77b4")):
        hover, marker = f"{name} at position %{{pointNumber}}<extra></extra>", dict(size=5, color=color, opacity=0.3)
        dots = go.Scatter(x=path[:, 0], y=path[:, 1], mode="markers", marker=marker, hovertemplate=hover)
        fig.add_trace(dots.update(name=f"{name} at positions 0…{len(path) - 1}"))
    for path, pos, name, color in ((q_path, m, "q", "#d62728"), (k_path, n, "k", "#1f77b4")):
        style = dict(name=f"{name} at position {pos}", line=dict(color=color, width=4))
        style["marker"] = dict(size=[0, 12], color=color)
        fig.add_trace(go.Scatter(x=[0, float(path[pos, 0])], y=[0, float(path[pos, 1])], mode="lines+markers", **style))
    radius = float(max(np.abs(q_path).max(), np.abs(k_path).max(), 1e-6)) * 1.15
    axis = dict(range=[-radius, radius], zeroline=True)
    fig.update_layout(height=460, margin=dict(l=10, r=10, t=10, b=10), legend=dict(orientation="h", y=-0.15))
    fig.update_xaxes(title=f"coordinate {2 * pair}", **axis)
    return fig.update_yaxes(title=f"coordinate {2 * pair + 1}", scaleanchor="x", scaleratio=1, **axis)


def bias_grid(bias: np.ndarray, heads: list[int], slopes: np.ndarray, *, causal: bool) -> go.Figure:
    """ALiBi bias matrices of the chosen heads side by side (grey above the diagonal when causal): one heatmap of
    tiles (one empty cell between them), each head named above its tile."""
    cols = max(1, min(len(heads), 4))
    rows = max(1, math.ceil(len(heads) / cols))
    n = bias.shape[-1]
    low = float(bias[heads].min()) if heads else -1.0
    blocked = np.triu(np.ones((n, n), dtype=bool), k=1) if causal else np.zeros((n, n), dtype=bool)
    tiles = np.full((rows * cols, n, n), np.nan, dtype=np.float32)
    for idx, h in enumerate(heads):
        tiles[idx] = np.where(blocked, np.nan, bias[h])
    z = tile_mosaic(tiles.reshape(rows, cols, n, n))
    notes = tile_notes([f"head {h}: slope {slopes[h]:.4g}" for h in heads], cols, n + GAP, n)
    colorbar = dict(title=dict(text="bias"), thickness=12)
    heatmap = go.Heatmap(z=z, colorscale="Blues_r", zmin=low, zmax=0.0, hoverongaps=False, colorbar=colorbar)
    fig = go.Figure(heatmap.update(hovertemplate="bias %{z:.3f} (−slope × distance)<extra></extra>"))
    axis = dict(showticklabels=False, showgrid=False, zeroline=False)
    yaxis = dict(axis, autorange="reversed", scaleanchor="x", constrain="domain")
    layout = dict(height=max(300, 280 * rows), margin=dict(l=5, r=5, t=40, b=5), plot_bgcolor=MASKED_COLOR)
    return fig.update_layout(annotations=notes, xaxis=axis, yaxis=yaxis, **layout)
