"""Cached attention maps for the figure layer: one head (exact or pooled) and one layer's thumbnails.

Both read the cached trace (``core.get_trace``: no forward pass on a hit) and ask the engine for at most
``size`` × ``size`` cells per head (``AttentionTrace.overview``), so a 16,384-token input never builds an
n×n matrix here. Results are small (≤ 256² float32 per head), so ``st.cache_data``'s copy per hit is cheap.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.components.map_data import OVERVIEW_SIZE, MapData, head_map, layer_tiles
from app.services.heads import heads_attention

GRID_CELLS = 48  # thumbnail cells per side in a layer's grid (a thumbnail is ~60–90 px wide; fewer for many heads)
GRID_BUDGET = 12 * 48 * 48  # cells of one layer's grid at most (12 heads × 48²: ~150 kB of base64)


def grid_cells(n_heads: int) -> int:
    """Cells per side of a thumbnail so that a layer's grid stays within ``GRID_BUDGET`` cells."""
    return int(max(16, min(GRID_CELLS, np.sqrt(GRID_BUDGET / max(n_heads, 1)))))


@st.cache_data(show_spinner=False, max_entries=512, ttl=3600)
def head_view(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str, layer: int, head: int,
              q_range: tuple[int, int] | None = None, k_range: tuple[int, int] | None = None,
              hide_sinks: bool = False, row_scale: bool = False, size: int = OVERVIEW_SIZE,
              weighting: str = "attention", decode: tuple | None = None) -> MapData:
    """One head as at most ``size``² cells: exact weights when the region fits, block maxima otherwise
    (``weighting="value"``: each weight times its key's value length, α·‖v‖; ``decode``: an
    encoder-decoder's decoding settings, see ``core.get_trace``)."""
    att = heads_attention(model_id, text, causal, max_tokens, block, decode)
    return head_map(att, layer, head, q_range=q_range, k_range=k_range, hide_sinks=hide_sinks,
                    row_scale=row_scale, size=size, weighting=weighting)


@st.cache_data(show_spinner=False, max_entries=128, ttl=3600)
def layer_grid(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str, layer: int,
               decode: tuple | None = None) -> tuple[np.ndarray, bool]:  # fmt: skip
    """Every head of ``layer`` as thumbnails ``[1, head, s, t]`` of block maxima, and whether they are pooled."""
    att = heads_attention(model_id, text, causal, max_tokens, block, decode)
    tiles = layer_tiles(att, layer, grid_cells(att.n_heads))
    return tiles[None].astype(np.float32), tiles.shape[-2:] != (att.n_queries, att.n_keys)
