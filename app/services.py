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


# ---------------------------------------------------------------- Step by step
# One query row of one head is O(n · d_head) on top of the cached trace, and the calculator's
# tables are at most 5 × 4: neither is worth a cache entry (pickling would cost more than the math).

def query_steps(trace: AttentionTrace, layer: int, head: int, query: int):
    """Every step of attention for one query token of one head (``engine.analysis.stepwise``)."""
    from engine.analysis import stepwise

    return stepwise.query_steps(trace, layer, head, query)


def calculator_example(n_tokens: int, width: int):
    """Default tokens, Q, K, V for the calculator: ``(tokens, Q, K, V)``."""
    from engine.analysis import stepwise

    return stepwise.calculator_example(n_tokens, width)


def calculator_matrix(data, name: str, shape: tuple[int, int]):
    """A typed table as a validated float matrix; raises ``EngineError`` with a message for the user."""
    from engine.analysis import stepwise

    return stepwise.to_matrix(data, name, shape)


def calculator_steps(q, k, v, scale: float, causal: bool):
    """Attention on the calculator's own Q, K, V with every step kept."""
    from engine.analysis import stepwise

    return stepwise.attention_steps(q, k, v, scale, causal)
