"""The Swin figure of the Vision Transformer page: one query patch's window over the image.

Same coordinates as :mod:`app.views.vit.figures`, with a stage's patch of ``cell`` pixels (a stage-k patch is
``patch_size · 2^k`` pixels: Swin merges 2×2 patches between stages). Drawn: the picture dimmed, the query's
weights on the patches it may see (nothing elsewhere), this block's window borders as thin lines, the query's
window outlined (solid where the query may look, dashed for the pieces a shifted window brings round from the
opposite edge, which the mask hides), the query in cyan, and invisible markers so a click picks a patch. Input
is the engine's :class:`engine.analysis.windows.WindowRow`; nothing here computes attention.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.views.vit.figures import (
    QUERY,
    UNDER_OVERLAY,
    attention_layer,
    image_trace,
    square_figure,
    square_markers,
    square_outline,
)

WINDOW = "#ffffff"  # the query's window
BORDERS = "rgba(255,255,255,0.55)"  # every window border of the block


def window_overlay(image: np.ndarray, row, cell: int, patch: int, *, title: str = "", height: int = 420) -> go.Figure:
    """The query ``patch``'s attention inside its window (``row``: a ``WindowRow``) over ``image``."""
    rows, cols = row.weights.shape
    side = max(image.shape[0], image.shape[1], rows * cell, cols * cell)
    shown = np.where(row.visible, row.weights, np.nan).astype(np.float32)
    traces = [
        image_trace(np.asarray(image) * UNDER_OVERLAY),
        attention_layer(shown, cell),
        square_markers(rows, cols, cell),
    ]
    line = {"type": "line", "line": {"color": BORDERS, "width": 1.5}, "layer": "above"}
    right, bottom = cols * cell - 0.5, rows * cell - 0.5
    shapes = [{**line, "x0": -0.5, "x1": right, "y0": e * cell - 0.5, "y1": e * cell - 0.5} for e in row.row_edges]
    shapes += [{**line, "x0": e * cell - 0.5, "x1": e * cell - 0.5, "y0": -0.5, "y1": bottom} for e in row.col_edges]
    for r0, r1, c0, c1 in row.pieces:
        seen = bool(row.visible[r0:r1, c0:c1].any())
        shapes.append(square_outline(r0, r1, c0, c1, cell, WINDOW, 2.5 if seen else 2, "solid" if seen else "dash"))
    r, c = divmod(int(patch), cols)
    shapes.append(square_outline(r, r + 1, c, c + 1, cell, QUERY))
    return square_figure(traces, side, title=title, height=height, shapes=shapes, clickable=True)
