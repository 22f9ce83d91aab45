"""The only app module that touches the engine's loading and tracing, behind Streamlit caches.

- ``get_model``: ``st.cache_resource`` around ``engine.load`` — one read-only model per id, shared
  by every session (never trained, moved or re-configured here).
- ``get_trace``: ``st.cache_data`` around ``engine.trace`` — keyed by plain values, returns a
  picklable ``AttentionTrace`` of numpy arrays.

Torch work is bounded for a shared 2-core classroom server: one intra-op thread per job and at
most ``MAX_JOBS`` forward passes at once.
"""

from __future__ import annotations

import logging
import threading

import streamlit as st

import engine
from engine import AttentionTrace, EngineError, ModelSpec

log = logging.getLogger(__name__)

MAX_JOBS = 2
_jobs = threading.BoundedSemaphore(MAX_JOBS)
_threads_set = False


def _bound_threads() -> None:
    global _threads_set
    if not _threads_set:
        engine.set_threads(1)
        _threads_set = True


@st.cache_data(show_spinner=False, ttl=60)
def list_models() -> tuple[ModelSpec, ...]:
    """The model catalog (offline models first)."""
    return engine.list_models()


@st.cache_resource(show_spinner=False, max_entries=4)
def get_model(model_id: str):
    """Load a model once per server process; shared, read-only."""
    _bound_threads()
    return engine.load(model_id)


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def get_trace(model_id: str, text: str, causal: bool | None, max_tokens: int) -> AttentionTrace:
    """Trace ``text`` through the cached model (same arguments → same cached trace)."""
    model = get_model(model_id)
    with _jobs:
        return engine.trace(model, text, causal=causal, max_tokens=max_tokens)


@st.cache_resource(show_spinner=False)
def device_label() -> str:
    """Where forward passes run, for the sidebar."""
    return engine.device_name()


def friendly_error(err: BaseException) -> str:
    """A message for the UI: engine errors as written, anything else as one calm sentence."""
    if isinstance(err, EngineError):
        return str(err)
    log.exception("unexpected error", exc_info=err)
    return f"Something went wrong while computing this ({type(err).__name__}). Try a shorter text or another model."


def warm_up() -> None:
    """Import torch and transformers in the background so the first trace does not wait for them."""

    def work() -> None:
        try:
            from engine.pretrained.hf_api import hf

            hf()  # imports torch and transformers under the engine's import lock
        except Exception:  # warm-up is best effort
            log.debug("warm-up import failed", exc_info=True)

    if not getattr(warm_up, "_started", False):
        warm_up._started = True  # type: ignore[attr-defined]
        threading.Thread(target=work, name="warm-up", daemon=True).start()


# ---------------------------------------------------------------- bertviz views


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)
def get_digit_trace(model_id: str, index: int):
    """A ViT trace of scikit-learn's bundled 8×8 digit number ``index`` (clamped to the 1,797 images)."""
    from sklearn.datasets import load_digits

    images = load_digits().images
    model = get_model(model_id)
    with _jobs:
        return engine.trace(model, images[min(max(int(index), 0), len(images) - 1)])


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def bertviz_view(view: str, model_id: str, source: str | int, causal: bool | None, max_tokens: int,
                 layer: int = 0, head: int = 0) -> dict:
    """One bertviz view ("head", "model" or "neuron") of a model's trace, as an offline HTML document.

    Args:
        view: which bertviz view.
        model_id: a model id; ``source`` is the text, or a digit index for a ViT.
        causal, max_tokens: as for :func:`get_trace`.
        layer, head: shown first.

    Returns:
        ``{"html": str | None, "height": int, "reason": str | None, "n_tokens": int}``; ``html`` is None
        and ``reason`` says why when the view is too big or does not exist for this model.
    """
    from engine.views import bertviz_html as bv

    if isinstance(source, int):
        trace = get_digit_trace(model_id, source)
    else:
        trace = get_trace(model_id, source, causal, max_tokens)
    n = bv.n_tokens(trace)
    if view == "neuron" and isinstance(trace, engine.AlignmentTrace):
        return {"html": None, "height": 0, "n_tokens": n, "reason": "no-qk"}
    reason = bv.too_big(trace, view)
    if reason:
        return {"html": None, "height": 0, "n_tokens": n, "reason": reason}
    if view == "head":
        return {"html": bv.head_view_html(trace, layer), "height": bv.head_view_height(trace), "n_tokens": n,
                "reason": None}
    if view == "model":
        return {"html": bv.model_view_html(trace), "height": bv.model_view_height(trace), "n_tokens": n,
                "reason": None}
    return {"html": bv.neuron_view_html(trace, layer, head), "height": bv.neuron_view_height(trace),
            "n_tokens": n, "reason": None}
