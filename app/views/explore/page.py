"""Explore: type a sentence, pick a model, layer and head, and see where each token looks. Two nested fragments,
:func:`explore_panel` (model, token limit, examples, mask) and :func:`sentence_panel` (the sentence, its trace,
:func:`head_panel`): a new sentence does not redraw the controls above it. Only the open tab runs."""

from __future__ import annotations

import contextlib
from dataclasses import astuple, replace

import numpy as np
import streamlit as st

from app.controls.examples import example_hint, examples_picker
from app.controls.pickers import (
    causal_toggle,
    kv_sharing,
    layer_head,
    long_text_button,
    max_tokens_input,
    model_card,
    name_source,
    page_tabs,
    pick_block,
    pick_model,
    show_notices,
    text_box,
)
from app.links import open_page
from app.runtime.heads import attention_block, block_loader
from app.runtime.maps import head_view, layer_is_quick, layer_view_data
from app.runtime.models import device_label, model_loaded
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace, trace_is_quick
from app.sidebar import synced
from app.state import K, current_text
from app.ui.charts import show_chart
from app.ui.export import head_json_button
from app.ui.guard import busy, calm_errors, show_error
from app.ui.heatmap import map_figure, safe_label
from app.ui.layer_view import layer_view
from app.ui.linked_tokens import focus, outline, row_of
from app.ui.long_view import csv_button, map_controls
from app.ui.map_data import MapView
from app.ui.safe_text import quoted
from app.ui.theme import controls, current, presenting, side_by_side, tools
from app.views.explore.jobs import show_jobs
from app.views.explore.keys import TABS as TAB_LABELS
from app.views.explore.keys import Explore
from app.views.explore.next_token import show_next_token
from app.views.explore.write_more import remembered, settings_form, show_write_more
from app.views.positional.keys import Positional
from app.views.step_by_step.keys import Step
from engine.generation import SEQ2SEQ_NEW_TOKENS

MAX_TOKENS_LIMIT = 16_384
TABS = tuple(TAB_LABELS.values())
PHONE_BARS = 30  # compact view: at most this many bars of the query's row (the largest weights)


def show_head(request: TraceRequest, trace, view: MapView, says: str) -> None:
    """Every head of the layer in the browser (a head, a token or a key press there sends nothing to the server;
    an overview with a zoom for long inputs), and the chosen head's exact downloads; compact view adds the
    picked query's row as bars. ``says``: the display options' caption."""
    data = head_view(request, view)  # the server's head: its downloads, its row's bars, the overview's sizes
    window = trace.window_of(view.layer)
    suffix = (" · causal mask on" if trace.causal else "") + (f" · sliding window {window}" if window else "")
    with busy(f"Drawing the {trace.n_heads} heads of layer {view.layer}…", layer_is_quick(request, view)):
        heads = replace(layer_view_data(request, view), log=view.scale == "log")
    rows, cols = data.values.shape
    parts = [
        "Each **row** is a token asking *where should I look?* (the query); each **column** a token it can look "
        "at (the key). Pick a head above the map, click a row (or press ↑ ↓ on the map) to highlight a token, "
        "← → for the next head: the page answers at once.",
        says,
    ]
    if trace.causal:
        parts.append("Grey cells are blocked by the causal mask: a token cannot look ahead.")
    elif window is None:
        parts.append("No mask: every token can look at every other token, ahead or behind.")
    if window is not None:
        parts.append(
            f"This layer has a **sliding window** of {window} tokens: grey cells also mark keys farther "
            "away than the window, which this layer never sees."
        )
    if data.pooled:
        parts.append(
            f"**Overview:** {data.q_edges[-1] - data.q_edges[0]} × {data.k_pos.size} tokens drawn as "
            f"{rows} × {cols} cells; each cell shows the **largest** weight in its block, so a sharp "
            "one-token pattern stays visible. Open **Zoom** above the map to see exact weights."
        )
    picked = focus() if request.block != "cross" else None
    layer_view(Explore.view, heads, view.layer, view.head, picked, suffix=suffix)
    st.caption(" ".join(parts) + kv_sharing(trace))
    if current().compact:
        show_query_row(data, f"Layer {view.layer}, head {view.head}")
    load = block_loader(request)
    csv_button(trace, view, f"attention_L{view.layer}_H{view.head}.csv", load, key=Explore.csv)
    decode = list(astuple(request.decode)) if request.decode else None
    settings = {"causal": bool(trace.causal), "max_tokens": request.max_tokens, "decode": decode}
    head_json_button(request.model_id, trace, view, request.block, data, settings, load, "explore")
    if request.block == "self":
        why_this_score(trace, view, picked)


def why_this_score(trace, view: MapView, picked: int | None) -> None:
    """A link to Step by step's "What made this score?" for the highlighted token (else the last) and the key this
    head weighs most; a keyed container, so a click waits until the server has the view's head and token."""
    query = trace.n_queries - 1 if picked is None else picked
    key = int(np.argmax(trace.pattern_rows(view.layer, view.head, query, query + 1)[0]))
    cell = {K.layer: view.layer, K.head: view.head, Step.query: query, Step.key: key, Step.parts: True}
    with st.container(key=Explore.why):
        label = "What made this score? The highlighted token's strongest key, taken apart"
        open_page("step_by_step.py", label, cell, icon=":material/calculate:")


def show_query_row(data, title: str) -> None:
    """The highlighted query token's row (else the first row) as horizontal bars: what a phone can read."""
    picked = focus()
    row = (row_of(data, picked) if picked is not None else None) or 0
    weights = np.nan_to_num(np.asarray(data.values[row], dtype=float))
    keys = [str(label) for label in data.k_labels]
    query = str(data.q_labels[row])
    if len(keys) > PHONE_BARS:  # a long input: the largest weights, in the text's order
        kept = np.sort(np.argsort(-weights, kind="stable")[:PHONE_BARS])
        weights, keys = weights[kept], [keys[i] for i in kept]
    at = list(range(len(keys)))
    bars = dict(type="bar", orientation="h", x=weights, y=at, text=[f"{w:.2f}" for w in weights], cliponaxis=False)
    layout = dict(
        title={"text": f"Where “{safe_label(query)}” looks", "x": 0.0},
        height=24 * len(keys) + 90,
        margin={"l": 10, "r": 40, "t": 50, "b": 10},
        xaxis={"title": {"text": "weight"}, "rangemode": "tozero"},
        yaxis={"tickmode": "array", "tickvals": at, "ticktext": [safe_label(k) for k in keys], "autorange": "reversed"},
    )
    bars.update(textposition="outside", hovertemplate="%{x:.3f}<extra></extra>")
    spec = {"data": [bars], "layout": layout}
    show_chart(spec, key=Explore.query_bars)
    st.caption(
        f"{title}: the weights of one query token's row, as bars"
        + (f" (its {PHONE_BARS} largest)" if len(data.k_labels) > PHONE_BARS else "")
        + ". Highlight another token to see its row."
    )


def show_mask_comparison(request: TraceRequest, layer: int, head: int) -> None:
    """The same weights traced with the causal mask off and on, side by side, on one colour scale."""
    with st.spinner("Running the model with and without the mask…"):
        views = [
            head_view(request.with_causal(causal).with_block("self"), MapView(layer, head)) for causal in (False, True)
        ]
    top = max(float(np.nanmax(v.values)) for v in views)
    for col, causal, data in zip(side_by_side(2), (False, True), views):  # presenter mode: one under the other
        with col:
            fig = map_figure(data, title="Causal mask ON" if causal else "Causal mask OFF", height=420, zmax=top)
            show_chart(outline(fig, data, focus()), key=f"{Explore.mask}{causal}")
    st.caption(
        "The same model and weights run twice: left without a mask, right with the causal mask that GPT-style "
        "models use, on one colour scale. Masking changes every later layer too, because each layer reads the one "
        "before."
    )


def decoding() -> tuple | None:
    """An encoder-decoder's decoding settings form in an expander: the settings asked on submit."""
    with st.expander("Decoding: greedy or sampled", icon=":material/tune:"):
        st.caption(
            "The output is written one token at a time. Greedy takes the most likely token each step; "
            "sampling draws among the likely ones (temperature, top-k, top-p), repeatably with a seed."
        )
        return settings_form(Explore.decode_form, "Decode again", SEQ2SEQ_NEW_TOKENS, prefix=Explore.decode_prefix)


def show_output(trace) -> None:
    """An encoder-decoder's input and output, and what its three kinds of attention are."""
    st.markdown(f"**Output:** {quoted(trace.output_text or '(nothing)')}")
    st.caption(
        f"**{len(trace.source)} source tokens → {len(trace.target)} output tokens** (the start token, then what the "
        f"model wrote) · {trace.encoder.n_layers} encoder and {trace.decoder.n_layers} decoder layers × "
        f"{trace.encoder.n_heads} heads · running on {device_label()}. Pick the **attention block**: the "
        "encoder reads the source, the decoder reads the output written so far, and cross-attention lets each output "
        "token read the source (each cross-attention row is named by the token that step wrote)."
    )


def head_panel(request: TraceRequest, family: str = "") -> None:
    """Everything that depends on the layer, head and display settings (not a fragment: a layer or head change
    reruns the sentence panel around it, on the cached trace)."""
    with calm_errors("head_panel"):
        try:
            full = get_trace(request)  # a cache hit: the page just traced it
            seq2seq = family == "encoder-decoder"
            if presenting():  # one row: layer, block, then the display options' popover
                columns = st.columns([1, 2, 1] if seq2seq else [1, 1], vertical_alignment="bottom")
            elif seq2seq:  # the display options follow the row in place (no container of their own: a block less)
                columns = [*st.columns([1, 2]), contextlib.nullcontext()]
            else:
                columns = [st.container(horizontal=True), contextlib.nullcontext()]
            with columns[1] if seq2seq else contextlib.nullcontext():  # one block ("self"): pick_block draws nothing
                block = pick_block(list(full.attention_blocks()), key=Explore.block)
            trace = attention_block(full, block)
        except Exception as err:  # noqa: BLE001 — a section: its model run may raise anything; the rest of the page draws
            show_error(err)
            return
        request = request.with_block(block)
        layer, head = layer_head(trace.n_layers, trace.n_heads, (columns[0], None), getattr(trace, "layer_kinds", ()))
        with columns[-1], tools():  # presenter mode: a popover in the row above the map
            view, says = map_controls(trace, "explore", layer, head)
        show_head(request, trace, view, says)
        if family == "encoder-decoder":  # no mask to toggle (the decoder is always causal) and no next token
            return
        sections = (  # none open at first; a second pass for the mask, one for the next token, writing on a button
            lambda: show_jobs(request, layer),
            lambda: show_mask_comparison(request, layer, head),
            lambda: show_next_token(request, family),
            lambda: show_write_more(request, family, layer, head),
        )
        for tab, section in zip(page_tabs(list(TABS), key=Explore.tab, closed=True), sections):
            if tab.open:
                with tab:
                    section()


def main() -> None:
    if not presenting():  # the projector: the chart's own title and subtitle say what it shows
        st.title("Explore attention")
        st.write("Type a sentence and see, for every layer and head, how much each token attends to every other token.")
    explore_panel()


@st.fragment
@synced  # a new model, token limit, mask or example reruns this panel only (not the sidebar and the entry point)
def explore_panel() -> None:
    """The model, the examples and the mask, then the sentence panel drawn for them."""
    with calm_errors("explore_panel"):
        projector = presenting()
        with controls("Sentence, model and mask"):  # presenter mode: folded away, the chart gets the screen
            left, right = st.columns([2, 3])
            with left:
                model_id, max_tokens = pick_model(), max_tokens_input(MAX_TOKENS_LIMIT)
            # a model still loading (a server's first seconds): the sentence box first, usable while it loads,
            # then the examples and the mask, which need the model, beside it once it has loaded
            box_first = not projector and not model_loaded(model_id)
            if box_first:
                text_box()
            with left:
                model = model_card(model_id)
            if model is None:
                return
            seq2seq = model.family == "encoder-decoder"
            with right:
                examples_picker(model_id, model, hint=False)  # curated sentences per phenomenon; a vocabulary's words
                with st.container(horizontal=True, vertical_alignment="center"):
                    causal = None if seq2seq else causal_toggle(model_id, model.default_causal)
                    long_text_button(MAX_TOKENS_LIMIT)
            if projector:  # the projector: one folded row of controls (a fragment's box could not sit in it)
                text_box()
        if projector or box_first:  # one presenter reruns it all; no second row of controls above the map
            show_sentence(model_id, max_tokens, model, causal)
        else:
            sentence_panel(model_id, max_tokens, model, causal)


@st.fragment
@synced  # a new sentence reruns this panel only: the model, examples and mask above are not drawn again
def sentence_panel(model_id: str, max_tokens: int, model, causal: bool | None) -> None:
    """The sentence box, then :func:`show_sentence`: what a new sentence changes."""
    with calm_errors("sentence_panel"):
        text_box()
        show_sentence(model_id, max_tokens, model, causal)


def show_sentence(model_id: str, max_tokens: int, model, causal: bool | None) -> None:
    """The trace of the sentence in the box, its notices and caption, and the head panel."""
    seq2seq = model.family == "encoder-decoder"
    name_source(model_id, model)
    example_hint(model_id, model)  # where to look, while the box holds the example picked above
    request = TraceRequest(model_id, current_text(), causal, max_tokens)
    asked = decoding() if seq2seq else None
    try:
        settings = remembered(Explore.decode, asked, request) if seq2seq else None
        request = request.with_decode(settings) if settings else request
        with busy("Running the model…", trace_is_quick(request)):
            trace = get_trace(request)
    except Exception as err:  # noqa: BLE001 — a section: its model run may raise anything; the rest of the page draws
        show_error(err)
        return

    show_notices(trace, model.max_positions)
    if seq2seq:
        show_output(trace)
    elif not presenting():  # the projector: the map comes first
        with st.container(horizontal=True, vertical_alignment="center"):  # one line: the first chart stays on screen
            untrained = " · untrained weights: patterns are random" if "random" in model_id else ""
            st.caption(
                f"**{len(trace.tokens)} tokens** · {trace.n_layers} layers × {trace.n_heads} heads · "
                f"d_head {trace.d_head} · running on {device_label()}{untrained}",
                width="content",
            )
            if trace.pos_encoding is not None:
                link = "See the positional encodings this model adds to this sentence"
                open_page("positional.py", link, {Positional.tab: "learned"}, icon=":material/timeline:")
    head_panel(request, model.spec.family)


main()
