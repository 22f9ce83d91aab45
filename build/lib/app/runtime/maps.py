"""The maps pages draw: one head (exact or pooled) and one layer's thumbnails, from the cached trace.

The engine pools at most ``size`` × ``size`` cells per head (``AttentionTrace.overview``: never an n×n matrix);
results sit in ``caches.MAPS`` under ``request_key(request)`` and the view, one read-only object for every session.
"""

from __future__ import annotations

import numpy as np

from app.runtime.caches import has_map, shared_map
from app.runtime.heads import heads_attention
from app.runtime.request import TraceRequest
from app.runtime.traces import QUICK_CHARS, request_key
from app.ui.map_data import MapData, MapView, head_map, layer_tiles

#: inputs up to this many tokens get exact thumbnails in a layer's grid (a cell a token: a diagonal stays a diagonal)
GRID_EXACT = 48
#: thumbnail cells per side of a longer input (block maxima): a thumbnail is ~60–90 px wide, 2–3 px a cell
GRID_CELLS = 32
GRID_HEADS = 12  # heads a grid holds at these sizes; more heads get fewer cells (at least 16), the same total


def grid_cells(n_heads: int, n_tokens: int) -> int:
    """Cells per side of a layer's thumbnails: exact up to ``GRID_EXACT`` tokens, else ``GRID_CELLS`` block maxima;
    both shrink for more than ``GRID_HEADS`` heads."""
    share = np.sqrt(GRID_HEADS / max(n_heads, 1))
    exact = int(max(16, min(GRID_EXACT, GRID_EXACT * share)))
    return exact if n_tokens <= exact else int(max(16, min(GRID_CELLS, GRID_CELLS * share)))


def head_view(request: TraceRequest, view: MapView) -> MapData:
    """One head of ``request.block`` as ``view`` shows it (:func:`app.ui.map_data.head_map`), shared."""
    return shared_map(("head", request_key(request), view.numbers), lambda: head_map(heads_attention(request), view))


def prefetch_head_view(key: tuple, attention, view: MapView) -> None:
    """Put :func:`head_view`'s map of ``attention`` (the traced block of the request keyed ``key``) in the shared
    cache from any thread (a long-work job that just wrote the trace)."""
    shared_map(("head", key, view.numbers), lambda: head_map(attention, view))


def grid_is_quick(request: TraceRequest, layer: int) -> bool:
    """True when the grid is cached or its input short (no spinner needed)."""
    return len(request.text) <= QUICK_CHARS or has_map(("grid", request_key(request), layer))


def layer_grid(request: TraceRequest, layer: int) -> tuple[np.ndarray, bool]:
    """Every head of ``layer`` as thumbnails ``[1, head, s, t]`` of block maxima, and whether they are pooled."""

    def build() -> tuple[np.ndarray, bool]:
        att = heads_attention(request)
        tiles = layer_tiles(att, layer, grid_cells(att.n_heads, max(att.n_queries, att.n_keys)))
        return tiles[None].astype(np.float32), tiles.shape[-2:] != (att.n_queries, att.n_keys)

    return shared_map(("grid", request_key(request), layer), build)
