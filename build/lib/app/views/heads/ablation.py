"""Head ablation panel: switch off chosen heads and see what changes in the model's output.

A head is switched off by setting its output ``z_h`` to zero just before the layer mixes its heads with the output
projection (``engine.analysis.ablation``). What is compared depends on the model: the next-token probabilities
(decoders), the sentence embedding's direction (encoders) or the greedy translation (the translator).
"""

from __future__ import annotations

import math
import re

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.runtime.heads import get_ablation
from app.runtime.request import TraceRequest
from app.state import PERSIST, bounded, choose
from app.ui.charts import show_chart
from app.ui.guard import attempt
from app.ui.heatmap import safe_label
from app.ui.safe_text import md
from app.views.explore.keys import Explore
from engine.families import text_families

MAX_LAYERS, MAX_HEADS = 128, 128  # server-side bounds on what the page passes in

BLOCKS = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder self-attention (causal)",
    "cross": "Cross-attention (decoder looks at the source)",
}
ABLATION_NOTE = (
    "**Ablation** switches a head off by setting its output to zero just before the layer combines its "
    "heads; every other head, layer and weight of the network stays exactly as it was."
)
BEFORE, AFTER = "All heads on", "Chosen heads off"
_LABEL = re.compile(r"^L(\d+) H(\d+)$")


def head_label(layer: int, head: int) -> str:
    """``"L0 H3"``: how a head is named in the picker."""
    return f"L{layer} H{head}"


def parse_head_label(label: str) -> tuple[int, int] | None:
    """``"L0 H3"`` → ``(0, 3)``; None for anything else."""
    match = _LABEL.match(str(label))
    return (int(match.group(1)), int(match.group(2))) if match else None


def _keep_valid(key: str, options: list[str]) -> None:
    """Drop remembered choices that this model does not have (e.g. after switching to a smaller model)."""
    value = st.session_state.get(key)
    if value is not None:
        valid = [v for v in value if v in options] if isinstance(value, (list, tuple)) else []
        if list(valid) != list(value):
            st.session_state[key] = valid


def _pick_heads(n_layers: int, n_heads: int, family: str) -> tuple[tuple[tuple[str, int, int | None], ...], bool]:
    """The selection widgets: the sorted ``(block, layer, head|None)`` tuple and the keep-only flag."""
    block = "self"
    if family == "encoder-decoder":
        choose(Explore.ablation_block, BLOCKS, "cross")
        block = (
            st.segmented_control(
                "Attention block",
                list(BLOCKS),
                format_func=BLOCKS.get,
                key=Explore.ablation_block,
                help="The translator has three kinds of attention; pick whose heads to switch off.",
                **PERSIST,
            )
            or "cross"
        )
    head_options = [head_label(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    layer_options = [f"Layer {layer}" for layer in range(n_layers)]
    _keep_valid(Explore.ablation_heads, head_options)
    _keep_valid(Explore.ablation_layers, layer_options)
    left, right = st.columns([3, 2])
    with left:
        picked = st.multiselect(
            "Heads to switch off",
            head_options,
            key=Explore.ablation_heads,
            placeholder="e.g. L0 H3",
            help="L = layer, H = head, counted from 0.",
            **PERSIST,
        )
    with right:
        layers = st.multiselect(
            "Whole layers off",
            layer_options,
            key=Explore.ablation_layers,
            placeholder="none",
            help="Switch off every head of these layers at once.",
            **PERSIST,
        )
    keep_only = st.toggle(
        "Keep only these heads (switch off all the others)",
        key=Explore.ablation_keep,
        **PERSIST,
        help="Turns the selection around: what can the chosen heads do on their own?",
    )
    chosen = {(block, *parsed) for parsed in map(parse_head_label, picked) if parsed is not None}
    chosen |= {(block, int(str(label).rsplit(" ", 1)[-1]), None) for label in layers}
    ordered = sorted(chosen, key=lambda r: (r[1], -1 if r[2] is None else r[2]))
    return tuple(ordered), bool(keep_only)


def _unique(labels: list[str], ids: tuple[int, ...]) -> list[str]:
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    return [f"{label} (id {i})" if seen[label] > 1 else label for label, i in zip(labels, ids)]


def next_token_figure(result) -> go.Figure:
    """Grouped bars: the most likely next tokens, probability before vs after."""
    labels = _unique([safe_label(t) for t in result.top_tokens], result.top_ids)
    fig = go.Figure()
    for name, values, colour in ((BEFORE, result.top_before, "#1f77b4"), (AFTER, result.top_after, "#ff7f0e")):
        fig.add_trace(
            go.Bar(
                name=name,
                x=labels,
                y=list(values),
                marker_color=colour,
                hovertemplate="next token %{x}<br>" + name + ": %{y:.4f}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        height=380,
        margin=dict(l=10, r=10, t=40, b=10),
        title="Next-token probabilities at the last position",
        yaxis_title="probability",
        xaxis_title="next token",
        legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"),
    )
    return fig


def top_change(result) -> str:
    """``"she → ."``: the most likely next token before and after."""
    if not result.top_tokens:
        return "–"
    best = [result.top_tokens[max(range(len(v)), key=v.__getitem__)] for v in (result.top_before, result.top_after)]
    return best[0] if best[0] == best[1] else f"{best[0]} → {best[1]}"


def _csv(result) -> bytes:
    frame = pd.DataFrame(
        {"token": result.top_tokens, "id": result.top_ids, "p_before": result.top_before, "p_after": result.top_after}
    )
    return frame.to_csv(index=False, float_format="%.8f").encode("utf-8")


def _show_next_token(result) -> None:
    show_chart(next_token_figure(result), key=Explore.ablation_chart)
    st.caption(
        "For the last word of your text, the bars show how likely the model thinks each next token is: blue with "
        "every head working, orange with the chosen heads switched off. " + ABLATION_NOTE
    )
    cols = st.columns(3)
    cols[0].metric(
        "KL divergence (nats)",
        f"{result.kl:.4f}",
        help="How surprised the original distribution is by the new one; 0 = no change.",
    )
    cols[1].metric(
        "Total variation",
        f"{result.tv:.4f}",
        help="The largest change in probability of any group of tokens (0 = same, 1 = completely different).",
    )
    cols[2].metric(
        "Most likely next token",
        top_change(result),
        help="The next token the model likes best with all heads on → with the chosen heads off.",
    )
    st.download_button(
        "Download these probabilities as CSV",
        _csv(result),
        file_name="ablation_next_token.csv",
        mime="text/csv",
        icon=":material/download:",
        key=Explore.ablation_csv,
    )


def _show_embedding(result) -> None:
    angle = math.degrees(math.acos(max(-1.0, min(1.0, result.cosine))))
    cols = st.columns(2)
    cols[0].metric(
        "Cosine similarity, before vs after",
        f"{result.cosine:.4f}",
        help="1 = the sentence embedding points the same way; lower = the heads mattered more.",
    )
    cols[1].metric("Angle between them", f"{angle:.2f}°")
    st.caption(
        "The sentence embedding is what MiniLM gives a search engine: the average of its last layer's token "
        "vectors, scaled to length 1. The cosine similarity compares its direction with all heads on and with the "
        "chosen heads off (two sentences with the same meaning typically score above 0.8). " + ABLATION_NOTE
    )


def _show_translation(result) -> None:
    left, right = st.columns(2)
    for col, name, text, conf in (
        (left, BEFORE, result.translation_before, result.confidence_before),
        (right, AFTER, result.translation_after, result.confidence_after),
    ):
        with col:
            st.markdown(f"**{name}**")
            st.code(text or "(empty)", language=None, wrap_lines=True)
            st.metric("Confidence in the original translation", f"{conf:.3f}" if math.isfinite(conf) else "–")
    if result.changed:
        st.warning("Switching these heads off changed the translation.")
    else:
        st.success("The translation did not change.")
    st.caption(
        "The translator writes its answer word by word, always taking its most likely word. Confidence is the "
        "average probability it gives each word of the original translation. " + ABLATION_NOTE
    )


def render_ablation(request: TraceRequest, n_layers: int, n_heads: int, family: str) -> None:
    """The head-ablation panel for the page's request (the model's ``n_layers`` × ``n_heads`` from its trace;
    ``family``: ``"encoder"``, ``"decoder"`` or ``"encoder-decoder"``, whose causal setting is ignored)."""
    st.markdown("Switch heads off and see what changes in what the model produces.")
    if family not in text_families():
        st.info("Head ablation works on transformer text models and the transformer translator.")
        return
    n_layers, n_heads = bounded(n_layers, 1, MAX_LAYERS), bounded(n_heads, 1, MAX_HEADS)
    heads, keep_only = _pick_heads(n_layers, n_heads, family)
    if not heads and not keep_only:
        st.info("Pick one or more heads (or whole layers) to switch off. Below: the output with every head on.")
    result = attempt(lambda: get_ablation(request, heads, keep_only), "Running the model with and without those heads…")
    if result is None:
        return
    for notice in result.notices:
        st.info(md(notice))
    st.caption(f"**{len(result.heads_off)} of {result.n_heads_total} heads switched off.**")
    {"next-token": _show_next_token, "embedding": _show_embedding, "translation": _show_translation}[result.output](
        result
    )
