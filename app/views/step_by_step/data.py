"""Step by step's engine calls for "What made this score?": one score split into parts
(``engine.analysis.score_terms``) and each RoPE band's term against the query–key distance, shared by every session
that asks the same cell of the same trace."""

from __future__ import annotations

import numpy as np

from app.runtime.heads import heads_attention, model_run
from app.runtime.request import TraceRequest


def score_parts(request: TraceRequest, layer: int, head: int, query: int, key: int, by: str) -> dict[str, float]:
    """``score_terms`` of the request's block at one cell, split ``by`` (EngineError where the split does not apply)."""
    from engine.analysis.score_terms import score_terms

    attention = heads_attention(request)  # the cached trace the page shows
    cell = (request.block, layer, head, query, key, by)
    return model_run(request, ("score parts", *cell), lambda model, _: score_terms(attention, *cell[1:], model=model))


def band_distances(request: TraceRequest, layer: int, head: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``rope_band_distances`` of the request's block: ``(distances, {band: mean term per distance})``."""
    from engine.analysis.score_terms import rope_band_distances

    attention = heads_attention(request)
    what = ("band distances", request.block, layer, head)
    return model_run(request, what, lambda model, _: rope_band_distances(attention, layer, head, model))
