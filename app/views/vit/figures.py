"""Plotly figures for the Vision Transformer page: the image with its patch grid, attention overlays.

Coordinates are the model's input pixels: pixel (row i, column j) is centred at (x = j, y = i), so
patch (r, c) of side p covers x ∈ [c·p − ½, (c+1)·p − ½]. An attention map ``[rows, cols]`` is drawn
as a heatmap whose cells are exactly those patches (``x0 = (p − 1)/2, dx = p``), over the image at the
theme's opacity (0.85) over the picture dimmed to half its brightness: at 0.6 over the bare picture a
digit's white strokes shone through dark, unattended patches and read as attention; now they show as
faint outlines and only the colour scale reads as weight. Inputs are numpy arrays from the engine; nothing here computes attention.
"""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from app.ui import theme

OVERLAY_SCALE = "Inferno"  # sequential and colour-blind safe; black (no weight) hides what is under it
UNDER_OVERLAY = 0.5  # the picture under an overlay is dimmed: its white strokes show as outlines, not as weight
MAX_SHOWN_SIDE = 112  # images are thinned to about this many pixels per side before they go to the browser
MAX_THUMB_SIDE = 56  # the same for each thumbnail of the all-heads grid (12 heads × a 224-px photo otherwise)


def image_trace(image: np.ndarray, max_side: int = MAX_SHOWN_SIDE) -> go.BaseTraceType:
    """The image (grey ``[S, S]`` or RGB ``[S, S, 3]``, values 0–1), thinned for the browser."""
    step = max(1, math.ceil(max(image.shape[:2]) / max_side))
    small = np.asarray(image, dtype=np.float64)[::step, ::step]
    offset = (step - 1) / 2
    if small.ndim == 3:
        rgb = np.clip(np.rint(small * 255), 0, 255).astype(np.uint8)
        return go.Image(z=rgb, x0=offset, dx=step, y0=offset, dy=step, hoverinfo="skip", name="image")
    return go.Heatmap(
        z=small,
        x0=offset,
        dx=step,
        y0=offset,
        dy=step,
        colorscale="gray",
        zmin=0,
        zmax=1,
        showscale=False,
        hoverinfo="skip",
        name="image",
    )


def square_at(point: tuple[float, float], size: int, rows: int, cols: int) -> tuple[int, int] | None:
    """``(row, column)`` of the ``size``-pixel square (a patch, a grid cell) under ``point`` = ``(x, y)`` in the
    image's pixels, or None outside the ``rows`` × ``cols`` grid."""
    x, y = point
    r, c = int((y + 0.5) // size), int((x + 0.5) // size)
    return (r, c) if 0 <= r < rows and 0 <= c < cols else None


def _overlay_trace(
    attention: np.ndarray, patch_size: int, *, showscale: bool, zmax: float | None = None, unit: str = "patch"
) -> go.Heatmap:
    rows, cols = attention.shape
    numbers = np.arange(rows * cols).reshape(rows, cols)
    return go.Heatmap(
        z=attention,
        x0=(patch_size - 1) / 2,
        dx=patch_size,
        y0=(patch_size - 1) / 2,
        dy=patch_size,
        customdata=numbers,
        colorscale=OVERLAY_SCALE,
        opacity=theme.current().overlay_opacity,
        zmin=0,
        zmax=zmax if zmax is not None else (float(attention.max()) or 1.0),
        showscale=showscale,
        colorbar=dict(title="weight", thickness=12),
        name="attention",
        hovertemplate=f"{unit} %{{customdata}}<br>weight %{{z:.3f}}<extra></extra>",
    )


def _patch_markers(side: int, patch_size: int, unit: str = "patch") -> go.Scatter:
    """Invisible markers at the patch centres: hover shows the patch number, a click selects the patch."""
    grid = side // patch_size
    centres = (np.arange(grid) * patch_size + (patch_size - 1) / 2).tolist()
    xs, ys = np.meshgrid(centres, centres)
    return go.Scatter(
        x=xs.ravel(),
        y=ys.ravel(),
        mode="markers",
        customdata=np.arange(grid * grid),
        marker=dict(size=max(6, 240 // grid), opacity=0, symbol="square"),
        unselected=dict(marker=dict(opacity=0)),
        selected=dict(marker=dict(opacity=0)),
        hovertemplate=f"{unit} %{{customdata}}<extra></extra>",
        showlegend=False,
        name="patches",
    )


def _grid_lines(fig: go.Figure, side: int, patch_size: int, row: int | None = None, col: int | None = None) -> None:
    for k in range(0, side + 1, patch_size):
        edge = k - 0.5
        kwargs = dict(line=dict(color="rgba(120,200,255,0.7)", width=1), layer="above")
        if row is not None:
            kwargs.update(row=row, col=col)
        fig.add_shape(type="line", x0=edge, x1=edge, y0=-0.5, y1=side - 0.5, **kwargs)
        fig.add_shape(type="line", x0=-0.5, x1=side - 0.5, y0=edge, y1=edge, **kwargs)


def square_axes(fig: go.Figure, side: int) -> None:
    fig.update_xaxes(
        range=[-0.5, side - 0.5], showticklabels=False, ticks="", showgrid=False, zeroline=False, constrain="domain"
    )
    fig.update_yaxes(
        range=[side - 0.5, -0.5],
        showticklabels=False,
        ticks="",
        showgrid=False,
        zeroline=False,
        scaleanchor="x",
        constrain="domain",
    )


def image_with_grid(image: np.ndarray, patch_size: int, *, title: str = "", height: int = 360) -> go.Figure:
    """The image as the model saw it, with the patch grid drawn on top and patch numbers on hover."""
    side = image.shape[0]
    fig = go.Figure(image_trace(image))
    fig.add_trace(_patch_markers(side, patch_size))
    _grid_lines(fig, side, patch_size)
    square_axes(fig, side)
    fig.update_layout(
        title=dict(text=html.escape(title), x=0.0, font=dict(size=15)),
        height=height,
        margin=dict(l=5, r=5, t=40 if title else 5, b=5),
    )
    return fig


def overlay(
    image: np.ndarray,
    attention: np.ndarray,
    patch_size: int,
    *,
    title: str = "",
    height: int = 380,
    mark: int | None = None,
    clickable: bool = False,
    unit: str = "patch",
) -> go.Figure:
    """One attention map ``[rows, cols]`` over the image; ``mark`` outlines one patch (the query);
    ``clickable`` adds invisible patch markers so a click can select a patch; ``unit`` names a square in the
    hover text (the captioner's grid has cells)."""
    side = image.shape[0]
    fig = go.Figure(
        [
            image_trace(np.asarray(image) * UNDER_OVERLAY),
            _overlay_trace(attention, patch_size, showscale=True, unit=unit),
        ]
    )
    if clickable:
        fig.add_trace(_patch_markers(side, patch_size, unit))
        fig.update_layout(clickmode="event+select", dragmode=False)
    if mark is not None:
        r, c = divmod(int(mark), attention.shape[1])
        fig.add_shape(
            type="rect",
            x0=c * patch_size - 0.5,
            x1=(c + 1) * patch_size - 0.5,
            y0=r * patch_size - 0.5,
            y1=(r + 1) * patch_size - 0.5,
            line=dict(color="#00e5ff", width=3),
            layer="above",
        )
    square_axes(fig, side)
    fig.update_layout(
        title=dict(text=html.escape(title), x=0.0, font=dict(size=15)),
        height=height,
        margin=dict(l=5, r=5, t=40 if title else 5, b=5),
    )
    return fig


def _thumb_step(side: int, patch_size: int) -> int:
    """Pixels per thinned pixel for thumbnails: a divisor of the patch size (tiles stay patch-aligned)."""
    for step in range(1, patch_size + 1):
        if patch_size % step == 0 and side / step <= MAX_THUMB_SIDE:
            return step
    return patch_size


def overlay_grid(
    image: np.ndarray,
    maps: np.ndarray,
    patch_size: int,
    *,
    selected: int | None = None,
    labels: list[str] | None = None,
    unit: str = "head",
    per_row: int = 6,
) -> go.Figure:
    """Every head's map ``[head, rows, cols]`` over the image, one thumbnail each (own colour scale).

    ``labels`` name the thumbnails (default ``head h``); ``unit`` is what one map is in the hover text (the
    Captions page draws a map per written word); ``per_row`` thumbnails a row.

    One image mosaic and one overlay mosaic (the figure layer's tiles, one patch of gap between
    thumbnails) instead of a subplot per head: built in a few ms however many heads.
    """
    from app.ui.head_views import tile_mosaic

    n, grid = maps.shape[0], maps.shape[1]
    cols = min(n, per_row)
    rows = math.ceil(n / cols)
    side = image.shape[0]
    # overlays: [rows, cols, grid, grid] tiles (NaN for the empty places of the last row)
    tiles = np.full((rows * cols, grid, maps.shape[2]), np.nan, dtype=np.float32)
    tiles[:n] = maps
    tiles = tiles.reshape(rows, cols, grid, maps.shape[2])
    shown, weights = tile_mosaic(tiles, normalise=True), tile_mosaic(tiles)
    # the image under every thumbnail, thinned by a divisor of the patch size, white between tiles
    step = _thumb_step(side, patch_size)
    small = np.asarray(image, dtype=np.float32)[::step, ::step] * UNDER_OVERLAY
    t, gap = small.shape[0], patch_size // step
    canvas = np.ones((rows * (t + gap) - gap, cols * (t + gap) - gap) + small.shape[2:], dtype=np.float32)
    for h in range(n):
        r, c = divmod(h, cols)
        canvas[r * (t + gap) : r * (t + gap) + t, c * (t + gap) : c * (t + gap) + t] = small
    offset = (step - 1) / 2
    if canvas.ndim == 3:
        picture = {"type": "image", "z": np.clip(np.rint(canvas * 255), 0, 255).astype(np.uint8)}
    else:
        picture = {"type": "heatmap", "z": canvas, "colorscale": "gray", "zmin": 0, "zmax": 1, "showscale": False}
    picture.update(x0=offset, dx=step, y0=offset, dy=step, hoverinfo="skip", name="image")
    attention = {
        "type": "heatmap",
        "z": shown,
        "customdata": weights,
        "x0": (patch_size - 1) / 2,
        "dx": patch_size,
        "y0": (patch_size - 1) / 2,
        "dy": patch_size,
        "colorscale": OVERLAY_SCALE,
        "opacity": theme.current().overlay_opacity,
        "zmin": 0,
        "zmax": 1,
        "showscale": False,
        "name": "attention",
        "hoverongaps": False,
        "hovertemplate": f"weight %{{customdata:.3f}} (%{{z:.0%}} of this {unit}'s max)<extra></extra>",
    }
    pitch = side + patch_size  # pixels from one thumbnail to the next
    notes, shapes = [], []
    for h in range(n):
        r, c = divmod(h, cols)
        name = html.escape(labels[h]) if labels is not None else f"head {h}"
        notes.append(
            {
                "text": f"<b>▶ {name}</b>" if h == selected else name,
                "x": c * pitch + side / 2 - 0.5,
                "y": r * pitch - 0.5,
                "xref": "x",
                "yref": "y",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 12},
            }
        )
        if h == selected:
            shapes.append(
                {
                    "type": "rect",
                    "x0": c * pitch - 0.5,
                    "x1": c * pitch + side - 0.5,
                    "y0": r * pitch - 0.5,
                    "y1": r * pitch + side - 0.5,
                    "line": {"color": "#00e5ff", "width": 3},
                }
            )
    width, height = cols * pitch - patch_size, rows * pitch - patch_size
    axis = {"showticklabels": False, "ticks": "", "showgrid": False, "zeroline": False, "constrain": "domain"}
    return go.Figure(
        {
            "data": [picture, attention],
            "layout": {
                "height": max(220, 200 * rows),
                "margin": {"l": 5, "r": 5, "t": 30, "b": 5},
                "plot_bgcolor": "white",
                "annotations": notes,
                "shapes": shapes,
                "xaxis": {**axis, "range": [-0.5, width - 0.5]},
                "yaxis": {**axis, "range": [height - 0.5, -0.5 - patch_size], "scaleanchor": "x"},
            },
        }
    )


def probability_bars(labels: tuple[str, ...], probs: np.ndarray, *, top: int = 10, height: int = 320) -> go.Figure:
    """Horizontal bars of the ``top`` most likely classes, most likely on top."""
    order = np.argsort(-probs)[:top]
    names = [html.escape(labels[i]) for i in order]
    fig = go.Figure(
        go.Bar(
            x=probs[order],
            y=names,
            orientation="h",
            marker_color="#1f5fbf",
            text=[f"{p:.1%}" for p in probs[order]],
            textposition="auto",
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        height=height,
        margin=dict(l=5, r=5, t=30, b=5),
        title=dict(text="Prediction", x=0.0),
        xaxis=dict(title="probability", range=[0, 1]),
        yaxis=dict(autorange="reversed", type="category"),
    )
    return fig
