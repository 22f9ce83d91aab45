"""The positional-encodings page's caches: sinusoidal, learned, RoPE and ALiBi data, and order blindness."""

from __future__ import annotations

import streamlit as st

from app.runtime.models import bound_threads, get_model, model_pass


@st.cache_data(show_spinner=False, max_entries=32)
def pos_sinusoidal(n_pos: int, d_model: int):
    """The sinusoidal table ``[n_pos, d_model]``, its dot-product similarity and that matrix's largest spread along
    a diagonal (0: it depends on ``|p − q|`` only)."""
    from engine.analysis import positional

    table = positional.sinusoidal_table(n_pos, d_model)
    sim = positional.similarity(table, "dot")
    return table, sim, positional.by_offset_spread(sim)


@st.cache_data(show_spinner=False, max_entries=32)
def pos_shift_check(n_pos: int, d_model: int, k: int):
    """``engine.analysis.positional.shift_check``: PE(pos + k) against R_k · PE(pos)."""
    from engine.analysis import positional

    return positional.shift_check(n_pos, d_model, k)


#: positions the Learned tab compares (tiny-random-gpt2 has 16,384: their similarity would take 2 GB)
LEARNED_MAX_POSITIONS = 1024


@st.cache_data(show_spinner=False, max_entries=8)
def pos_learned_table(model_id: str):
    """A loaded model's position table (``PositionTable``) and the cosine similarity of its first 1024 rows."""
    from engine.analysis import positional

    table = positional.position_table(get_model(model_id))
    return table, positional.similarity(table.values[:LEARNED_MAX_POSITIONS], "cosine")


@st.cache_data(show_spinner=False, max_entries=32)
def pos_rope(d_head: int, offset: int, seed: int, n_pos: int, starts: tuple[int, ...]):
    """RoPE demo data: ``(q, k, rotated q [n_pos, d], rotated k [n_pos, d], thetas, relative scores)``."""
    import numpy as np

    from engine.analysis import positional

    q, k = positional.rope_example_vectors(d_head, seed)
    positions, rotate = np.arange(n_pos), positional.rope_rotate
    scores = positional.rope_relative_scores(q, k, offset, np.array(starts), base=10000.0)
    return q, k, rotate(q, positions), rotate(k, positions), positional.rope_thetas(d_head), scores


@st.cache_data(show_spinner=False, max_entries=32)
def pos_alibi(n_heads: int, n_pos: int):
    """ALiBi ``(slopes [H], bias [H, n, n])``."""
    from engine.analysis import positional

    return positional.alibi(n_heads, n_pos)


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def pos_order_blindness(text: str, seed: int, max_tokens: int):
    """``engine.analysis.order_blindness.order_blindness`` on fresh copies of tiny-gpt-stories."""
    from engine.analysis.order_blindness import order_blindness

    bound_threads()
    with model_pass():
        return order_blindness(text, seed=seed, max_tokens=max_tokens)
