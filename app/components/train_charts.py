"""Charts of a live training run: loss / accuracy curves and head scores (Altair), and every head's
attention on the probe input (Plotly). Render-only: inputs are plain numbers and numpy arrays.

Every curve chart can carry a vertical rule at the step the time-lapse slider shows, so a pattern
in the grid can be read against the loss at that moment.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.components.head_views import tile_centres, tile_mosaic
from app.components.heatmap import COLORSCALE, MASKED_COLOR

CURVE_HEIGHT = 220


def _rule(step: int | None) -> alt.Chart | None:
    if step is None:
        return None
    return alt.Chart(pd.DataFrame({"step": [step]})).mark_rule(color="#d62728", strokeDash=[4, 3]).encode(
        x="step:Q", tooltip=[alt.Tooltip("step:Q", title="time-lapse at step")]
    )


def _with_rule(chart: alt.Chart, step: int | None) -> alt.Chart | alt.LayerChart:
    rule = _rule(step)
    return chart if rule is None else alt.layer(chart, rule)


def loss_chart(frame: pd.DataFrame, rule_step: int | None = None) -> alt.Chart | alt.LayerChart:
    """Training and evaluation loss against step (``frame``: step, training loss, held-out loss)."""
    long = frame.melt(id_vars="step", value_vars=["training loss", "evaluation loss"], var_name="curve",
                      value_name="loss")  # fmt: skip
    chart = alt.Chart(long).mark_line(point=alt.OverlayMarkDef(size=18)).encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("loss:Q", title="loss (cross-entropy)", scale=alt.Scale(zero=True)),
        color=alt.Color("curve:N", title=None, legend=alt.Legend(orient="top")),
        tooltip=["step:Q", "curve:N", alt.Tooltip("loss:Q", format=".4f")],
    ).properties(height=CURVE_HEIGHT, title="Loss")
    return _with_rule(chart, rule_step)


def accuracy_chart(frame: pd.DataFrame, metric_name: str, rule_step: int | None = None) -> alt.Chart | alt.LayerChart:
    """The task's metric and token accuracy against step, from 0 to 1."""
    long = frame.melt(id_vars="step", value_vars=[metric_name, "token accuracy"], var_name="curve", value_name="value")
    chart = alt.Chart(long).mark_line(point=alt.OverlayMarkDef(size=18)).encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("value:Q", title="fraction right", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("curve:N", title=None, legend=alt.Legend(orient="top")),
        tooltip=["step:Q", "curve:N", alt.Tooltip("value:Q", format=".3f")],
    ).properties(height=CURVE_HEIGHT, title="Accuracy on held-out examples")
    return _with_rule(chart, rule_step)


def head_score_chart(frame: pd.DataFrame, rule_step: int | None = None) -> alt.Chart | alt.LayerChart:
    """One line per head: its overlap with the ideal pattern (``frame``: step, head, score)."""
    chart = alt.Chart(frame).mark_line().encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("score:Q", title="match with the ideal pattern", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("head:N", title="head", legend=alt.Legend(orient="right")),
        tooltip=["step:Q", "head:N", alt.Tooltip("score:Q", format=".3f")],
    ).properties(height=CURVE_HEIGHT + 40, title="Which head learns the ideal pattern, and when")
    return _with_rule(chart, rule_step)


def attention_grid(patterns: np.ndarray, tokens: list[str], ideal: np.ndarray | None = None,
                   blocked: np.ndarray | None = None) -> go.Figure:  # fmt: skip
    """Every head ``[layer, head, q, k]`` as a thumbnail (rows = layers), coloured from 0 to 1 for all.

    A shared 0–1 scale shows a head sharpening as it trains (a uniform head stays pale). With
    ``ideal`` a last column shows the pattern that solves the task; ``blocked`` cells are grey.
    One heatmap of tiles (the figure layer's mosaic), not a subplot per head: the page redraws it on
    every poll while a model trains.
    """
    n_layers, n_heads, n, _ = patterns.shape
    tiles = patterns.astype(np.float32)
    if blocked is not None:
        tiles = np.where(blocked[None, None], np.float32(np.nan), tiles)
    if ideal is not None:
        tiles = np.concatenate([tiles, np.broadcast_to(ideal.astype(np.float32), (n_layers, 1, n, n))], axis=1)
    z = tile_mosaic(tiles)
    xs, ys = tile_centres(n_layers, tiles.shape[1], n, n)
    names = [f"H{h}" for h in range(n_heads)] + (["ideal"] if ideal is not None else [])
    fig = go.Figure(go.Heatmap(z=z, zmin=0, zmax=1, colorscale=COLORSCALE, showscale=False, hoverongaps=False,
                               hovertemplate="weight %{z:.2f}<extra></extra>"))
    size = max(110, min(220, 900 // tiles.shape[1]))
    fig.update_layout(
        height=size * n_layers + 50, margin=dict(l=5, r=5, t=30, b=5), plot_bgcolor=MASKED_COLOR,
        xaxis=dict(tickmode="array", tickvals=xs.tolist(), ticktext=names, side="top", showgrid=False,
                   zeroline=False),
        yaxis=dict(tickmode="array", tickvals=ys.tolist(), ticktext=[f"L{layer}" for layer in range(n_layers)],
                   autorange="reversed", showgrid=False, zeroline=False, scaleanchor="x", constrain="domain"),
    )
    return fig


def curve_frame(snapshots, metric_name: str) -> pd.DataFrame:
    """Snapshots → one row per snapshot with the numbers the curves need."""
    return pd.DataFrame({
        "step": [s.step for s in snapshots],
        "training loss": [s.loss for s in snapshots],
        "evaluation loss": [s.eval_loss for s in snapshots],
        metric_name: [s.metric for s in snapshots],
        "token accuracy": [s.token_accuracy for s in snapshots],
    })  # fmt: skip


def score_frame(snapshots, scores) -> pd.DataFrame:
    """Per-snapshot ``[layers, heads]`` scores → long rows (step, head "L0 H1", score)."""
    rows = []
    for snap, grid in zip(snapshots, scores):
        for (layer, head), value in np.ndenumerate(grid):
            rows.append({"step": snap.step, "head": f"L{layer} H{head}", "score": float(value)})
    return pd.DataFrame(rows, columns=["step", "head", "score"])
