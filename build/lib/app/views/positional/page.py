"""Positional encodings: attention alone is blind to order; each family of encodings restores it. Five tabs
(sinusoidal, learned, RoPE, ALiBi, order blindness); only the open one runs, and each is a fragment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.controls.pickers import load_model, page_tabs, pick_int, pick_model
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.sidebar import synced
from app.state import PERSIST, K, bounded, choose, current_text
from app.ui.charts import show_chart
from app.ui.export import csv_button
from app.ui.guard import show_error
from app.ui.theme import side_by_side
from app.views.positional.data import pos_learned_table, pos_shift_check, pos_sinusoidal
from app.views.positional.figures import dimension_curves, matrix_heatmap
from app.views.positional.keys import TABS, Positional
from app.views.positional.sections import alibi_section, order_section, pick_some, rope_section
from engine.text import shorten

D_MODELS = [4, 8, 16, 32, 64, 128, 256, 512]
MAX_LEN = 512


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
    check = pos_shift_check(n_pos, d_model, k)
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
    table, sim, spread = pos_sinusoidal(n_pos, d_model)
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
        table, cos_sim = pos_learned_table(model_id)
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
    _table, dot, _spread = pos_sinusoidal(n, d_model + d_model % 2)
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
    text = current_text()
    try:
        trace = get_trace(TraceRequest(model_id, text, None, bounded(st.session_state.get(K.max_tokens), 4, 1024)))
    except Exception:  # noqa: BLE001 — the count is a detail; the page works without it
        return None
    return len(trace.tokens)


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
