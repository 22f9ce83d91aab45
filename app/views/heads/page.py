"""Heads: every layer × head at once, what each head does (metrics), which heads are alike, comparisons, rollout;
each tab of ``keys.TABS`` is a function of a :class:`HeadsContext` in ``SECTIONS`` (only the open one runs)."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import streamlit as st

from app.controls.examples import examples_picker
from app.controls.pickers import (
    causal_toggle,
    kv_sharing,
    layer_head,
    page_tabs,
    pick_block,
    show_notices,
    text_and_model,
)
from app.runtime.heads import attention_block, block_is_square, block_loader, head_metrics_table
from app.runtime.maps import head_view, layer_is_quick, layer_view_data, model_view_data
from app.runtime.models import device_label
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.sidebar import synced
from app.state import PERSIST, current_text
from app.ui import export
from app.ui.charts import show_chart
from app.ui.guard import attempt, busy, calm_errors
from app.ui.layer_view import layer_view
from app.ui.linked_tokens import focus, focus_picker
from app.ui.long_view import csv_button, map_controls
from app.ui.safe_text import quoted
from app.ui.theme import controls, current, presenting, tools
from app.views.heads.ablation import render_ablation
from app.views.heads.context import METRICS, HeadsContext, metric_columns
from app.views.heads.figures import layer_head_heatmap
from app.views.heads.keys import TABS, Heads
from app.views.heads.sections import compare_section, rollout_section, similarity_section

MAX_TOKENS_LIMIT = 16_384
WHOLE_MODEL_LIMIT = 2048  # tabs that need every head's full n×n pattern stop here


def model_view_section(ctx: HeadsContext) -> None:
    """Every layer × head as a grid of buttons and the chosen head large, drawn in the browser (a click or a key
    there sends nothing to the server); its exact downloads below. A long input, or a phone, gets the open layer's
    heads only (another layer: the Layer box above)."""
    att = ctx.attention
    view, says = map_controls(att, Heads.display, ctx.layer, ctx.head)
    whole = not current().compact
    with busy(f"Drawing the {att.n_layers * att.n_heads} heads…", layer_is_quick(ctx.request, view)):
        heads = model_view_data(ctx.request, view) if whole else layer_view_data(ctx.request, view)
    heads = replace(heads, log=view.scale == "log")
    picked = focus() if block_is_square(ctx.block) else None
    suffix = f" · {ctx.block_label}" if ctx.block_label else ""
    layer_view(Heads.view, heads, ctx.layer, ctx.head, picked, grid=True, suffix=suffix)
    data = head_view(ctx.request, view)  # the server's head: its downloads
    every = len(heads.layers) == att.n_layers
    if every:
        where = f"All {att.n_layers} layers (rows) × {att.n_heads} heads (columns)"
    else:
        why = "a long input sends one layer at a time" if whole else "on a wider screen every layer shows at once"
        where = f"The {att.n_heads} heads of layer {ctx.layer} (pick another layer above: {why})"
    keys = "← → the next head" + (", Page Up/Down the layer" if every and att.n_layers > 1 else "")
    st.caption(
        f"{where}. Each small map is one head's attention pattern, coloured from 0 to its own maximum, so compare "
        "*shapes*: a line just below the diagonal is a previous-token head, the diagonal itself a self head, a dark "
        f"first column a first-token/sink head, an even wash a broad head. **Click one** to open it large ({keys}, "
        f"↑ ↓ a token: the page answers at once). Each **row** of the large map is a query token, each **column** a "
        f"key. {says} "
        + ("Grey cells are blocked by the causal mask. " if att.blocked_any() else "")
        + ("Long input: each cell is the largest weight of its block; open **Zoom** for exact weights." * data.pooled)
    )
    load = block_loader(ctx.request)
    csv_button(att, view, f"heads_L{ctx.layer}_H{ctx.head}.csv", load, key=Heads.csv)
    settings = {"causal": bool(att.causal), "max_tokens": ctx.request.max_tokens}
    export.head_json_button(ctx.request.model_id, att, view, ctx.block, data, settings, load, "heads")


def metrics_section(ctx: HeadsContext) -> None:
    """A layer × head map of one metric and the sortable table of every metric."""
    with st.spinner("Measuring every head…"):
        frame = head_metrics_table(ctx.request)
    available = [m for m in METRICS if m in frame.columns]
    metric = st.selectbox(
        "Metric on the map", available, key=Heads.metric, format_func=lambda m: METRICS[m][0], **PERSIST
    )
    metric = metric if metric in available else available[0]
    label, fmt, meaning = METRICS[metric]
    shape = (ctx.attention.n_layers, ctx.attention.n_heads)
    values = frame[metric].to_numpy(dtype=float).reshape(shape)
    tags = (frame["pattern"] + " (" + frame["score"].map("{:.2f}".format) + ")").to_numpy(dtype=object).reshape(shape)
    show_chart(
        layer_head_heatmap(values, label, selected=(ctx.layer, ctx.head), fmt=fmt, labels=tags), key=Heads.metric_map
    )
    st.caption(
        f"**{label}** for every head: {meaning}. Rows are layers, columns heads; the red frame is the chosen "
        "head. Hover a cell to see the pattern the head matches best."
    )
    if not ctx.square:
        st.info(
            "Mean distance and the previous/self/next-token shares are **n/a** for cross-attention: its queries "
            "are target (French) tokens and its keys source (English) tokens, so positions do not line up."
        )
    _best_heads(frame)
    st.dataframe(frame, hide_index=True, column_config=metric_columns(frame.columns), key=Heads.metrics_table)
    st.caption(
        "One row per head; click a column header to sort. Each number is averaged over the query tokens. "
        "**Best match** is the largest of: previous-token share, sink share (marker tokens such as [CLS] and "
        '[SEP], and the first token: the "attention sink"; an unknown word\'s [UNK] is part of the text, not a '
        "sink), broadness, self share, next-token share (self-attention), and alignment (cross-attention); "
        "**score** is that value (0–1)."
    )
    export.csv_button("Download the metrics as CSV", frame, "head_metrics.csv", index=False, float_format="%.6f")


def _best_heads(frame) -> None:
    """One line per pattern: the head that matches it most strongly."""
    lines = []
    for name, group in frame.groupby("pattern", sort=False):
        best = group.loc[group["score"].idxmax()]
        lines.append(
            f"**{name}**: {len(group)} head{'s' if len(group) != 1 else ''}, strongest "
            f"L{int(best['layer'])} H{int(best['head'])} ({best['score']:.2f})"
        )
    st.markdown(" · ".join(lines))


def ablation_section(ctx: HeadsContext) -> None:
    render_ablation(ctx.request, ctx.attention.n_layers, ctx.attention.n_heads, ctx.family)


#: one section per tab of ``keys.TABS``, in its order
SECTIONS: tuple[Callable[[HeadsContext], None], ...] = (
    model_view_section,
    metrics_section,
    similarity_section,
    compare_section,
    rollout_section,
    ablation_section,
)


def run_sections(ctx: HeadsContext) -> None:
    """The tabs; only the open one runs."""
    for tab, section in zip(page_tabs(list(TABS.values()), key=Heads.tab), SECTIONS):
        if not tab.open:
            continue
        with tab:
            if section is not model_view_section and ctx.attention.n_keys > WHOLE_MODEL_LIMIT:
                st.info(
                    f"This tab measures every head's full pattern ({ctx.attention.n_queries} × "
                    f"{ctx.attention.n_keys} weights each), which is too heavy past {WHOLE_MODEL_LIMIT:,} tokens. "
                    f"Lower the token limit (Advanced, above) to {WHOLE_MODEL_LIMIT:,} or less to use it; the "
                    "Model view tab works at any length."
                )
                continue
            section(ctx)


@st.fragment
@synced  # a layer, head, block or tab change reruns this panel only: it writes the link itself
def heads_panel(request: TraceRequest, family: str) -> None:
    """Block, layer, head and the tabs, on the cached trace."""
    with calm_errors("heads_panel"):
        trace = get_trace(request)  # a cache hit: the page just traced it
        # presenter mode: one row of layer, head, block and a popover with the token pills
        controls = st.columns([1, 1, 2, 1] if presenting() else [1, 1, 2], vertical_alignment="bottom")
        with controls[2]:
            block = pick_block(list(trace.attention_blocks()), key=Heads.block)
        if (attention := attempt(lambda: attention_block(trace, block))) is None:
            return
        layer, head = layer_head(attention.n_layers, attention.n_heads, controls[:2], attention.layer_kinds)
        if block_is_square(block):  # one sequence on both axes: a token has a row and a column
            with controls[3] if presenting() else st.container(), tools("Highlight a token"):
                focus_picker(attention.tokens.strings, "heads")
        translation = getattr(trace, "output_text", None)
        if not presenting():  # the projector: the charts come first
            st.caption(
                f"**{attention.n_queries} query × {attention.n_keys} key tokens** · {attention.n_layers} layers × "
                f"{attention.n_heads} heads · running on {device_label()}"
                + (f" · output: {quoted(translation)}" if translation is not None else "")
                + kv_sharing(attention, head)
            )
        run_sections(HeadsContext(request.with_block(block), family, attention, layer, head))


def main() -> None:
    if not presenting():  # the projector: the charts' own titles say what they show
        st.title("Heads")
        st.write(
            "Transformers have many attention heads per layer, and they specialise: some look at the previous "
            "word, some at the first token, some everywhere. See them all at once, measure them, and compare."
        )
    with controls("Sentence, model and mask"):  # presenter mode: folded away, the charts get the screen
        model_id, max_tokens, card = text_and_model(MAX_TOKENS_LIMIT)
        if card is None:
            return
        examples_picker(model_id, card)  # curated sentences per phenomenon; a closed vocabulary's words
        family = card.family
        causal = None if family == "encoder-decoder" else causal_toggle(model_id, card.default_causal)
    request = TraceRequest(model_id, current_text(), causal, max_tokens)
    if (trace := attempt(lambda: get_trace(request), "Running the model…")) is None:
        return
    show_notices(trace, card.max_positions)
    heads_panel(request, family)


main()
