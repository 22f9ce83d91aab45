"""Charts of a live training run (curves, head scores, every head's attention on the probe): render-only plain
figure dicts, redrawn on every poll without Plotly's validation; a curve can carry a dashed rule at a step."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from app.ui import theme
from app.ui.head_views import tile_centres, tile_mosaic
from app.ui.heatmap import MASKED_COLOR, colorscale_stops, safe_label

PAGE_PX = 680  # width of the page's main column at a 1280 px window, which the grid's tiles share
CURVE_HEIGHT = 300  # px; the brief's floor is 200, and a legend on top takes ~40
RULE_COLOR = "#d62728"


def line_chart(
    frame: pd.DataFrame,
    columns: list[str],
    *,
    title: str,
    y_title: str,
    fmt: str = ".3f",
    y_range: list[float] | None = None,
    rule_step: int | None = None,
    height: int = CURVE_HEIGHT,
    x: str = "step",
    x_title: str = "training step",
    shapes: Sequence[dict] = (),
) -> dict:
    """One line (with points) per column of ``frame`` against its column ``x``; a dashed rule at ``rule_step``."""
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "x": frame[x].to_numpy(),
            "y": frame[c].to_numpy(dtype=float),
            "name": html.escape(str(c)),
            "marker": {"size": 5},
            "hovertemplate": f"{x} %{{x}}<br>{html.escape(str(c))} %{{y:{fmt}}}<extra></extra>",
        }
        for c in columns
    ]
    rule = {"type": "line", "xref": "x", "yref": "paper", "x0": rule_step, "x1": rule_step, "y0": 0, "y1": 1}
    rule.update(line={"color": RULE_COLOR, "dash": "dash", "width": 2}, name="time-lapse step")
    yaxis = {"title": {"text": y_title}, "rangemode": "tozero", "showgrid": True}
    return {
        "data": data,
        "layout": {
            "title": {"text": html.escape(title), "x": 0.0},
            "height": height,
            "shapes": [*shapes, *([] if rule_step is None else [rule])],
            "margin": {"l": 10, "r": 10, "t": 50, "b": 10},
            "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1.0, "xanchor": "right"},
            "xaxis": {"title": {"text": x_title}, "showgrid": True},
            "yaxis": yaxis if y_range is None else {**yaxis, "range": y_range},
        },
    }


def loss_chart(frame: pd.DataFrame, rule_step: int | None = None) -> dict:
    """Training and evaluation loss against step (``frame``: step, training loss, evaluation loss)."""
    columns = ["training loss", "evaluation loss"]
    return line_chart(frame, columns, title="Loss", y_title="loss (cross-entropy)", fmt=".4f", rule_step=rule_step)


def accuracy_chart(frame: pd.DataFrame, metric_name: str, rule_step: int | None = None) -> dict:
    """The task's metric and token accuracy against step, from 0 to 1."""
    title = "Accuracy on held-out examples"
    columns = [metric_name, "token accuracy"]
    return line_chart(frame, columns, title=title, y_title="fraction right", y_range=[0, 1.02], rule_step=rule_step)


def head_score_chart(frame: pd.DataFrame, rule_step: int | None = None) -> dict:
    """One line per head: its overlap with the ideal pattern (``frame``: step, then a column per head, "L0 H1")."""
    title, heads = "Which head learns the ideal pattern, and when", [c for c in frame.columns if c != "step"]
    y_title = "match with the ideal pattern"
    return line_chart(frame, heads, title=title, y_title=y_title, y_range=[0, 1.02], rule_step=rule_step, height=340)


def attention_grid(
    patterns: np.ndarray, tokens: list[str], ideal: np.ndarray | None = None, blocked: np.ndarray | None = None
) -> dict:
    """Every head ``[layer, head, q, k]`` as a tile of one heatmap (rows = layers) on one 0–1 scale, so a head
    sharpening shows; with ``ideal`` a last column of the pattern that solves the task; ``blocked`` cells grey."""
    n_layers, n_heads, n, _ = patterns.shape
    tiles = patterns.astype(np.float32)
    if blocked is not None:
        tiles = np.where(blocked[None, None], np.float32(np.nan), tiles)
    if ideal is not None:
        tiles = np.concatenate([tiles, np.broadcast_to(ideal.astype(np.float32), (n_layers, 1, n, n))], axis=1)
    z = tile_mosaic(tiles)
    n_cols = tiles.shape[1]
    xs, ys = tile_centres(n_layers, n_cols, n, n)
    names = [f"H{h}" for h in range(n_heads)] + (["ideal"] if ideal is not None else [])
    heatmap = {
        "type": "heatmap",
        "z": z,
        "zmin": 0,
        "zmax": 1,
        "colorscale": colorscale_stops(),  # a dict must not name the scale (plotly.js's own "Blues" differs)
        "showscale": False,
        "hoverongaps": False,
        "hovertemplate": "weight %{z:.2f}<extra></extra>",
    }
    size = max(110, min(220, 900 // n_cols))
    labels = [safe_label(t) for t in tokens][:n] if len(tokens) >= n else [str(i) for i in range(n)]
    pitch = n + 1  # tile_mosaic's GAP of one empty cell
    # the probe's tokens: queries on the left of every layer's row of tiles, keys under every column of tiles
    # a tile is drawn ~min(size, 680 / columns) px wide (the page's column at a 1280 px window): print every
    # k-th token so that the printed ones get a full line of the theme's type
    tile_px = min(size, PAGE_PX // n_cols)
    k = max(1, math.ceil(theme.current().label_px * n / tile_px))
    shown = list(range(0, n, k))
    y_vals = [r * pitch + i for r in range(n_layers) for i in shown]
    layer_note = {"showarrow": False, "x": 1.0, "xref": "paper", "xanchor": "left", "yref": "y", "font": {"size": 13}}
    notes = [{**layer_note, "text": f"<b>L{layer}</b>", "y": float(ys[layer])} for layer in range(n_layers)]
    if n <= 24:  # the keys under every column of tiles
        below = {"showarrow": False, "xref": "x", "yref": "y", "y": n_layers * pitch - 1.5, "yanchor": "top"}
        below.update(textangle=-90, font={"size": theme.current().tick_px})
        notes += [{**below, "text": labels[j], "x": c * pitch + j} for c in range(n_cols) for j in shown]
    ticks = {"tickmode": "array", "showgrid": False, "zeroline": False}
    layout = {
        "height": size * n_layers + 50 + (60 if n <= 24 else 0),
        "plot_bgcolor": MASKED_COLOR,
        "annotations": notes,
        "margin": {"l": 5, "r": 40, "t": 30, "b": 60 if n <= 24 else 5},
        "xaxis": {**ticks, "tickvals": xs.tolist(), "ticktext": names, "side": "top"},
        "yaxis": {**ticks, "tickvals": y_vals, "ticktext": [labels[i] for i in shown] * n_layers},
    }
    layout["yaxis"].update(autorange="reversed", scaleanchor="x", constrain="domain")
    return {"data": [heatmap], "layout": layout}


def curve_frame(snapshots, metric_name: str) -> pd.DataFrame:
    """Snapshots → one row per snapshot with the numbers the curves need."""
    return pd.DataFrame(
        {
            "step": [s.step for s in snapshots],
            "training loss": [s.loss for s in snapshots],
            "evaluation loss": [s.eval_loss for s in snapshots],
            metric_name: [s.metric for s in snapshots],
            "token accuracy": [s.token_accuracy for s in snapshots],
        }
    )


def head_columns(grids, suffix: str = "") -> dict[str, np.ndarray]:
    """Scores ``[points, layers, heads]`` as a column per head, named "L0 H1" + ``suffix``."""
    grids = np.asarray(grids, dtype=float)
    return {f"L{layer} H{head}{suffix}": grids[:, layer, head] for layer, head in np.ndindex(grids.shape[1:])}


def score_frame(snapshots, scores) -> pd.DataFrame:
    """Per-snapshot ``[layers, heads]`` scores → one row per snapshot: its step, then a column per head ("L0 H1")."""
    n = min(len(snapshots), len(scores))
    return pd.DataFrame({"step": [s.step for s in snapshots[:n]], **head_columns(np.stack(scores[:n]))})
