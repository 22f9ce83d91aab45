"""Step by step: z(i) = softmax(q(i)·Kᵀ · scale + bias + mask) V for one query token, every number read from the
trace through ``engine.analysis.stepwise``; a calculator below runs the same steps on tiny typed tables."""

from __future__ import annotations

import streamlit as st

from app.controls.examples import examples_picker
from app.controls.pickers import causal_toggle, layer_head, pick_block, show_notices, text_and_model
from app.links import current_link
from app.runtime.heads import attention_block, block_loader
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.state import PERSIST, clamp, current_text, default_from
from app.ui.export import json_button, steps_record
from app.ui.guard import attempt
from app.ui.linked_tokens import focus, set_focus
from app.ui.safe_text import md, quoted
from app.ui.theme import controls as folded_controls
from app.views.step_by_step.calculator import calculator
from app.views.step_by_step.keys import Step
from app.views.step_by_step.score_parts import score_section
from app.views.step_by_step.sections import render_steps
from app.views.step_by_step.tables import steps_csv
from engine.analysis.stepwise import query_steps

MAX_TOKENS_LIMIT = 1024


def token_labels(strings) -> list[str]:
    """``"3 · cat"``: position first, so repeated words stay distinct."""
    return [f"{i} · {s}" for i, s in enumerate(strings)]


def pick_query(labels: list[str], strings, linked: bool = True) -> int:
    """The query-token picker; starts on the token highlighted on another page, else on "it", else token 1.
    ``linked`` (self-attention): picking a query highlights that token on the other pages too."""
    n = len(labels)

    def first_query() -> int:
        words = [s.lower() for s in strings]
        shared = focus() if linked else None
        return shared if shared is not None and shared < n else words.index("it") if "it" in words else min(1, n - 1)

    default_from(Step.query, first_query)
    clamp(Step.query, 0, n - 1)

    def share() -> None:
        if linked:
            set_focus(st.session_state.get(Step.query))

    says = "The token whose attention is worked out below: where does it look, and what does it get?"
    kwargs = dict(format_func=labels.__getitem__, key=Step.query, on_change=share, help=says)
    return int(st.selectbox("Query token", range(n), **kwargs, **PERSIST))


def walkthrough() -> None:
    """Pickers, one trace, and the six steps for the chosen query token."""
    with folded_controls("Sentence and model"):  # presenter mode: folded away
        model_id, max_tokens, card = text_and_model(MAX_TOKENS_LIMIT)
        if card is not None:
            examples_picker(model_id, card)  # curated sentences per phenomenon; a closed vocabulary's words
    if card is None:
        return
    controls = st.columns([1, 1, 2, 2])
    with controls[3]:
        causal = None if card.family == "encoder-decoder" else causal_toggle(model_id, card.default_causal)
    request = TraceRequest(model_id, current_text(), causal, max_tokens)
    if (trace := attempt(lambda: get_trace(request), "Running the model…")) is None:
        return
    with controls[3]:  # an encoder-decoder's encoder, decoder or cross-attention (the decoder is the causal one)
        block = pick_block(list(trace.attention_blocks()), key=Step.block)
    if (attention := attempt(lambda: attention_block(trace, block))) is None:
        return
    layer, head = layer_head(attention.n_layers, attention.n_heads, controls[:2], attention.layer_kinds)
    labels = token_labels(attention.tokens.strings)
    key_labels = labels if attention.key_tokens is attention.tokens else token_labels(attention.key_tokens.strings)
    with controls[2]:
        query = pick_query(labels, attention.tokens.strings, linked=attention.key_tokens is attention.tokens)
    show_notices(trace, card.max_positions)
    output = getattr(trace, "output_text", None)
    if output is not None:
        st.caption(f"Output: {quoted(output)}. Cross-attention's queries are the output tokens, its keys the source.")

    steps = query_steps(attention, layer, head, query)
    st.caption(
        f"**{len(labels)} query tokens** · layer {layer}, head {head} · d_head {attention.d_head} · query "
        f"**{md(labels[query])}**" + (" · causal mask on" if attention.causal else "")
    )
    render_steps(attention, steps, key_labels, query, head, query_label=labels[query])
    name = f"steps_L{layer}_H{head}_q{query}"
    csv = steps_csv(steps, key_labels)
    st.download_button("Download these steps as CSV", csv, f"{name}.csv", "text/csv", icon=":material/download:")
    settings = {"causal": bool(attention.causal), "max_tokens": max_tokens}
    link = current_link("step_by_step")
    load = block_loader(request.with_block(block))  # the button holds the request, not the trace
    where = {"layer": layer, "head": head, "block": block, "query": query}
    json_button(
        "Download the numbers as JSON",
        lambda: steps_record(model_id=model_id, att=load(), steps=steps, settings=settings, link=link, **where),
        f"{name}.json",
        key=Step.json,
    )
    score_section(request.with_block(block), attention, steps, (layer, head, query), key_labels, labels[query])


def main() -> None:
    st.title("Step by step")
    st.write("Follow one token's attention through every step, with the real numbers of the model.")
    st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right) V")
    st.caption(
        "M is the mask: 0 where a token may look, −∞ where it may not. The steps below take this apart "
        "for one query token of the model, layer and head you pick."
    )
    walkthrough()
    st.divider()
    calculator()


main()
