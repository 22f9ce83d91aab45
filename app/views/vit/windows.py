"""The Swin figure of the Vision Transformer page: one query patch's window over the image.

Same coordinates as :mod:`app.views.vit.figures` (pixel (i, j) centred at x = j, y = i), with a stage's
patch of ``cell`` pixels (a stage-k patch is ``patch_size · 2^k`` pixels: Swin merges 2×2 patches between
stages). Drawn: the picture dimmed, the query's weights on the patches it may see (nothing elsewhere, so the
picture shows through), this block's window borders as thin lines, the query's window outlined (solid where
the query may look, dashed for the pieces a shifted window brings round from the opposite edge, which the
mask hides), the query outlined in cyan, and invisible markers so a click picks a patch. Input is the
engine's :class:`engine.analysis.windows.WindowRow`; nothing here computes attention.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from app.ui import theme
from app.views.vit.figures import OVERLAY_SCALE, UNDER_OVERLAY, image_trace, square_axes

QUERY = "#00e5ff"  # the query patch (as on the ViT's patch map)
WINDOW = "#ffffff"  # the query's window
BORDERS = "rgba(255,255,255,0.55)"  # every window border of the block


def _rect(r0: float, r1: float, c0: float, c1: float, cell: int, color: str, width: float, dash: str = "solid") -> dict:
    return {
        "type": "rect",
        "x0": c0 * cell - 0.5,
        "x1": c1 * cell - 0.5,
        "y0": r0 * cell - 0.5,
        "y1": r1 * cell - 0.5,
        "line": {"color": color, "width": width, "dash": dash},
        "layer": "above",
    }


def _line(x0: float, x1: float, y0: float, y1: float) -> dict:
    return {
        "type": "line",
        "x0": x0,
        "x1": x1,
        "y0": y0,
        "y1": y1,
        "line": {"color": BORDERS, "width": 1.5},
        "layer": "above",
    }


def window_overlay(image: np.ndarray, row, cell: int, patch: int, *, title: str = "", height: int = 420) -> go.Figure:
    """The query ``patch``'s attention inside its window (``row``: a ``WindowRow``) over ``image``."""
    rows, cols = row.weights.shape
    side = max(image.shape[0], image.shape[1], rows * cell, cols * cell)
    shown = np.where(row.visible, row.weights, np.nan).astype(np.float32)
    numbers = np.arange(rows * cols).reshape(rows, cols)
    weights = go.Heatmap(
        z=shown,
        x0=(cell - 1) / 2,
        dx=cell,
        y0=(cell - 1) / 2,
        dy=cell,
        customdata=numbers,
        colorscale=OVERLAY_SCALE,
        opacity=theme.current().overlay_opacity,
        zmin=0,
        zmax=float(np.nanmax(shown)) or 1.0,
        colorbar=dict(title="weight", thickness=12),
        name="attention",
        hoverongaps=False,
        hovertemplate="patch %{customdata}<br>weight %{z:.3f}<extra></extra>",
    )
    centres = np.arange(max(rows, cols)) * cell + (cell - 1) / 2
    xs, ys = np.meshgrid(centres[:cols], centres[:rows])
    markers = go.Scatter(
        x=xs.ravel(),
        y=ys.ravel(),
        mode="markers",
        customdata=numbers.ravel(),
        marker=dict(size=max(6, 240 // max(rows, cols)), opacity=0, symbol="square"),
        unselected=dict(marker=dict(opacity=0)),
        selected=dict(marker=dict(opacity=0)),
        hovertemplate="patch %{customdata}<extra></extra>",
        showlegend=False,
        name="patches",
    )
    fig = go.Figure([image_trace(np.asarray(image) * UNDER_OVERLAY), weights, markers])
    right, bottom = cols * cell - 0.5, rows * cell - 0.5
    shapes = [_line(-0.5, right, e * cell - 0.5, e * cell - 0.5) for e in row.row_edges]
    shapes += [_line(e * cell - 0.5, e * cell - 0.5, -0.5, bottom) for e in row.col_edges]
    for r0, r1, c0, c1 in row.pieces:
        seen = bool(row.visible[r0:r1, c0:c1].any())
        shapes.append(_rect(r0, r1, c0, c1, cell, WINDOW, 2.5 if seen else 2, "solid" if seen else "dash"))
    r, c = divmod(int(patch), cols)
    shapes.append(_rect(r, r + 1, c, c + 1, cell, QUERY, 3))
    square_axes(fig, side)
    fig.update_layout(
        title=dict(text=html.escape(title), x=0.0, font=dict(size=15)),
        height=height,
        shapes=shapes,
        margin=dict(l=5, r=5, t=40 if title else 5, b=5),
        clickmode="event+select",
        dragmode=False,
    )
    return fig
