"""Plotly figures for the Captions page: a map per written word (the paper's figure), one large map, β per word,
the picture with its objects' true boxes. Built on the ViT page's overlays: a grid cell plays the part of a patch."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from app.views.captions.map_data import CaptionView
from app.views.vit.figures import grid_lines, image_with_grid, overlay, overlay_grid, square_outline

PICKED, OTHER = "#e8710a", "#1f3b73"  # the chosen word's bar (and the lesson's picked region), the others
BOX = "#00e5ff"  # a true object's outline


def word_panels(image: np.ndarray, view: CaptionView, selected: int | None = None) -> go.Figure:
    """One small map per written word over the picture, in caption order (each on its own colour scale)."""
    labels = list(view.labels)
    fig = overlay_grid(image, view.alphas, view.cell_px, selected=selected, labels=labels, unit="word", per_row=5)
    title = dict(text="Where it looks for each word", x=0.0, font=dict(size=15))
    return fig.update_layout(title=title, margin=dict(l=5, r=5, t=60, b=5))


def word_map(image: np.ndarray, view: CaptionView, word: int, cell: int | None = None) -> go.Figure:
    """The map of word ``word`` over the picture, large; ``cell`` outlined (click a cell to pick it)."""
    name, values = view.gate
    title = f"α for word {word}, “{view.words[word]}” ({name.removeprefix('α on ')} = {float(values[word]):.2f})"
    return overlay(image, view.alphas[word], view.cell_px, title=title, mark=cell, clickable=True, unit="cell")


def gate_bars(view: CaptionView, selected: int) -> go.Figure:
    """Each written word's ``view.gate`` as bars, the chosen word in orange, its largest α on hover."""
    name, values = view.gate
    title, peak = ("β: how much each word uses the image", "largest α")
    if view.betas is None:
        title, peak = "Weight on [CLS], not on a patch", "largest patch α"
    peaks = view.alphas.reshape(len(view.words), -1).max(axis=1)
    labels = [html.escape(label) for label in view.labels]
    colours = [PICKED if t == selected else OTHER for t in range(len(labels))]
    bars = go.Bar(x=labels, y=values, customdata=peaks, marker_color=colours, text=[f"{v:.2f}" for v in values])
    hover = f"%{{x}}<br>{name} %{{y:.3f}}<br>{peak} %{{customdata:.3f}}<extra></extra>"
    bars.update(textposition="outside", hovertemplate=hover)
    layout = dict(yaxis=dict(title=name, range=[0, 1.15]), xaxis=dict(type="category"))
    layout |= dict(height=300, margin=dict(l=10, r=10, t=40, b=10), title=dict(text=title, x=0.0))
    return go.Figure(bars).update_layout(**layout)


def picture_with_boxes(image: np.ndarray, boxes, cell_px: int, *, title: str = "") -> go.Figure:
    """The picture with the attention grid and each object's true box outlined and named."""
    fig = image_with_grid(image, cell_px, title=title)
    for name, (top, left, bottom, right) in boxes:
        fig.add_shape(square_outline(top, bottom + 1, left, right + 1, 1, BOX, 2, "dot"))
        note = dict(text=html.escape(name), showarrow=False, yanchor="bottom", font=dict(color=BOX, size=12))
        fig.add_annotation(x=(left + right) / 2, y=top - 0.5, **note)
    return fig


def region_lines(fig: go.Figure, bounds: list[tuple[int, int]], cell_px: int, side: int) -> go.Figure:
    """``fig`` with the 3×3 split into regions drawn (lines at the regions' cell edges)."""
    edges = [start * cell_px - 0.5 for start, _stop in bounds[1:]]
    lines = grid_lines(edges, edges, side - 0.5, side - 0.5, "white", 2, "dash")
    return fig.update_layout(shapes=[*fig.layout.shapes, *lines])


def region_box(fig: go.Figure, bounds: list[tuple[int, int]], region: int, cell_px: int) -> go.Figure:
    """``fig`` with region ``region`` (of the 3×3 split) outlined."""
    (r0, r1), (c0, c1) = bounds[region // 3], bounds[region % 3]
    return fig.add_shape(square_outline(r0, r1, c0, c1, cell_px, PICKED))
