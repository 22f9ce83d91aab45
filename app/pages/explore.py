"""Explore: type a sentence, pick a model, layer and head, and see where each token looks."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import streamlit as st

from app import services
from app.components.heatmap import attention_heatmap, head_grid
from app.state import PERSIST, SHARE, K, bounded, clamp

MAX_TOKENS_LIMIT = 1024
TEXT_FAMILIES = {"encoder", "decoder"}  # translators, ViTs and RNNs have pages of their own


def pick_model() -> str:
    """The model picker (offline models first) and a field for any Hub id or local folder."""
    specs = [s for s in services.list_models() if s.family in TEXT_FAMILIES]
    by_id = {s.id: s for s in specs}
    if st.session_state.get(K.model) not in by_id:
        st.session_state[K.model] = specs[0].id

    def label(model_id: str) -> str:
        spec = by_id[model_id]
        return spec.label if spec.offline else f"{spec.label} — needs internet"

    st.selectbox("Model", list(by_id), format_func=label, key=K.model, **SHARE,
                 help="Offline models work anywhere; Hub models download the first time (internet needed).")
    with st.expander("Another model (Hugging Face id or folder)", expanded=bool(st.session_state.get(K.hub_id))):
        st.text_input(
            "Hub id or local folder",
            key=K.hub_id,
            placeholder="e.g. gpt2, bert-base-uncased, /path/to/saved_model",
            help="BERT-family (BERT, RoBERTa, DistilBERT, ELECTRA) and GPT-2-family models. Leave empty to use the picker.",
            **PERSIST,
        )
    custom = (st.session_state.get(K.hub_id) or "").strip()
    return custom or st.session_state[K.model]


def load_model(model_id: str):
    """Load (once per server) with a spinner; None and an error message if it cannot be loaded."""
    with st.spinner(f"Loading **{model_id}** (the first load takes a few seconds)…"):
        try:
            return services.get_model(model_id)
        except Exception as err:  # noqa: BLE001 — every failure becomes a message
            st.error(f"Could not load **{model_id}**: {services.friendly_error(err)}")
            return None


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

    top_left, top_right = st.columns([3, 2])
    with top_left:
        st.text_area("Your text", key=K.text, height=90, max_chars=20_000, **SHARE,
                     help="Any text; long input is cut at the token limit (see Advanced).")
    with top_right:
        model_id = pick_model()
        with st.expander("Advanced"):
            st.number_input("Token limit", min_value=4, max_value=MAX_TOKENS_LIMIT, step=16, key=K.max_tokens,
                            help="Longer input is truncated; the page says when.", **PERSIST)

    model = load_model(model_id)
    if model is None:
        return
    default_causal = model.spec.family == "decoder"
    if st.session_state.get("_causal_for") != model_id:
        st.session_state[K.causal] = default_causal
        st.session_state["_causal_for"] = model_id
    text = st.session_state.get(K.text) or ""
    max_tokens = bounded(st.session_state.get(K.max_tokens), 4, MAX_TOKENS_LIMIT)

    controls = st.columns([1, 1, 2])
    with controls[2]:
        causal = st.toggle("Causal mask", key=K.causal, **PERSIST,
                           help="On: each token sees only itself and earlier tokens (as in GPT). "
                                "Off: every token sees the whole sentence (as in BERT). Same weights either way.")
    try:
        with st.spinner("Running the model…"):
            trace = services.get_trace(model_id, text, causal, max_tokens)
    except Exception as err:  # noqa: BLE001
        st.warning(services.friendly_error(err))
        return

    with controls[0]:
        clamp(K.layer, 0, trace.n_layers - 1)
        layer = st.selectbox("Layer", range(trace.n_layers), key=K.layer, **SHARE)
    with controls[1]:
        clamp(K.head, 0, trace.n_heads - 1)
        head = st.selectbox("Head", range(trace.n_heads), key=K.head, **SHARE)

    for notice in trace.notices:
        if trace.truncated:
            st.warning(notice)
        else:
            st.info(notice)
    st.caption(
        f"**{len(trace.tokens)} tokens** · {trace.n_layers} layers × {trace.n_heads} heads · "
        f"d_head {trace.d_head} · running on {services.device_label()}"
        + (" · untrained weights: patterns are random" if "random" in model_id else "")
    )

    show_head(trace, layer, head)
    st.subheader(f"Every head of layer {layer}")
    show_grid(trace, layer, head)
    st.subheader("Causal mask off vs on")
    show_mask_comparison(model_id, text, max_tokens, layer, head)


main()
