"""Plotly figures for the "Is attention the explanation?" page: importances per method, their agreement, the swap
test. Signed scores use a diverging scale centred on 0 (blue: the token raises the explained number, red: lowers it)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.ui.heatmap import safe_label, unique_labels

DIVERGING = "RdBu"  # red (negative) … white … blue (positive); colour-blind safe
UP, DOWN = "#2166ac", "#b2182b"  # the diverging scale's ends, for bars


def token_labels(tokens: tuple[str, ...] | list[str]) -> list[str]:
    """``"3 ball"``: position and token, escaped and made distinct for a categorical axis."""
    return unique_labels([f"{i} {safe_label(t)}" for i, t in enumerate(tokens)])


def normalised(scores: np.ndarray) -> np.ndarray:
    """``scores`` divided by its largest size (NaN kept), so methods on different scales share one colour scale."""
    scores = np.asarray(scores, dtype=np.float64)
    top = np.nanmax(np.abs(scores)) if np.any(np.isfinite(scores)) else 0.0
    return scores / top if top > 0 else np.zeros_like(scores)


def labelled_heatmap(z: np.ndarray, x: list[str], y: list[str], title: str, *, height: int, tickangle: int, **trace):
    """A categorical heatmap on the diverging scale −1 … 1, rows top to bottom."""
    heatmap = go.Heatmap(z=np.asarray(z, dtype=np.float32), x=x, y=y, colorscale=DIVERGING, zmin=-1, zmax=1, **trace)
    xaxis, yaxis = dict(type="category", tickangle=tickangle), dict(type="category", autorange="reversed")
    return framed(go.Figure(heatmap), title, height, xaxis=xaxis, yaxis=yaxis)


def framed(fig: go.Figure, title: str, height: int, **layout) -> go.Figure:
    """``fig`` titled, ``height`` pixels high, with this page's margins and the rest of its ``layout``."""
    return fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10), title=dict(text=title), **layout)


def importance_heatmap(tokens: list[str], methods: list[str], scores: list[np.ndarray]) -> go.Figure:
    """Methods (rows) × tokens (columns), each row divided by its largest size; hover shows the raw score."""
    raw = np.stack([np.asarray(s, dtype=np.float64) for s in scores])
    hover = "%{y}<br>%{x}: %{customdata:.4g} (%{z:.2f} of the largest)<extra></extra>"
    colorbar = dict(title=dict(text="share of<br>the largest"), thickness=12)
    title, z, x = "Importance of each token, by method", np.stack([normalised(s) for s in scores]), token_labels(tokens)
    trace = dict(customdata=raw, zmid=0, colorbar=colorbar, hovertemplate=hover)
    return labelled_heatmap(z, x, methods, title, height=340, tickangle=-60, **trace)


EVERY_LABEL = 16  # tokens: up to this many, each bar of importance_bars is labelled


def importance_bars(tokens: list[str], scores: np.ndarray, title: str) -> go.Figure:
    """One method's scores as bars in the text's order (blue up, red down; a left-out token has no bar)."""
    scores = np.asarray(scores, dtype=np.float64)
    colours = [UP if not np.isfinite(s) or s >= 0 else DOWN for s in scores]
    bars = go.Bar(x=token_labels(tokens), y=np.nan_to_num(scores, nan=0.0), marker_color=colours)
    # a third of the page wide, Plotly labelled every other token of a short sentence ("0 <bos>, 2 had, …"): up to
    # EVERY_LABEL tokens each gets its label, upright to the axis so they fit; longer texts keep Plotly's thinning
    every = len(scores) <= EVERY_LABEL
    xaxis = dict(type="category", tickangle=-90 if every else -60, dtick=1 if every else None)
    fig = go.Figure(bars.update(hovertemplate="%{x}: %{y:.4g}<extra></extra>"))
    return framed(fig, title, 260, xaxis=xaxis, yaxis=dict(zeroline=True))


def agreement_heatmap(matrix: np.ndarray, methods: list[str], title: str) -> go.Figure:
    """A method × method correlation matrix (−1 … 1) with its numbers printed in the cells."""
    trace = dict(texttemplate="%{z:.2f}", colorbar=dict(thickness=12))
    trace["hovertemplate"] = "%{y} vs %{x}: %{z:.3f}<extra></extra>"
    return labelled_heatmap(matrix, methods, methods, title, height=340, tickangle=-30, **trace)


def swap_scatter(attention_change: np.ndarray, output_change: np.ndarray, *, output_label: str) -> go.Figure:
    """One point per run of the swap test: how far the attention moved (JSD) against how far the output moved."""
    x, y = np.asarray(attention_change, dtype=np.float64), np.asarray(output_change, dtype=np.float64)
    dots = go.Scatter(x=x, y=y, mode="markers", marker=dict(size=9, color=UP, opacity=0.75))
    dots.update(hovertemplate="attention moved %{x:.3f} nats<br>output moved %{y:.4f}<extra></extra>")
    xaxis = dict(title=dict(text="attention change: mean JSD(α′, α), nats (max ln 2 ≈ 0.69)"))
    xaxis["range"] = [0, float(np.log(2)) * 1.05]
    yaxis = dict(title=dict(text=output_label), rangemode="tozero")
    return framed(go.Figure(dots), "Attention moved vs output moved, one point per run", 320, xaxis=xaxis, yaxis=yaxis)
