"""The maps the figure layer draws: one head (exact or pooled) and one layer's thumbnails, shared by every session.

Both read the cached trace (``traces.get_trace``: no forward pass on a hit) and ask the engine for at most
``size`` × ``size`` cells per head (``AttentionTrace.overview``), so a 16,384-token input never builds an
n×n matrix here. Results sit in the per-process ``caches.MAPS`` cache keyed by the page's
:class:`~app.runtime.request.TraceRequest` and the view's options: a hit is the same read-only object
(no pickled copy, no hashing of the text per call as ``st.cache_data`` did), so a class on one link
computes each map once.
"""

from __future__ import annotations

import numpy as np

from app.runtime.caches import has_map, shared_map
from app.runtime.heads import heads_attention
from app.runtime.request import TraceRequest
from app.runtime.traces import QUICK_CHARS, request_key
from app.ui.map_data import OVERVIEW_SIZE, MapData, head_map, layer_tiles

#: inputs up to this many tokens get exact thumbnails in a layer's grid (a cell a token: a diagonal stays a diagonal)
GRID_EXACT = 48
#: thumbnail cells per side of a longer input (block maxima): a thumbnail is ~60–90 px wide, 2–3 px a cell. 48 (under
#: 2 px a cell) sent 165 kB of a 512-token rerun; 32 sends 75 kB, and Enter → drawn at 512 tokens came ~25 ms sooner
#: (0.42 against 0.45 s, alternating; AMD EPYC, 2026-11-28)
GRID_CELLS = 32
GRID_HEADS = 12  # heads a grid holds at these sizes; more heads get fewer cells (at least 16), the same total


def grid_cells(n_heads: int, n_tokens: int) -> int:
    """Cells per side of a layer's thumbnails: the input's own length where it fits ``GRID_EXACT`` (exact tiles),
    else ``GRID_CELLS`` (block maxima); both shrink for more than ``GRID_HEADS`` heads."""
    share = np.sqrt(GRID_HEADS / max(n_heads, 1))
    exact = int(max(16, min(GRID_EXACT, GRID_EXACT * share)))
    return exact if n_tokens <= exact else int(max(16, min(GRID_CELLS, GRID_CELLS * share)))


def head_view(
    request: TraceRequest,
    layer: int,
    head: int,
    q_range: tuple[int, int] | None = None,
    k_range: tuple[int, int] | None = None,
    hide_sinks: bool = False,
    row_scale: bool = False,
    size: int = OVERVIEW_SIZE,
    weighting: str = "attention",
) -> MapData:
    """One head of ``request.block`` as at most ``size``² cells: exact weights when the region fits, block
    maxima otherwise (``weighting="contribution"``: Kobayashi et al.'s ‖α·f(x)‖; ``"value"``: α·‖v‖)."""

    def build() -> MapData:
        return head_map(
            heads_attention(request),
            layer,
            head,
            q_range=q_range,
            k_range=k_range,
            hide_sinks=hide_sinks,
            row_scale=row_scale,
            size=size,
            weighting=weighting,
        )

    return shared_map(
        head_view_key(request_key(request), layer, head, q_range, k_range, hide_sinks, row_scale, size, weighting),
        build,
    )


def head_view_key(
    key: tuple,
    layer: int,
    head: int,
    q_range: tuple[int, int] | None = None,
    k_range: tuple[int, int] | None = None,
    hide_sinks: bool = False,
    row_scale: bool = False,
    size: int = OVERVIEW_SIZE,
    weighting: str = "attention",
) -> tuple:
    """:func:`head_view`'s cache key for a request whose :func:`~app.runtime.traces.request_key` is ``key``."""
    return ("head", key, (layer, head, q_range, k_range, bool(hide_sinks), bool(row_scale), size, weighting))


def prefetch_head_view(key: tuple, attention, layer: int, head: int) -> None:
    """Put :func:`head_view`'s default map of ``attention`` (the request's block, already traced) in the shared
    cache under ``head_view_key(key, layer, head)``, from any thread (e.g. a long-work job that just wrote
    the trace: the page's next run then draws it without computing an overview of a long input itself)."""
    shared_map(head_view_key(key, layer, head), lambda: head_map(attention, layer, head, size=OVERVIEW_SIZE))


def grid_ready(request: TraceRequest, layer: int) -> bool:
    """True when :func:`layer_grid` of ``layer`` is cached (nothing to wait for)."""
    return has_map(("grid", request_key(request), layer))


def grid_is_quick(request: TraceRequest, layer: int) -> bool:
    """True when the grid is cached or its input short (a spinner would never show: see ``trace_is_quick``)."""
    return len(request.text) <= QUICK_CHARS or grid_ready(request, layer)


def layer_grid(request: TraceRequest, layer: int) -> tuple[np.ndarray, bool]:
    """Every head of ``layer`` as thumbnails ``[1, head, s, t]`` of block maxima, and whether they are pooled."""

    def build() -> tuple[np.ndarray, bool]:
        att = heads_attention(request)
        tiles = layer_tiles(att, layer, grid_cells(att.n_heads, max(att.n_queries, att.n_keys)))
        return tiles[None].astype(np.float32), tiles.shape[-2:] != (att.n_queries, att.n_keys)

    return shared_map(("grid", request_key(request), layer), build)
