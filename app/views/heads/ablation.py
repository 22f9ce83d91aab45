"""Head ablation: heads switched off (their output ``z_h`` zeroed before the output projection,
``engine.analysis.ablation``) and what changes: next-token probabilities (decoders), the sentence embedding's
direction (encoders) or the greedy translation (the translator)."""

from __future__ import annotations

import math
import re

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.runtime.heads import get_ablation
from app.runtime.request import TraceRequest
from app.state import PERSIST, bounded, choose, settle
from app.ui.charts import show_chart
from app.ui.export import csv_button
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
METRIC_HELP = {
    "KL divergence (nats)": "How surprised the original distribution is by the new one; 0 = no change.",
    "Total variation": "The largest change in probability of any group of tokens (0 = same, 1 = completely different).",
    "Most likely next token": "The next token the model likes best with all heads on → with the chosen heads off.",
    "Cosine similarity, before vs after": "1 = the sentence embedding points the same way; lower = the heads mattered more.",
}
_LABEL = re.compile(r"^L(\d+) H(\d+)$")


def _keep_valid(key: str, options: list[str]) -> None:
    value = st.session_state.get(key)
    if value is not None:
        settle(key, [v for v in value if v in options] if isinstance(value, (list, tuple)) else [])


def _pick_heads(n_layers: int, n_heads: int, family: str) -> tuple[tuple[tuple[str, int, int | None], ...], bool]:
    """The selection widgets: the sorted ``(block, layer, head|None)`` tuple and the keep-only flag."""
    block = "self"
    if family == "encoder-decoder":
        choose(Explore.ablation_block, BLOCKS, "cross")
        says = "The translator has three kinds of attention; pick whose heads to switch off."
        picker = dict(format_func=BLOCKS.get, key=Explore.ablation_block, help=says, **PERSIST)
        block = st.segmented_control("Attention block", list(BLOCKS), **picker) or "cross"
    chosen, layer_names = [], [f"Layer {layer}" for layer in range(n_layers)]
    for column, key, options, label, hint, says in zip(
        st.columns([3, 2]),
        (Explore.ablation_heads, Explore.ablation_layers),
        ([f"L{layer} H{head}" for layer in range(n_layers) for head in range(n_heads)], layer_names),
        ("Heads to switch off", "Whole layers off"),
        ("e.g. L0 H3", "none"),
        ("L = layer, H = head, counted from 0.", "Switch off every head of these layers at once."),
    ):
        _keep_valid(key, options)  # a smaller model: remembered choices it lacks are dropped
        chosen.append(column.multiselect(label, options, key=key, placeholder=hint, help=says, **PERSIST))
    picked, layers = chosen
    says = "Turns the selection around: what can the chosen heads do on their own?"
    label = "Keep only these heads (switch off all the others)"
    keep_only = st.toggle(label, key=Explore.ablation_keep, help=says, **PERSIST)
    off = {(block, int(m[1]), int(m[2])) for m in map(_LABEL.match, map(str, picked)) if m}
    off |= {(block, int(str(name).rsplit(" ", 1)[-1]), None) for name in layers}
    ordered = sorted(off, key=lambda r: (r[1], -1 if r[2] is None else r[2]))
    return tuple(ordered), bool(keep_only)


def next_token_figure(result) -> go.Figure:
    """Grouped bars: the most likely next tokens, probability before vs after (equal names told apart by id)."""
    labels = [safe_label(t) for t in result.top_tokens]
    labels = [f"{t} (id {i})" if labels.count(t) > 1 else t for t, i in zip(labels, result.top_ids)]
    fig = go.Figure()
    for name, values, colour in ((BEFORE, result.top_before, "#1f77b4"), (AFTER, result.top_after, "#ff7f0e")):
        hover = "next token %{x}<br>" + name + ": %{y:.4f}<extra></extra>"
        fig.add_bar(name=name, x=labels, y=list(values), marker_color=colour, hovertemplate=hover)
    legend = dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom")
    fig.update_layout(barmode="group", height=380, margin=dict(l=10, r=10, t=40, b=10), legend=legend)
    return fig.update_layout(
        title="Next-token probabilities at the last position", xaxis_title="next token", yaxis_title="probability"
    )


def top_change(result) -> str:
    """``"she → ."``: the most likely next token before and after."""
    if not result.top_tokens:
        return "–"
    best = [result.top_tokens[max(range(len(v)), key=v.__getitem__)] for v in (result.top_before, result.top_after)]
    return best[0] if best[0] == best[1] else f"{best[0]} → {best[1]}"


def show_metrics(values: dict[str, str]) -> None:
    """One metric a column, with its help from :data:`METRIC_HELP`."""
    for col, (label, value) in zip(st.columns(len(values)), values.items()):
        col.metric(label, value, help=METRIC_HELP.get(label))


def _show_next_token(result) -> None:
    show_chart(next_token_figure(result), key=Explore.ablation_chart)
    st.caption(
        "For the last word of your text, the bars show how likely the model thinks each next token is: blue with "
        "every head working, orange with the chosen heads switched off. " + ABLATION_NOTE
    )
    show_metrics(
        {
            "KL divergence (nats)": f"{result.kl:.4f}",
            "Total variation": f"{result.tv:.4f}",
            "Most likely next token": top_change(result),
        }
    )
    top = {"token": result.top_tokens, "id": result.top_ids, "p_before": result.top_before, "p_after": result.top_after}
    name, key = "ablation_next_token.csv", Explore.ablation_csv
    csv_button("Download these probabilities as CSV", pd.DataFrame(top), name, key, index=False, float_format="%.8f")


def _show_embedding(result) -> None:
    angle = math.degrees(math.acos(max(-1.0, min(1.0, result.cosine))))
    show_metrics({"Cosine similarity, before vs after": f"{result.cosine:.4f}", "Angle between them": f"{angle:.2f}°"})
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
