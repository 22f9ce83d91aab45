"""The maps pages draw: one head (exact or pooled), one layer's heads or every layer's for the in-browser view, from
the cached trace.

The engine pools at most ``size`` × ``size`` cells per head (``AttentionTrace.overview``: never an n×n matrix);
results sit in ``caches.MAPS`` under ``request_key(request)`` and the view, one read-only object for every session.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from app.runtime.caches import has_map, shared_map
from app.runtime.heads import heads_attention
from app.runtime.request import TraceRequest
from app.runtime.traces import QUICK_CHARS, request_key
from app.ui.map_data import MapData, MapView, head_map
from engine.views.layer_view import LayerData

#: the Heads model view holds every layer while its cells fit this many bytes (MiniLM: up to ~120 tokens)
MODEL_VIEW_BYTES = 2 << 20


def head_view(request: TraceRequest, view: MapView) -> MapData:
    """One head of ``request.block`` as ``view`` shows it (:func:`app.ui.map_data.head_map`), shared."""
    return shared_map(("head", request_key(request), view.numbers), lambda: head_map(heads_attention(request), view))


def layer_view_data(request: TraceRequest, view: MapView) -> LayerData:
    """Every head of ``view.layer`` as ``view`` shows it (:func:`head_view` for each), stacked for the in-browser
    view (``app/ui/layer_view.py``), shared."""

    def build() -> LayerData:
        att = heads_attention(request)
        maps = [head_view(request, replace(view, head=h)) for h in range(att.n_heads)]
        first = maps[0]
        values = np.stack([m.values for m in maps])[None]
        q_edges, k_pos, k_edges = first.q_edges, first.k_pos, first.k_edges
        spans = (q_edges[:-1], q_edges[1:] - 1, k_pos[k_edges[:-1]], k_pos[k_edges[1:] - 1])
        square = request.block != "cross"
        labels = (first.q_labels, first.k_labels)
        return LayerData(values, (view.layer,), *labels, square, first.value_name, spans=spans, n_tokens=att.n_queries)

    return shared_map(layer_key(request, view), build)


def model_view_data(request: TraceRequest, view: MapView, budget: int = MODEL_VIEW_BYTES) -> LayerData:
    """Every layer's heads (:func:`layer_view_data` each, stacked) while their cells fit ``budget`` bytes as the
    view's uint16 counts, else ``view.layer``'s alone (another layer is then the server's), shared."""
    one = layer_view_data(request, view)
    n_layers = heads_attention(request).n_layers
    if n_layers == 1 or one.values.size * 2 * n_layers > budget:
        return one

    def build() -> LayerData:
        stacked = [layer_view_data(request, replace(view, layer=layer)).values for layer in range(n_layers)]
        return replace(one, values=np.concatenate(stacked), layers=tuple(range(n_layers)))

    return shared_map(("model", *layer_key(request, replace(view, layer=0))[1:]), build)


def prefetch_head_view(key: tuple, attention, view: MapView) -> None:
    """Put :func:`head_view`'s map of ``attention`` (the traced block of the request keyed ``key``) in the shared
    cache from any thread (a long-work job that just wrote the trace)."""
    shared_map(("head", key, view.numbers), lambda: head_map(attention, view))


def layer_is_quick(request: TraceRequest, view: MapView) -> bool:
    """True when :func:`layer_view_data` is cached or its input short (no spinner needed)."""
    return len(request.text) <= QUICK_CHARS or has_map(layer_key(request, view))


def layer_key(request: TraceRequest, view: MapView) -> tuple:
    return ("layer", request_key(request), replace(view.numbers, head=0))
