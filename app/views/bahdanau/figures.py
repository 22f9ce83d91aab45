"""Plotly figures of the Bahdanau page: the alignment map and one decoding step's vectors, from the engine's traces
and ``StepBreakdown``. Each figure carries ``layout.meta`` (a short name) so tests can find it."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.ui.heatmap import safe_label
from app.views.bahdanau.keys import Bahdanau

# Figure 3 of Bahdanau et al. (2015) draws weights in greyscale, white = high; we keep that look.
PAPER_GREYS = [[0.0, "#000000"], [1.0, "#ffffff"]]
GOLD_COLOR = "#e8590c"


def labels(tokens: list[str] | tuple[str, ...]) -> list[str]:
    """Unique, escaped axis labels ``"2 rouge"`` (position first, so repeated words stay distinct)."""
    return [f"{i} {safe_label(t)}" for i, t in enumerate(tokens)]


def alignment_map(
    weights: np.ndarray,
    target: list[str],
    source: list[str],
    *,
    title: str,
    meta: str,
    gold: list[tuple[int, int]] | None = None,
    compact: bool = False,
    zmax: float = 1.0,
) -> go.Figure:
    """``weights`` ``[target, source]`` (rows sum to 1) in paper greyscale, white = ``zmax`` (1.0 as in the paper);
    ``gold``: ``[(source_index, target_index)]`` links drawn as orange squares; ``compact``: no axis titles and no
    colour bar, a fixed height (a narrow column)."""
    n_t, n_s = weights.shape
    if (len(target), len(source)) != (n_t, n_s):
        raise ValueError(f"weights are {n_t}×{n_s} but there are {len(target)} target and {len(source)} source words")
    y_lab, x_lab = labels(target), labels(source)  # unique ("2 rouge"): categorical axes carry the hover
    heatmap = go.Heatmap(z=weights.astype(np.float32), x=x_lab, y=y_lab, zmin=0.0, zmax=float(zmax))
    hover, colorbar = "writing %{y} ← reading %{x}<br>α = %{z:.3f}<extra></extra>", dict(title="α", thickness=10)
    heatmap.update(colorscale=PAPER_GREYS, colorbar=colorbar, showscale=not compact, hovertemplate=hover)
    fig = go.Figure(heatmap)
    if gold:
        marker = dict(symbol="square-open", size=18, color=GOLD_COLOR, line=dict(width=2))
        links = go.Scatter(x=[x_lab[s] for s, _ in gold], y=[y_lab[t] for _, t in gold], mode="markers", marker=marker)
        fig.add_trace(links.update(name="gold link", hovertemplate="gold link<extra></extra>"))
    x_title, y_title = (None, None) if compact else ("source (English)", "target (written)")
    axis = dict(type="category", tickmode="array", showgrid=False, zeroline=False)
    xaxis = dict(axis, title=x_title, tickvals=x_lab, ticktext=x_lab, tickangle=-45, side="top")
    yaxis = dict(axis, title=y_title, tickvals=y_lab, ticktext=y_lab, autorange="reversed")
    title = dict(text=html.escape(title), font=dict(size=14), yref="container", y=0.99, yanchor="top")
    height = 420 if compact else max(300, min(700, 34 * n_t + 170))
    margin = dict(l=10, r=45 if compact else 10, t=95, b=10)
    legend = dict(orientation="h", y=-0.02, yanchor="top")
    layout = dict(title=title, meta=meta, height=height, margin=margin, showlegend=bool(gold), legend=legend)
    return fig.update_layout(xaxis=xaxis, yaxis=yaxis, **layout)


def state_strip(vector: np.ndarray, *, title: str) -> go.Figure:
    """The decoder state s(i−1) as bars, one per component (blue positive, red negative)."""
    colours = np.where(vector >= 0, "#1c7ed6", "#e03131").tolist()
    fig = go.Figure(go.Bar(y=vector.astype(float), x=list(range(len(vector))), name="s", marker_color=colours))
    fig.update_traces(hovertemplate="s[%{x}] = %{y:.4f}<extra></extra>")
    return step_layout(fig, title, Bahdanau.state, 220, xaxis_title="component", bargap=0.05)


def step_layout(fig: go.Figure, title: str, meta: str, height: int, **layout) -> go.Figure:
    """A step figure's title, ``meta`` name, height and margins, then the rest of its ``layout``."""
    margin = dict(l=10, r=10, t=40, b=30)
    fig.update_layout(title=dict(text=title, font=dict(size=14)), meta=meta, height=height, margin=margin)
    return fig.update_layout(**layout)


def energies_and_weights(energies: np.ndarray, alignment: np.ndarray, source: list[str], *, title: str) -> go.Figure:
    """Two bar charts over the source words: the energies e(i, j) and their softmax α(i, j)."""
    x = labels(source)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("energy e(i, j)", "weight α(i, j) = softmax_j e(i, j)"))
    for col, (name, values, colour) in enumerate((("e", energies, "#495057"), ("α", alignment, "#1c7ed6")), 1):
        bars = go.Bar(x=x, y=values.astype(float), name=name, marker_color=colour)
        fig.add_trace(bars.update(hovertemplate=f"%{{x}}: {name} = %{{y:.4f}}<extra></extra>"), row=1, col=col)
    fig.update_yaxes(range=[0, 1], row=1, col=2)
    return step_layout(fig, title, Bahdanau.energies, 300, showlegend=False, margin=dict(t=60, b=40))


def context_figure(states: np.ndarray, alignment: np.ndarray, context: np.ndarray, source: list[str]) -> go.Figure:
    """The encoder states h(j) (rows) above the context c(i) = Σ_j α(i, j) h(j) (last row)."""
    rows = [f"h({j}) {safe_label(w)} · α={a:.2f}" for j, (w, a) in enumerate(zip(source, alignment))] + ["c(i) = Σ α h"]
    z = np.vstack([states, context[None, :]]).astype(float)
    limit = float(np.abs(z).max()) or 1.0
    heatmap = go.Heatmap(z=z, y=list(range(len(rows))), colorscale="RdBu", zmid=0.0, zmin=-limit, zmax=limit)
    heatmap.update(colorbar=dict(thickness=10), hovertemplate="row %{y}, component %{x}: %{z:.4f}<extra></extra>")
    title, height = "Encoder states h(j) and the context vector c(i)", max(220, 26 * len(rows) + 90)
    yaxis = dict(tickmode="array", tickvals=list(range(len(rows))), ticktext=rows, autorange="reversed")
    return step_layout(go.Figure(heatmap), title, Bahdanau.context, height, xaxis_title="component", yaxis=yaxis)


def table(matrix: np.ndarray, row_names: list[str], prefix: str, decimals: int = 4) -> pd.DataFrame:
    """A rounded table with one row per name and columns ``prefix[0]``, ``prefix[1]``, …."""
    matrix = np.atleast_2d(matrix)
    return pd.DataFrame(
        np.round(matrix, decimals), index=row_names, columns=[f"{prefix}[{k}]" for k in range(matrix.shape[1])]
    )
