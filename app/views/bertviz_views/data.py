"""The bertviz views page's cache: one offline bertviz HTML view of a text or digit trace."""

from __future__ import annotations

import streamlit as st

from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.views.vit.data import get_vision_trace, vit_sample
from engine import VisionTrace


def get_digit_trace(model_id: str, index: int) -> VisionTrace:
    """A ViT trace of scikit-learn's bundled 8×8 digit number ``index`` (clamped to the 1,797 images);
    the same cached trace the Vision Transformer page uses for that digit."""
    from engine import samples

    index = min(max(int(index), 0), samples.n_digits() - 1)
    return get_vision_trace(model_id, vit_sample("digit", str(index)))


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def bertviz_view(
    view: str, model_id: str, source: str | int, causal: bool | None, max_tokens: int, layer: int = 0, head: int = 0
) -> dict:
    """One bertviz view ("head", "model" or "neuron") of a model's trace (``source``: the text, or a digit index for
    a ViT), as an offline HTML document, ``layer`` and ``head`` shown first: ``{"html", "height", "reason",
    "n_tokens"}``, ``html`` None and ``reason`` saying why when the view is too big or does not exist for the model."""
    from engine.views import bertviz_html as bv

    view = view if view in ("head", "model") else "neuron"
    if isinstance(source, int):
        trace = get_digit_trace(model_id, source)
    else:
        trace = get_trace(TraceRequest(model_id, source, causal, max_tokens))
    n = bv.n_tokens(trace)
    if view == "neuron" and not trace.attention_blocks():  # RNN attention: no queries or keys
        return {"html": None, "height": 0, "n_tokens": n, "reason": "no-qk"}
    reason = bv.too_big(trace, view)
    if reason:
        return {"html": None, "height": 0, "n_tokens": n, "reason": reason}
    html = {
        "head": lambda: bv.head_view_html(trace, layer),
        "model": lambda: bv.model_view_html(trace),
        "neuron": lambda: bv.neuron_view_html(trace, layer, head),
    }[view]()
    height = {"head": bv.head_view_height, "model": bv.model_view_height, "neuron": bv.neuron_view_height}[view]
    return {"html": html, "height": height(trace), "n_tokens": n, "reason": None}
