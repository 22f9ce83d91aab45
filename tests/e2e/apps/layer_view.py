"""One layer view on a page of its own, fed softmax rows of a seeded random matrix (causal: the upper triangle
blocked), so a browser test can compare what it draws and hovers with numbers it computes itself
(tests/e2e/test_layer_view_e2e.py). ``?n=`` sets the tokens, ``?layers=`` how many layers are sent."""

import numpy as np
import streamlit as st

from app.state import K, Look
from app.ui.layer_view import LayerData, layer_view

HEADS = 4


def patterns(layers: int, heads: int, n: int) -> np.ndarray:
    scores = np.random.default_rng(0).normal(size=(layers, heads, n, n)).astype(np.float32) * 3
    scores[..., np.triu(np.ones((n, n), dtype=bool), 1)] = -np.inf
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.where(np.isfinite(scores), weights, np.nan).astype(np.float32)


def view() -> None:
    state = st.session_state
    n = int(st.query_params.get("n", 12))
    tokens = tuple(f"{i} tok{i}" for i in range(n))
    state["runs"] = state.get("runs", 0) + 1
    st.write(f"server runs: {state['runs']}")
    data = LayerData(patterns(1, HEADS, n), (0,), tokens, tokens)
    head, focus = state.setdefault(K.head, 1), state.setdefault(Look.focus, None)
    layer_view("view", data, 0, head, focus, suffix=" · causal mask on", caption="Rows ask, columns answer.")
    if st.button("Rerun"):
        state["presses"] = state.get("presses", 0) + 1
    st.write(f"server has head {state[K.head]}, focus {state[Look.focus]}, presses {state.get('presses', 0)}")
    st.page_link(OTHER, label="To the other page")


def other() -> None:
    st.write(f"the other page has head {st.session_state.get(K.head)}")


if __name__ == "__main__":  # streamlit run; the browser test imports patterns()
    OTHER = st.Page(other, title="other", url_path="other")
    st.navigation([st.Page(view, title="view", default=True), OTHER]).run()
