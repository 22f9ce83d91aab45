"""Explore: type a sentence, pick a model, layer and head, and see where each token looks."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import streamlit as st

from app import services
from app.components.heatmap import attention_heatmap, head_grid
from app.components.pickers import (
    causal_toggle,
    layer_head,
    show_notices,
    text_and_model,
)
from app.state import current_text

MAX_TOKENS_LIMIT = 1024


def pattern_csv(pattern: np.ndarray, q_tokens: list[str], k_tokens: list[str]) -> bytes:
    frame = pd.DataFrame(pattern, index=q_tokens, columns=k_tokens)
    buf = io.StringIO()
    frame.to_csv(buf, float_format="%.6f")
    return buf.getvalue().encode("utf-8")


def show_head(trace, layer: int, head: int) -> None:
    """The chosen head, large, with a download button."""
    labels = trace.tokens.labels()
    pattern = trace.pattern(layer, head)
    blocked = np.isneginf(trace.mask(layer))
    fig = attention_heatmap(pattern, labels, labels, blocked=blocked,
                            title=f"Layer {layer}, head {head}" + (" · causal mask on" if trace.causal else ""))
    st.plotly_chart(fig, key="main_heatmap")
    st.caption(
        "Each **row** is a token asking *where should I look?* (the query); each **column** a token it can look at "
        "(the key). Colour is the softmax weight: every row sums to 1. "
        + ("Grey cells are blocked by the causal mask: a token cannot look ahead." if trace.causal else
           "No mask: every token can look at every other token, ahead or behind.")
    )
    st.download_button("Download this head as CSV", pattern_csv(pattern, labels, labels),
                       file_name=f"attention_L{layer}_H{head}.csv", mime="text/csv", icon=":material/download:")


def show_mask_comparison(model_id: str, text: str, max_tokens: int, layer: int, head: int) -> None:
    """The same weights traced with the causal mask off and on, side by side."""
    left, right = st.columns(2)
    for col, causal in ((left, False), (right, True)):
        with col:
            tr = services.get_trace(model_id, text, causal, max_tokens)
            labels = tr.tokens.labels()
            fig = attention_heatmap(tr.pattern(layer, head), labels, labels, blocked=np.isneginf(tr.mask(layer)),
                                    title=("Causal mask ON" if causal else "Causal mask OFF"), height=420)
            st.plotly_chart(fig, key=f"mask_{causal}")
    st.caption(
        "The same model and weights run twice: left without a mask, right with the causal mask that GPT-style "
        "models use. Masking changes every later layer too, because each layer reads the one before."
    )


def show_grid(trace, layer: int, head: int) -> None:
    fig, pooled = head_grid(trace.pattern(layer), trace.tokens.strings, selected=head)
    st.plotly_chart(fig, key="head_grid")
    st.caption(
        f"All {trace.n_heads} heads of layer {layer} (the chosen head is marked ▶). Each thumbnail is coloured from 0 to "
        "its own maximum, so compare shapes, not shades. Heads in one layer often specialise: some look at the "
        "previous token, some at [CLS]/[SEP] or the first token, some spread out."
        + (" Long input: thumbnails show block maxima of the full pattern." if pooled else "")
    )


def main() -> None:
    st.title("Explore attention")
    st.write("Type a sentence and see, for every layer and head, how much each token attends to every other token.")

    model_id, max_tokens, model = text_and_model(MAX_TOKENS_LIMIT)
    if model is None:
        return
    text = current_text()

    controls = st.columns([1, 1, 2])
    with controls[2]:
        causal = causal_toggle(model_id, model.spec.family)
    try:
        with st.spinner("Running the model…"):
            trace = services.get_trace(model_id, text, causal, max_tokens)
    except Exception as err:  # noqa: BLE001
        st.warning(services.friendly_error(err))
        return

    layer, head = layer_head(trace.n_layers, trace.n_heads, columns=controls[:2])
    show_notices(trace)
    st.caption(
        f"**{len(trace.tokens)} tokens** · {trace.n_layers} layers × {trace.n_heads} heads · "
        f"d_head {trace.d_head} · running on {services.device_label()}"
        + (" · untrained weights: patterns are random" if "random" in model_id else "")
    )

    if trace.pos_encoding is not None:
        st.page_link("views/positional.py", label="See the positional encodings this model adds to this sentence",
                     icon=":material/timeline:", query_params={"pos_tab": "Learned"})
    show_head(trace, layer, head)
    st.subheader(f"Every head of layer {layer}")
    show_grid(trace, layer, head)
    st.subheader("Causal mask off vs on")
    show_mask_comparison(model_id, text, max_tokens, layer, head)


main()
