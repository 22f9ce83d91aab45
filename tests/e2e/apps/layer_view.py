"""One layer view on a page of its own, fed softmax rows of a seeded random matrix (causal: the upper triangle
blocked), so a browser test can compare what it draws and hovers with numbers it computes itself
(tests/e2e/test_layer_view_e2e.py). ``?n=`` sets the tokens, ``?layers=`` how many layers are sent."""

import numpy as np
import streamlit as st

from app.ui.layer_view import LayerData, layer_view

HEADS = 4


def patterns(layers: int, heads: int, n: int) -> np.ndarray:
    scores = np.random.default_rng(0).normal(size=(layers, heads, n, n)).astype(np.float32) * 3
    scores[..., np.triu(np.ones((n, n), dtype=bool), 1)] = -np.inf
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.where(np.isfinite(scores), weights, np.nan).astype(np.float32)


def main() -> None:
    n = int(st.query_params.get("n", 12))
    layers = int(st.query_params.get("layers", 1))
    tokens = tuple(f"{i} tok{i}" for i in range(n))
    st.session_state["runs"] = st.session_state.get("runs", 0) + 1
    st.write(f"server runs: {st.session_state['runs']}")
    data = LayerData(patterns(layers, HEADS, n), tuple(range(layers)), tokens, tokens)
    layer_view("view", data, 0, 1, None, suffix=" · causal mask on", caption="Rows ask, columns answer.")
    st.button("Rerun")


if __name__ == "__main__":  # streamlit run; the browser test imports patterns()
    main()
