"""The bertviz views page's cache: one offline bertviz HTML view of a text or digit trace."""

from __future__ import annotations

import streamlit as st

from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.views.vit.data import get_vision_trace, vit_sample
from engine.traces import Trace


def source_trace(source: TraceRequest | tuple[str, int]) -> Trace:
    """The cached trace of a text request, or of ``(model_id, index)``: a ViT reading scikit-learn's bundled 8×8
    digit number ``index`` (clamped to the 1,797 images; the trace the Vision Transformer page uses for it)."""
    if isinstance(source, TraceRequest):
        return get_trace(source)
    from engine import samples

    model_id, index = source
    index = min(max(int(index), 0), samples.n_digits() - 1)
    return get_vision_trace(model_id, vit_sample("digit", str(index)))


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def bertviz_view(view: str, source: TraceRequest | tuple[str, int], layer: int = 0, head: int = 0) -> dict:
    """One bertviz view ("head", "model" or "neuron") of :func:`source_trace`'s trace as an offline HTML document,
    ``layer`` and ``head`` shown first: ``{"html", "reason", "n_tokens"}``, ``html`` None and ``reason``
    saying why when the view is too big or does not exist for the model."""
    from engine.views import bertviz_html as bv

    view = view if view in ("head", "model") else "neuron"
    trace = source_trace(source)
    n = bv.n_tokens(trace)
    no_qk = view == "neuron" and not trace.attention_blocks()  # RNN attention: no queries or keys
    reason = "no-qk" if no_qk else bv.too_big(trace, view)
    if reason:
        return {"html": None, "n_tokens": n, "reason": reason}
    html = {
        "head": lambda: bv.head_view_html(trace, layer, head),
        "model": lambda: bv.model_view_html(trace),
        "neuron": lambda: bv.neuron_view_html(trace, layer, head),
    }[view]()
    return {"html": html, "n_tokens": n, "reason": None}
