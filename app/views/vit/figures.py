"""Plotly figures for the Vision Transformer page: the image with its patch grid, attention overlays, a Swin window.
Coordinates are the model's input pixels (pixel (i, j) centred at x = j, y = i); a map ``[rows, cols]`` is a heatmap
of p-pixel squares over the picture dimmed to half (a digit's white strokes show as outlines, not as weight)."""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from app.ui import theme
from app.ui.head_views import tile_mosaic

OVERLAY_SCALE = "Inferno"  # sequential and colour-blind safe; black (no weight) hides what is under it
QUERY = "#00e5ff"  # the query patch's outline
UNDER_OVERLAY = 0.5  # the picture under an overlay is dimmed: its white strokes show as outlines, not as weight
MAX_SHOWN_SIDE = 112  # images are thinned to about this many pixels per side before they go to the browser
MAX_THUMB_SIDE = 56  # the same for each thumbnail of the all-heads grid (12 heads × a 224-px photo otherwise)


def image_trace(image: np.ndarray, max_side: int = MAX_SHOWN_SIDE) -> go.BaseTraceType:
    """The image (grey ``[S, S]`` or RGB ``[S, S, 3]``, values 0–1), thinned for the browser."""
    step = max(1, math.ceil(max(image.shape[:2]) / max_side))
    small = np.asarray(image, dtype=np.float32)[::step, ::step]
    place = dict(centred(step), hoverinfo="skip", name="image")
    if small.ndim == 3:
        return go.Image(z=np.clip(np.rint(small * 255), 0, 255).astype(np.uint8), **place)
    return go.Heatmap(z=small, colorscale="gray", zmin=0, zmax=1, showscale=False, **place)


def attention_layer(
    z: np.ndarray, size: int, *, zmax: float | None = None, unit: str = "patch", showscale: bool = True
) -> go.Heatmap:
    """A map ``[rows, cols]`` whose cells are the image's ``size``-pixel squares, numbered row-major on hover."""
    rows, cols = z.shape
    heatmap = go.Heatmap(z=z, **centred(size), customdata=np.arange(rows * cols).reshape(rows, cols), name="attention")
    zmax = zmax if zmax is not None else (float(np.nanmax(z)) or 1.0)
    heatmap.update(colorscale=OVERLAY_SCALE, opacity=theme.current().overlay_opacity, zmin=0, zmax=zmax)
    hover = f"{unit} %{{customdata}}<br>weight %{{z:.3f}}<extra></extra>"
    colorbar = dict(title="weight", thickness=12)
    return heatmap.update(showscale=showscale, colorbar=colorbar, hovertemplate=hover, hoverongaps=False)


def centred(size: int) -> dict:
    """Where a heatmap or image whose cells are ``size``-pixel squares lies: cell (0, 0) covers pixels 0 … size − 1."""
    return dict(x0=(size - 1) / 2, dx=size, y0=(size - 1) / 2, dy=size)


def square_markers(rows: int, cols: int, size: int, unit: str = "patch") -> go.Scatter:
    """Invisible markers at the squares' centres: hover names the square, a click selects it."""
    centres = np.arange(max(rows, cols)) * size + (size - 1) / 2
    xs, ys = np.meshgrid(centres[:cols], centres[:rows])
    invisible = dict(size=max(6, 240 // max(rows, cols)), opacity=0, symbol="square")
    markers = go.Scatter(x=xs.ravel(), y=ys.ravel(), mode="markers", customdata=np.arange(rows * cols))
    markers.update(marker=invisible)
    markers.update(unselected=dict(marker=dict(opacity=0)), selected=dict(marker=dict(opacity=0)), showlegend=False)
    return markers.update(hovertemplate=f"{unit} %{{customdata}}<extra></extra>", name="patches")


def square_outline(
    r0: float, r1: float, c0: float, c1: float, size: int, color: str, width: float = 3, dash: str = "solid"
) -> dict:
    """A rectangle round rows ``r0 … r1`` and columns ``c0 … c1`` of ``size``-pixel squares."""
    box = {"x0": c0 * size - 0.5, "x1": c1 * size - 0.5, "y0": r0 * size - 0.5, "y1": r1 * size - 0.5}
    return {"type": "rect", **box, "line": {"color": color, "width": width, "dash": dash}, "layer": "above"}


def grid_lines(ys: list, xs: list, right: float, bottom: float, color: str, width: float, dash: str = "solid") -> list:
    """Lines across the picture at pixel rows ``ys`` and down it at pixel columns ``xs``."""
    line = {"type": "line", "line": {"color": color, "width": width, "dash": dash}, "layer": "above"}
    shapes = [{**line, "x0": -0.5, "x1": right, "y0": y, "y1": y} for y in ys]
    return shapes + [{**line, "x0": x, "x1": x, "y0": -0.5, "y1": bottom} for x in xs]


def square_figure(
    traces: list, side: int, *, title: str, height: int, shapes: tuple = (), clickable: bool = False
) -> go.Figure:
    """``traces`` on square, unlabelled axes of ``side`` pixels (row 0 on top), titled, ``clickable`` for a point."""
    fig = go.Figure(traces)
    axis = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False, constrain="domain")
    fig.update_xaxes(range=[-0.5, side - 0.5], **axis)
    fig.update_yaxes(range=[side - 0.5, -0.5], scaleanchor="x", **axis)
    margin = dict(l=5, r=5, t=40 if title else 5, b=5)
    title = dict(text=html.escape(title), x=0.0, font=dict(size=15))
    fig.update_layout(title=title, height=height, shapes=list(shapes), margin=margin)
    if clickable:
        fig.update_layout(clickmode="event+select", dragmode=False)
    return fig


def image_with_grid(image: np.ndarray, patch_size: int, *, title: str = "") -> go.Figure:
    """The image as the model saw it, with the patch grid drawn on top and patch numbers on hover."""
    side = image.shape[0]
    grid = side // patch_size
    edges = [k - 0.5 for k in range(0, side + 1, patch_size)]
    shapes = grid_lines(edges, edges, side - 0.5, side - 0.5, "rgba(120,200,255,0.7)", 1)
    traces = [image_trace(image), square_markers(grid, grid, patch_size)]
    return square_figure(traces, side, title=title, height=360, shapes=shapes)


def overlay(
    image: np.ndarray,
    attention: np.ndarray,
    size: int,
    *,
    title: str = "",
    mark: int | None = None,
    clickable: bool = False,
    unit: str = "patch",
    height: int = 380,
    shapes: tuple | list = (),
) -> go.Figure:
    """One map ``[rows, cols]`` of ``size``-pixel squares over the image; ``mark`` outlines the query square (over
    ``shapes``); ``clickable`` adds invisible markers so a click picks a square; ``unit`` names a square on hover."""
    rows, cols = attention.shape
    traces = [image_trace(np.asarray(image) * UNDER_OVERLAY), attention_layer(attention, size, unit=unit)]
    traces += [square_markers(rows, cols, size, unit)] if clickable else []
    shapes = [*shapes, *([] if mark is None else [query_outline(mark, cols, size)])]
    side = max(*image.shape[:2], rows * size, cols * size)
    return square_figure(traces, side, title=title, height=height, shapes=shapes, clickable=clickable)


def query_outline(square: int, cols: int, size: int) -> dict:
    """The query square's cyan outline."""
    r, c = divmod(int(square), cols)
    return square_outline(r, r + 1, c, c + 1, size, QUERY)


def window_overlay(image: np.ndarray, row, cell: int, patch: int, *, title: str = "") -> go.Figure:
    """A Swin query ``patch``'s weights inside its window (``row``: an ``engine.traces.vision.WindowRow``) over
    ``image``: the block's window borders thin, the query's window outlined (dashed: pieces a shifted window brings
    round from the opposite edge, which the mask hides), the query in cyan; a click picks a patch."""
    rows, cols = row.weights.shape
    shown = np.where(row.visible, row.weights, np.nan).astype(np.float32)
    ys, xs = ([e * cell - 0.5 for e in edges] for edges in (row.row_edges, row.col_edges))
    shapes = grid_lines(ys, xs, cols * cell - 0.5, rows * cell - 0.5, "rgba(255,255,255,0.55)", 1.5)
    for r0, r1, c0, c1 in row.pieces:
        seen = bool(row.visible[r0:r1, c0:c1].any())
        shapes.append(square_outline(r0, r1, c0, c1, cell, "#ffffff", 2.5 if seen else 2, "solid" if seen else "dash"))
    return overlay(image, shown, cell, title=title, mark=patch, clickable=True, height=420, shapes=shapes)


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
    """Every map ``[n, rows, cols]`` over the image, one thumbnail each on its own colour scale, named by ``labels``
    (default ``head h``); ``unit`` is what one map is on hover. One image mosaic and one overlay mosaic (tiles one
    patch apart), not a subplot per map."""
    n, grid, width = maps.shape
    cols, side = min(n, per_row), image.shape[0]
    rows = math.ceil(n / cols)
    tiles = np.full((rows * cols, grid, width), np.nan, dtype=np.float32)  # NaN: the last row's empty places
    tiles[:n] = maps
    tiles = tiles.reshape(rows, cols, grid, width)
    shown, weights = tile_mosaic(tiles, normalise=True), tile_mosaic(tiles)
    # the image under every thumbnail, thinned by a divisor of the patch size (tiles stay patch-aligned)
    step = next((k for k in range(1, patch_size + 1) if patch_size % k == 0 and side / k <= MAX_THUMB_SIDE), patch_size)
    small = np.asarray(image, dtype=np.float32)[::step, ::step] * UNDER_OVERLAY
    t, gap = small.shape[0], patch_size // step
    canvas = np.ones((rows * (t + gap) - gap, cols * (t + gap) - gap) + small.shape[2:], dtype=np.float32)
    for h in range(n):
        r, c = divmod(h, cols)
        canvas[r * (t + gap) : r * (t + gap) + t, c * (t + gap) : c * (t + gap) + t] = small
    picture = image_trace(canvas, max_side=max(canvas.shape[:2]))
    picture.update(centred(step))
    attention = attention_layer(shown, patch_size, zmax=1.0, showscale=False)
    hover = f"weight %{{customdata:.3f}} (%{{z:.0%}} of this {unit}'s max)<extra></extra>"
    attention.update(customdata=weights, hovertemplate=hover)
    pitch = side + patch_size  # pixels from one thumbnail to the next
    names = [html.escape(label) for label in labels] if labels is not None else [f"head {h}" for h in range(n)]
    names = [f"<b>▶ {name}</b>" if h == selected else name for h, name in enumerate(names)]
    shapes = []
    if selected is not None:
        r, c = divmod(selected, cols)
        shapes.append(square_outline(r * pitch, r * pitch + side, c * pitch, c * pitch + side, 1, QUERY))
    fig = square_figure([picture, attention], 0, title="", height=max(220, 200 * rows), shapes=shapes)
    x_end, y_end = cols * pitch - patch_size, rows * pitch - patch_size
    fig.update_xaxes(range=[-0.5, x_end - 0.5])
    fig.update_yaxes(range=[y_end - 0.5, -0.5 - patch_size])
    return fig.update_layout(annotations=tile_notes(names, cols, pitch, side), plot_bgcolor="white", margin=dict(t=30))


def tile_notes(names: list[str], cols: int, pitch: float, side: float) -> list[dict]:
    """A name above each ``side``-wide tile of a mosaic ``cols`` tiles across, ``pitch`` apart (in data units)."""
    note = dict(xref="x", yref="y", yanchor="bottom", showarrow=False, font={"size": 12})
    places = [((i % cols) * pitch + side / 2 - 0.5, (i // cols) * pitch - 0.5) for i in range(len(names))]
    return [dict(note, text=text, x=x, y=y) for text, (x, y) in zip(names, places)]


def probability_bars(labels: tuple[str, ...], probs: np.ndarray, *, top: int = 10) -> go.Figure:
    """Horizontal bars of the ``top`` most likely classes, most likely on top."""
    order = np.argsort(-probs)[:top]
    names = [html.escape(labels[i]) for i in order]
    text = [f"{p:.1%}" for p in probs[order]]
    bars = go.Bar(x=probs[order], y=names, orientation="h", marker_color="#1f5fbf", text=text)
    bars.update(textposition="auto", hovertemplate="%{y}: %{x:.3f}<extra></extra>")
    axes = dict(xaxis=dict(title="probability", range=[0, 1]), yaxis=dict(autorange="reversed", type="category"))
    layout = dict(height=320, margin=dict(l=5, r=5, t=30, b=5), title=dict(text="Prediction", x=0.0))
    return go.Figure(bars).update_layout(**layout, **axes)
