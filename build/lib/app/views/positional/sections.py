"""The positional-encodings page's tabs that add no vectors: RoPE, ALiBi, order blindness (each an ``st.fragment``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.controls.pickers import pick_index, pick_int
from app.state import PERSIST, choose, default, settle
from app.ui.charts import show_chart
from app.ui.guard import attempt
from app.ui.heatmap import attention_heatmap
from app.ui.safe_text import md
from app.ui.theme import side_by_side
from app.views.positional.data import pos_alibi, pos_order_blindness, pos_rope
from app.views.positional.figures import bias_grid, rope_pair_figure
from app.views.positional.keys import Positional

D_HEADS = [4, 8, 16, 32, 64, 128]
ROPE_POSITIONS = 64
ROPE_STARTS = (0, 1, 5, 12, 20, 33, 40)
DEFAULT_STORY = "Lily found a red ball. She gave it to Tom. Tom was happy."
BLIND_MAX_TOKENS = 32
HALF_PX = 340  # a half-width column at a 1280 px window (sidebar open): the maps' labels are thinned for it


def pick_some(key: str, label: str, n: int, start: list[int]) -> list[int]:
    """A multiselect of up to 8 of 0 … n − 1 (dimensions, heads); a choice left with none that fit gets the
    ``start`` values that do."""
    kept = [i for i in st.session_state.get(key, start) if isinstance(i, int) and 0 <= i < n]
    settle(key, kept or [i for i in start if i < n] or [0])
    st.multiselect(label, list(range(n)), key=key, max_selections=8, **PERSIST)
    return sorted(i for i in st.session_state[key] if 0 <= i < n)


@st.fragment
def rope_section() -> None:
    """A (q, k) coordinate pair turning with position, and scores that depend on the offset only."""
    st.write(
        "RoPE adds nothing to the embeddings. It **rotates** each query and key: coordinate pair *i* of a "
        "vector at position *m* turns by the angle *m·θᵢ*, θᵢ = 10000^(−2i/d_head)."
    )
    st.latex(
        r"q'_m \cdot k'_n = \sum_i \left|q^{(i)}\right| \left|k^{(i)}\right| "
        r"\cos\!\big(\varphi_i + (m - n)\,\theta_i\big)"
    )
    cols = st.columns(4)
    d_head = choose(Positional.rope_d, D_HEADS, 16)
    cols[0].select_slider("d_head", D_HEADS, key=Positional.rope_d, **PERSIST)
    pair = pick_int(cols[1].slider, "Pair i (frequency)", 0, d_head // 2 - 1, Positional.rope_pair)
    last = ROPE_POSITIONS - 1
    m = pick_int(cols[2].slider, "Query position m", 0, last, Positional.rope_m, start=3)
    n = pick_int(cols[3].slider, "Key position n", 0, last, Positional.rope_n, start=1)
    k = pick_int(st.number_input, "Offset k for the table (key at p + k)", -20, 20, Positional.rope_k, start=2)
    starts = tuple(p for p in ROPE_STARTS if p + k >= 0)
    q, key_vec, q_rot, k_rot, thetas, scores = pos_rope(d_head, k, 0, ROPE_POSITIONS, starts)
    left, right = st.columns([3, 2])
    with left:
        sl = slice(2 * pair, 2 * pair + 2)
        show_chart(rope_pair_figure(q_rot[:, sl], k_rot[:, sl], m, n, pair=pair), key=Positional.rope_pair_fig)
        angle = (m - n) * thetas[pair]
        st.caption(
            f"Pair {pair} of a random query (red) and key (blue) as RoPE rotates them: faint dots are the "
            f"vector at positions 0–{ROPE_POSITIONS - 1}, arrows at m = {m} and n = {n}. This pair turns "
            f"θ = {thetas[pair]:.4g} rad per position; moving both positions by the same amount turns both "
            f"arrows together, so the angle between them (and their dot product) changes only with m − n = "
            f"{m - n} (extra turn {angle:.3f} rad)."
        )
    with right:
        table = {"query position p": starts, "key position p + k": [p + k for p in starts], "score q′·k′": scores}
        st.dataframe(pd.DataFrame(table), hide_index=True, key=Positional.rope_table)
        unrotated = float(np.dot(q.astype(np.float64), key_vec.astype(np.float64)))
        st.metric("Spread of the scores (max − min)", f"{float(np.ptp(scores)):.1e}")
        st.caption(
            f"The same q and k placed at (p, p + {k}) for several p: every row gives the same score, so the "
            f"score sees the offset k, not the absolute position. Without rotation q·k = {unrotated:.4f} "
            "at every pair of positions; change k to see the score change."
        )


@st.fragment
def alibi_section() -> None:
    """Per-head linear bias matrices and the list of slopes."""
    st.write(
        "ALiBi adds no vectors and rotates nothing: it subtracts a penalty proportional to the distance "
        "from every attention score, with a different slope per head."
    )
    st.latex(
        r"\text{score}_h(i, j) = \frac{q_i \cdot k_j}{\sqrt{d}} - m_h\,|i - j|,\qquad "
        r"m_h = 2^{-8h/H}\ \ (h = 1 \dots H,\ H \text{ a power of 2})"
    )
    cols = st.columns([1, 1, 2, 1])
    n_heads = pick_int(cols[0].slider, "Heads H", 1, 16, Positional.alibi_heads, start=8)
    n_pos = pick_int(cols[1].slider, "Length", 2, 48, Positional.alibi_len, start=12)
    with cols[2]:
        heads = pick_some(Positional.alibi_show, "Heads to draw", n_heads, [0, 3, 7])
    default(Positional.alibi_causal, True)
    help = "On, as in the paper: a token only sees earlier tokens."
    causal = bool(cols[3].toggle("Causal mask", key=Positional.alibi_causal, **PERSIST, help=help))
    slopes, bias = pos_alibi(n_heads, n_pos)
    left, right = st.columns([5, 2])
    with left:
        if heads:
            show_chart(bias_grid(bias, heads, slopes, causal=causal), key=Positional.alibi_grid)
            st.caption(
                "Each matrix is what one head adds to its scores before the softmax: 0 on the diagonal, "
                "more negative the farther the key is from the query. A steep head (large slope) looks "
                "almost only at nearby tokens; a gentle one can reach far. "
                + ("Grey: blocked by the causal mask." if causal else "")
            )
        else:
            st.info("Pick at least one head to draw.")
    with right:
        table = {"head": range(n_heads), "slope m_h": slopes, "log₂ slope": np.round(np.log2(slopes), 3)}
        st.dataframe(pd.DataFrame(table), hide_index=True, key=Positional.alibi_slopes)
        st.caption(
            "The slopes: a geometric sequence from 2^(−8/H). For H not a power of 2, the paper takes the "
            "slopes of the nearest smaller power of 2 and fills up with every other slope of the next one."
        )


@st.fragment
def order_section() -> None:
    """Shuffle the tokens: without positions the pattern is the same matrix, permuted."""
    st.write(
        "We copy the weights of our own decoder **tiny-gpt-stories** into two fresh models (the shared "
        "model is never changed): one with its learned positions, one with **no** positional encoding. "
        "Then we shuffle the words and compare the attention patterns."
    )
    default(Positional.blind_text, DEFAULT_STORY)
    st.text_input("Sentence (story words work best)", key=Positional.blind_text, max_chars=2000, **PERSIST)
    cols = st.columns(4)
    seed = pick_int(cols[0].number_input, "Shuffle number", 0, 9999, Positional.blind_seed, start=1)
    text = st.session_state.get(Positional.blind_text) or ""
    result = attempt(lambda: pos_order_blindness(text, seed, BLIND_MAX_TOKENS), "Running the two copies…")
    if result is None:
        return
    for notice in result.notices:
        st.info(md(notice))
    n_layers, n_heads = result.runs[0].original.shape[:2]
    with cols[1]:
        layer = pick_index("Layer", n_layers, Positional.blind_layer)
    with cols[2]:
        head = pick_index("Head", n_heads, Positional.blind_head)
    names = [run.name for run in result.runs]
    name = cols[3].selectbox("Model copy", names, key=Positional.blind_setting, **PERSIST)
    run = result.runs[names.index(name) if name in names else 0]
    perm = result.perm
    permuted = run.permuted(perm)[layer, head]
    labels = [f"{i} {t}" for i, t in enumerate(result.tokens)]
    shuffled_labels = [f"{i} {t}" for i, t in enumerate(result.shuffled_tokens)]
    top = float(max(np.nanmax(run.original[layer, head]), np.nanmax(run.shuffled[layer, head]))) or 1.0
    # two rows of two (three in a row were ~80 px wide each, their labels on top of each other); one scale
    first, note = side_by_side(2)
    with note:
        st.caption(
            f"Layer {layer}, head {head} of the copy with **{run.name}**. Above left: attention on the "
            "sentence as typed. Below: the model run on the shuffled words (left), and the matrix above "
            "with its rows and columns put in the shuffled order (right). When the two below are equal, "
            "the model could not see the order: it only saw *which* words were there. All three share one "
            "colour scale."
        )
    maps = (  # one colour bar for the pair below (same scale): the left map gets its width back
        (run.original[layer, head], labels, "P (original order)", Positional.blind_orig, True),
        (run.shuffled[layer, head], shuffled_labels, "P shuffled (model run)", Positional.blind_shuf, False),
        (permuted, shuffled_labels, "Π P Πᵀ (P reordered)", Positional.blind_perm, True),
    )
    for col, (matrix, ticks, title, key, bar) in zip((first, *side_by_side(2)), maps):
        with col:
            fig = attention_heatmap(
                matrix, ticks, ticks, title=title, height=440, zmax=top, width=HALF_PX, showscale=bar
            )
            show_chart(fig, key=key)
    errors = {
        "model copy": names,
        "position vectors": ["on" if r.positions else "off" for r in result.runs],
        "causal mask": ["on" if r.causal else "off" for r in result.runs],
        "max |P_shuffled − Π P Πᵀ| (all layers, heads)": [f"{r.error:.2e}" for r in result.runs],
        f"this head (L{layer} H{head})": [f"{r.errors_by_head(perm)[layer, head]:.2e}" for r in result.runs],
    }
    st.dataframe(pd.DataFrame(errors), hide_index=True, key=Positional.blind_errors)
    st.caption(
        "With no positions and no mask the difference is float rounding (≈1e-6): attention is blind to "
        "order. With learned positions it is large: the same word at another position gets another "
        "vector. The causal mask must be off for the demo: a mask lets token i see only tokens before it, "
        "and *which* tokens those are depends on the order, so the mask alone already breaks the symmetry "
        "(last row)."
    )
