"""The Step-by-step calculator: type a tiny Q, K and V and watch every step of attention update
(scores = Q Kᵀ → × scale → + mask → softmax → weights · V). The typed tables are checked on the server
(``engine.analysis.stepwise.to_matrix``): a bad cell or size gives a message, not a traceback.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from app.state import PERSIST, clamp, settle
from app.ui.guard import show_error
from app.views.step_by_step.keys import Step
from app.views.step_by_step.tables import frame_table, rounded, text_column
from engine import EngineError
from engine.analysis.stepwise import attention_steps, calculator_example, to_matrix

SCALE_MAX = 3.0


def editor_key(name: str, n: int, d: int) -> str:
    """Key of one typed table; it changes with the size, so a new size starts from the example."""
    return f"{Step.calc}{name.lower()}_{n}x{d}"


def scale_key(d: int) -> str:
    """Key of the scale slider; one per width so its default follows 1/√d_k."""
    return f"{Step.calc_scale}{d}"


def _scale(value, d: int) -> float:
    """The slider's value, checked server-side: finite and inside [0, SCALE_MAX], else 1/√d."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    return min(max(number, 0.0), SCALE_MAX) if math.isfinite(number) else 1 / math.sqrt(d)


def _editors(tokens: tuple[str, ...], examples: dict[str, np.ndarray], n: int, d: int) -> dict[str, object]:
    columns = [f"x{j + 1}" for j in range(d)]
    config = {c: st.column_config.NumberColumn(c, required=True) for c in columns}
    edited: dict[str, object] = {}
    for col, (name, matrix) in zip(st.columns(3), examples.items()):
        with col:
            st.markdown(f"**{name}**")
            frame = pd.DataFrame(matrix, index=list(tokens), columns=columns)
            edited[name] = st.data_editor(
                frame,
                key=editor_key(name, n, d),
                num_rows="fixed",
                column_config=config,
                alt=f"{name}: one row per token, {d} numbers each",
            )
    return edited


def calculator() -> None:
    st.header("Calculator: try your own numbers")
    st.write("Type a tiny Q, K and V (click a cell, type, Enter; arrow keys move) and watch each step change.")
    size = st.columns(4)
    n = clamp(Step.calc_tokens, 3, 5)  # server-side bounds (and the defaults: 3 tokens, width 2)
    d = clamp(Step.calc_width, 2, 4)
    size[0].number_input("Tokens", min_value=3, max_value=5, step=1, key=Step.calc_tokens, **PERSIST)
    size[1].number_input("Vector width d_k", min_value=2, max_value=4, step=1, key=Step.calc_width, **PERSIST)
    settle(scale_key(d), _scale(st.session_state.get(scale_key(d), 1 / math.sqrt(d)), d))
    with size[2]:
        st.slider(
            "Scale (like 1 / temperature)",
            min_value=0.0,
            max_value=SCALE_MAX,
            step=0.01,
            key=scale_key(d),
            **PERSIST,
            help=f"Multiplies QKᵀ. Default 1/√d_k = {1 / math.sqrt(d):.4f}. Higher = sharper weights "
            "(low temperature); 0 = every key the same weight (infinite temperature).",
        )
    help_causal = "Each token may look only at itself and earlier tokens."
    causal = bool(size[3].toggle("Causal mask (M)", value=False, key=Step.calc_causal, **PERSIST, help=help_causal))
    scale = _scale(st.session_state.get(scale_key(d)), d)

    tokens, q0, k0, v0 = calculator_example(n, d)
    edited = _editors(tokens, {"Q": q0, "K": k0, "V": v0}, n, d)
    try:
        q, k, v = (to_matrix(edited[name], name, (n, d)) for name in ("Q", "K", "V"))
    except EngineError as err:
        show_error(f"{err} The steps update once every cell holds a number.", level="error")
        return
    steps = attention_steps(q, k, v, scale, causal)
    show_calculator_steps(steps, list(tokens), scale, d, causal)


def show_calculator_steps(steps, tokens: list[str], scale: float, d: int, causal: bool) -> None:
    """The five steps as small tables, each with its formula and a caption."""
    temperature = "∞" if scale == 0 else f"{1 / scale:.3g}"
    first, second, third = st.columns(3)
    with first:
        st.markdown("**① Scores** $QK^\\top$")
        st.dataframe(frame_table(rounded(steps.raw), tokens, tokens), key=Step.calc_raw)
        st.caption("Row i, column j: q(i)·k(j), how well token j's key matches token i's query.")
    with second:
        st.markdown(f"**② Scaled** $QK^\\top \\times {scale:.4g}$")
        st.dataframe(frame_table(rounded(steps.scaled), tokens, tokens), key=Step.calc_scaled)
        st.caption(
            f"Times the scale {scale:.4g} (temperature {temperature}; 1/√{d} = {1 / math.sqrt(d):.4f} is "
            "the usual choice). Bigger scale, bigger gaps, sharper softmax."
        )
    with third:
        st.markdown("**③ Masked** $+\\,M$")
        st.dataframe(frame_table([text_column(row) for row in steps.masked], tokens, tokens), key=Step.calc_masked)
        st.caption(
            "The causal mask puts −∞ above the diagonal: no looking ahead."
            if causal
            else "Mask off: M is all zeros. Switch on the causal mask to see −∞ above the diagonal."
        )
    fourth, fifth = st.columns([3, 2])
    with fourth:
        st.markdown("**④ Weights** $\\mathrm{softmax}$ of each row")
        st.dataframe(frame_table(rounded(steps.weights), tokens, tokens), key=Step.calc_weights)
        st.caption("Each row: e^score divided by the row's total, so the row sums to 1; −∞ gives exactly 0.")
    with fifth:
        st.markdown("**⑤ Output** $Z = W V$")
        columns = [f"z{j + 1}" for j in range(steps.z.shape[1])]
        st.dataframe(frame_table(rounded(steps.z), tokens, columns), key=Step.calc_z)
        st.caption("Each token's output is its row of weights times V: a weighted average of the value rows.")
