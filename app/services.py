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


# ---------------------------------------------------------------- positional encodings


@st.cache_data(show_spinner=False, max_entries=32)
def pos_sinusoidal(n_pos: int, d_model: int):
    """The sinusoidal table ``[n_pos, d_model]``, its dot-product similarity, and that matrix's
    largest spread along a diagonal (0 = depends on ``|p − q|`` only)."""
    from engine.analysis import positional

    table = positional.sinusoidal_table(n_pos, d_model)
    sim = positional.similarity(table, "dot")
    return table, sim, positional.by_offset_spread(sim)


@st.cache_data(show_spinner=False, max_entries=32)
def pos_shift_check(n_pos: int, d_model: int, k: int):
    """``engine.analysis.positional.shift_check``: PE(pos + k) against R_k · PE(pos)."""
    from engine.analysis import positional

    return positional.shift_check(n_pos, d_model, k)


@st.cache_data(show_spinner=False, max_entries=8)
def pos_learned_table(model_id: str):
    """A loaded model's position table (``PositionTable``) and its cosine similarity."""
    from engine.analysis import positional

    table = positional.position_table(get_model(model_id))
    return table, positional.similarity(table.values, "cosine")


@st.cache_data(show_spinner=False, max_entries=32)
def pos_rope(d_head: int, offset: int, seed: int, n_pos: int, starts: tuple[int, ...]):
    """RoPE demo data: ``(q, k, rotated q [n_pos, d], rotated k [n_pos, d], thetas, relative scores)``."""
    import numpy as np

    from engine.analysis import positional

    q, k = positional.rope_example_vectors(d_head, seed)
    positions = np.arange(n_pos)
    scores = positional.rope_relative_scores(q, k, offset, np.array(starts), base=10000.0)
    return (q, k, positional.rope_rotate(q, positions), positional.rope_rotate(k, positions),
            positional.rope_thetas(d_head), scores)  # fmt: skip


@st.cache_data(show_spinner=False, max_entries=32)
def pos_alibi(n_heads: int, n_pos: int):
    """ALiBi ``(slopes [H], bias [H, n, n])``."""
    from engine.analysis import positional

    return positional.alibi(n_heads, n_pos)


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def pos_order_blindness(text: str, seed: int, max_tokens: int):
    """``engine.analysis.order_blindness.order_blindness`` on fresh copies of tiny-gpt-stories."""
    from engine.analysis.order_blindness import order_blindness

    _bound_threads()
    with _jobs:
        return order_blindness(text, seed=seed, max_tokens=max_tokens)
