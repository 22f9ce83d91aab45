"""Positional encodings: attention alone is blind to order; each family of encodings restores it. Five tabs
(sinusoidal, learned, RoPE, ALiBi, order blindness); only the open one runs, and each is a fragment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.controls.pickers import load_model, page_tabs, pick_index, pick_int, pick_model
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.sidebar import synced
from app.state import PERSIST, K, bounded, choose, current_text, default, settle
from app.ui.charts import show_chart
from app.ui.export import csv_button
from app.ui.guard import attempt, show_error
from app.ui.heatmap import attention_heatmap
from app.ui.safe_text import md
from app.ui.theme import side_by_side
from app.views.positional import data
from app.views.positional.figures import bias_grid, dimension_curves, matrix_heatmap, rope_pair_figure
from app.views.positional.keys import TABS, Positional
from engine.text import shorten

D_MODELS = [4, 8, 16, 32, 64, 128, 256, 512]
MAX_LEN = 512
D_HEADS = [4, 8, 16, 32, 64, 128]
ROPE_POSITIONS = 64
ROPE_STARTS = (0, 1, 5, 12, 20, 33, 40)
DEFAULT_STORY = "Lily found a red ball. She gave it to Tom. Tom was happy."
BLIND_MAX_TOKENS = 32
HALF_PX = 340  # a half-width column at a 1280 px window (sidebar open): the maps' labels are thinned for it


def download_table(table: np.ndarray, file_name: str, key: str, label: str = "Download the table as CSV") -> None:
    """A CSV button for a table of position vectors (one row per position)."""
    frame = pd.DataFrame(table, columns=[f"dim{d}" for d in range(table.shape[1])]).rename_axis("position")
    csv_button(label, frame, file_name, key, float_format="%.6f")


def position_map(z: np.ndarray, key: str, title: str, *, by_position: bool = False, **kwargs) -> None:
    """A table (positions × dimensions) or, ``by_position``, a similarity (positions × positions)."""
    x_title, y_title = ("position q", "position p") if by_position else ("dimension", "position")
    show_chart(matrix_heatmap(z, x_title=x_title, y_title=y_title, title=title, **kwargs), key=key)


def shift_check_view(n_pos: int, d_model: int) -> None:
    st.markdown(
        "**A shift is a rotation.** Moving every position by *k* applies one fixed 2×2 rotation to each "
        "(sin, cos) pair, by the angle *k·ωᵢ*, whatever the starting position:"
    )
    st.latex(
        r"\begin{pmatrix}\sin((p+k)\omega_i)\\ \cos((p+k)\omega_i)\end{pmatrix} = "
        r"\begin{pmatrix}\cos k\omega_i & \sin k\omega_i\\ -\sin k\omega_i & \cos k\omega_i\end{pmatrix}"
        r"\begin{pmatrix}\sin p\omega_i\\ \cos p\omega_i\end{pmatrix}"
    )
    k = pick_int(st.number_input, "Shift k", 1, n_pos - 1, Positional.sin_k, start=5)
    check = data.pos_shift_check(n_pos, d_model, k)
    left, right = st.columns(2)
    shown = sorted({0, 1, 7, 23, n_pos - k - 1} & set(range(n_pos - k)))
    errors = {"pos": shown, "pos + k": [p + k for p in shown]}
    errors["max |PE(pos+k) − R_k·PE(pos)|"] = [f"{check.errors[p]:.2e}" for p in shown]
    left.dataframe(pd.DataFrame(errors), hide_index=True, key=Positional.sin_shift_table)
    left.metric(f"Largest error over all {len(check.errors)} positions", f"{check.errors.max():.2e}")
    pairs = min(4, d_model // 2)
    angles = check.angles[:pairs]
    table = {"pair i": range(pairs), "ωᵢ": 1.0 / 10000 ** (2 * np.arange(pairs) / d_model), "angle k·ωᵢ (rad)": angles}
    table.update({"cos k·ωᵢ": np.cos(angles), "sin k·ωᵢ": np.sin(angles)})
    right.dataframe(pd.DataFrame(table), hide_index=True, key=Positional.sin_angles)
    st.caption(
        "Left: the same matrix R_k, built from k alone, maps PE(pos) to PE(pos + k) for every pos; the "
        "errors are float32 rounding. Right: the rotation angle of the first pairs. Fast pairs (small i) "
        "turn a lot, slow pairs barely move: together they tell near and far offsets apart. Because a "
        "shift is linear, a layer can learn to attend 'k tokens back' with one matrix."
    )


@st.fragment
def sinusoidal_section() -> None:
    """Formula, table heatmap, dimension curves, similarity matrix and the shift check."""
    st.latex(
        r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right),\qquad "
        r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right)"
    )
    left, right = st.columns(2)
    d_model = choose(Positional.sin_d, D_MODELS, 64)
    left.select_slider("d_model (width of each vector)", D_MODELS, key=Positional.sin_d, **PERSIST)
    n_pos = pick_int(right.slider, "Length (number of positions)", 2, MAX_LEN, Positional.sin_len, start=64)
    table, sim, spread = data.pos_sinusoidal(n_pos, d_model)
    left, right = side_by_side(2)
    with left:
        title = f"PE table: {n_pos} positions × {d_model} dimensions"
        position_map(table, Positional.sin_heatmap, title, value_name="PE")
        st.caption(
            "Each **row** is the vector added to the token at that position; each **column** a dimension. "
            "Left columns wave fast (high frequency), right columns slowly: like the hands of a clock, "
            "together they give every position a unique pattern."
        )
        download_table(table, f"sinusoidal_{n_pos}x{d_model}.csv", Positional.sin_csv)
    with right:
        position_map(sim, Positional.sin_sim, "Similarity PE(p)·PE(q)", by_position=True, value_name="PE(p)·PE(q)")
        st.caption(
            f"The dot product of two position vectors: Σᵢ cos((p − q)·ωᵢ). It is largest on the diagonal "
            f"(d/2 = {d_model // 2}) and depends only on the distance |p − q|: every diagonal is one value "
            f"(largest spread along a diagonal here: {spread:.1e})."
        )
    dims = pick_some(Positional.sin_dims, "Dimensions to plot", d_model, [0, 1, 6, 7])
    if dims:
        show_chart(dimension_curves(table, dims), key=Positional.sin_curves)
        st.caption(
            "A few columns of the table over position: each pair (2i, 2i+1) is a sine and a cosine of one "
            "frequency ωᵢ = 1/10000^(2i/d). Higher pairs have longer wavelengths (up to 2π·10000 positions)."
        )
    else:
        st.info("Pick at least one dimension to plot its curve.")
    shift_check_view(n_pos, d_model)


@st.fragment
@synced  # its model picker reruns this tab only: it writes the link itself
def learned_section() -> None:
    """A real model's learned position table and its cosine similarity, next to the sinusoidal one."""
    st.write(
        "Models like BERT and GPT-2 *learn* one vector per position instead. Pick a model (the one chosen on "
        "Explore is preselected); GPT-2 works by typing `gpt2` under *Another model* when it is downloaded."
    )
    model_id = pick_model()
    if load_model(model_id) is None:
        return
    try:
        table, cos_sim = data.pos_learned_table(model_id)
    except Exception as err:  # noqa: BLE001 — no learned table (rope, alibi) or a load that failed: a message
        show_error(err, level="info")
        return
    n_table, d_model = table.values.shape
    rows = min(n_table, cos_sim.shape[0])  # a long-context table is shown up to where its similarity is computed
    n = pick_int(st.slider, "Positions shown", 2, rows, Positional.learned_n, start=128)
    n_sentence = sentence_length(model_id)
    values = table.values[:n]
    title = f"{shorten(model_id)}: {table.source} ({n} of {n_table} positions × {d_model})"
    position_map(values, Positional.learned_heatmap, title, value_name="value", height=380)
    st.caption(
        "The learned table, one row per position, one column per dimension (colours clipped at the "
        "99.5th percentile of |value| so a few large entries do not wash out the rest)."
    )
    _table, dot, _spread = data.pos_sinusoidal(n, d_model + d_model % 2)
    norms = np.sqrt(np.diag(dot))
    cosine = dict(by_position=True, value_name="cosine", height=460, bound=1.0)
    left, right = side_by_side(2)
    with left:
        position_map(cos_sim[:n, :n], Positional.learned_sim, "Learned: cosine similarity", **cosine)
    with right:
        title = f"Sinusoidal (d={d_model + d_model % 2}): cosine"
        position_map(dot / np.outer(norms, norms), Positional.learned_vs_sin, title, **cosine)
    uses = f" Your sentence on Explore has {n_sentence} tokens: positions 0–{n_sentence - 1}." if n_sentence else ""
    st.caption(
        "Left: cosine similarity between every pair of learned position vectors; right: the same for sinusoidal "
        "vectors of the same width. Both are bright along the diagonal: neighbouring positions get similar vectors. "
        "Nothing forced the learned ones to do that: training discovered it." + uses
    )
    name = f"{model_id.replace('/', '_')}_positions.csv"
    download_table(values, name, Positional.learned_csv, "Download the learned table as CSV")


def sentence_length(model_id: str) -> int | None:
    """Token count of the shared sentence for this model (from the cached trace), or None."""
    try:
        limit = bounded(st.session_state.get(K.max_tokens), 4, 1024)
        return len(get_trace(TraceRequest(model_id, current_text(), None, limit)).tokens)
    except Exception:  # noqa: BLE001 — the count is a detail; the page works without it
        return None


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
    q, key_vec, q_rot, k_rot, thetas, scores = data.pos_rope(d_head, k, 0, ROPE_POSITIONS, starts)
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
    slopes, bias = data.pos_alibi(n_heads, n_pos)
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
    result = attempt(lambda: data.pos_order_blindness(text, seed, BLIND_MAX_TOKENS), "Running the two copies…")
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


SECTIONS = (sinusoidal_section, learned_section, rope_section, alibi_section, order_section)  # in TABS' order


def main() -> None:
    st.title("Positional encodings")
    st.write(
        "Attention compares every token with every other token, but nothing in that comparison says *where* a "
        "token is: shuffle the words and each one gets the same scores. Positional encodings put order back in. "
        "Each tab shows one family."
    )
    for tab, draw in zip(page_tabs(list(TABS.values()), key=Positional.tab), SECTIONS):
        with tab:
            if tab.open:  # only the open section runs
                draw()


main()
