"""The Bahdanau page's "step through decoding": one output step's attention, number by number, from the engine's
``StepBreakdown`` (numpy from the model's weights and the captured states)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.figures import shared_build
from app.state import PERSIST, clamp
from app.ui.charts import show_chart
from app.ui.export import csv_button
from app.ui.safe_text import md
from app.views.bahdanau.data import bahdanau_step
from app.views.bahdanau.figures import context_figure, energies_and_weights, state_strip, table
from app.views.bahdanau.keys import Bahdanau

FORMULAS = {
    "additive": r"e(i,j) = v^\top \tanh\big(W\,s_{i-1} + U\,h_j\big),\quad "
    r"\alpha_{ij} = \frac{\exp e(i,j)}{\sum_k \exp e(i,k)},\quad c_i = \sum_j \alpha_{ij}\, h_j",
    "dot": r"e(i,j) = s_{i-1}^\top\, W_h\, h_j,\quad "
    r"\alpha_{ij} = \frac{\exp e(i,j)}{\sum_k \exp e(i,k)},\quad c_i = \sum_j \alpha_{ij}\, h_j",
}


def pick_step(target: tuple[str, ...]) -> int:
    """A slider over the output steps (labelled with the word each one writes); returns the row index."""
    n = len(target)
    clamp(Bahdanau.step, 0, n - 1)
    if n == 1:
        st.caption(f"One decoding step: it writes **{md(target[0])}**.")
        return 0
    help = "Each step writes one word; before writing, the decoder looks back at every source word."
    names = [f"{i + 1}: {word}" for i, word in enumerate(target)]
    label = "Decoding step i (the word it writes)"
    return int(
        st.select_slider(label, range(n), key=Bahdanau.step, format_func=names.__getitem__, help=help, **PERSIST)
    )


def show_pieces(b, rows: list[str]) -> None:
    """The step's scores as a table per source word, how they are made, and each piece of the score in an expander."""
    dim, n = len(b.query), len(rows)
    additive = b.variant == "additive"
    if additive:
        score, key, query = "vᵀ tanh(W s + U h(j))", "U h(j)", "W s(i−1)"
        titles = ("W s(i−1): the query part", "U h(j): the key part", "tanh(W s(i−1) + U h(j)): the sum after tanh")
        how = (
            f"Each row is one source word j. The decoder state is turned into a query **W s(i−1)** ({dim} numbers), "
            f"each encoder state into a key **U h(j)** ({dim} numbers); they are **added**, squashed by **tanh**, "
            "and the vector **v** scores the result (a dot product): that number is the energy e(i, j). Softmax "
            "over the row turns energies into weights α that sum to 1."
        )
    else:
        score, key, query = "s(i−1) · W_h h(j)", "W_h h(j)", "s(i−1)"
        titles = (
            "s(i−1): the decoder state",
            "W_h h(j): the keys",
            "s(i−1) ⊙ W_h h(j): the products; each row sums to e(i, j)",
        )
        how = (
            f"Luong's “general” score: each encoder state is mapped by **W_h** to {dim} numbers and multiplied "
            "component by component with the decoder state s(i−1); the sum of those products is the energy. No "
            "tanh, no v: a large energy means the two vectors point the same way."
        )
    pieces = [
        (f"{titles[0]} ({dim} numbers)", b.query, [query]),
        (f"{titles[1]}, one row per source word ({n} × {dim})", b.keys, rows),
        (f"{titles[2]} ({n} × {dim})", b.hidden, rows),
    ]
    if additive:
        pieces.append((f"v: the scoring vector ({dim} numbers); e(i, j) = v · row j of the table above", b.v, ["v"]))
    summary = {
        "source word": list(b.source),
        f"{score} = e(i, j)": np.round(b.energies, 4),
        "α(i, j)": np.round(b.alignment, 4),
        f"|{key}| (length)": np.round(np.linalg.norm(b.keys, axis=1), 4),
    }
    st.dataframe(pd.DataFrame(summary, index=rows), width="stretch", key=Bahdanau.step_table)
    st.caption(how)
    for title, values, names in pieces:
        with st.expander(title):
            st.dataframe(table(values, names, "k"), width="stretch")


def show_step(model_id: str, text: str, target: tuple[str, ...]) -> None:
    """The step picker and every number of the chosen step."""
    step = pick_step(target)
    b = bahdanau_step(model_id, text, step)
    rows = [f"{j} {w}" for j, w in enumerate(b.source)]
    st.latex(FORMULAS[b.variant])
    left, right = st.columns([1, 2])
    with left:
        help = "The word with the highest probability (greedy decoding)."
        st.metric(f"Step {step + 1} writes", b.target_word, help=help)
        st.caption(
            f"with probability **{b.probability:.3f}**; it attends most to **{md(b.source[int(np.argmax(b.alignment))])}** "
            f"(α = {b.alignment.max():.3f})."
        )
    with right:
        title = f"Decoder state s(i−1) read by step {step + 1} ({len(b.s_prev)} numbers)"
        show_chart(shared_build(state_strip, b.s_prev, title=title), key=Bahdanau.state)
        st.caption(
            "The decoder's memory of what it has written so far (blue positive, red negative). "
            "Step 1 reads s(0), made from the backward encoder's summary of the whole sentence."
        )
    title = f"Step {step + 1}: how much “{b.target_word}” looks at each source word"
    fig = shared_build(energies_and_weights, b.energies, b.alignment, list(b.source), title=title)
    show_chart(fig, key=Bahdanau.energies)
    st.caption(
        "Left: the raw energies (any real number). Right: after the softmax, the weights (0 to 1, summing to 1); "
        "this is row i of the alignment map above."
    )
    show_pieces(b, rows)
    fig = shared_build(context_figure, b.encoder_states, b.alignment, b.context, list(b.source))
    show_chart(fig, key=Bahdanau.context)
    st.caption(
        f"The context vector c(i) ({len(b.context)} numbers, last row) is the weighted sum of the encoder states "
        "h(j) above it, with the weights α(i, j) shown in each row's label: when one word gets almost all the "
        "weight, c(i) is almost a copy of its h(j). The decoder reads c(i) together with the previous word to write "
        f"“{md(b.target_word)}”."
    )
    frame = pd.DataFrame({"source": list(b.source), "energy": b.energies, "alpha": b.alignment}, index=rows)
    name = f"bahdanau_step{step + 1}.csv"
    csv_button("Download this step (energies, weights) as CSV", frame, name, Bahdanau.step_csv, float_format="%.6f")
