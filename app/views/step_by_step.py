"""Step by step: what Q, K, V and the softmax do, number by number, for one query token.

z(i) = softmax(q(i)·Kᵀ · scale + bias + mask) V — every number on this page is read from the
trace (its Q, K, V, scale, mask and ALiBi bias) through ``engine.analysis.stepwise``; a calculator
at the bottom runs the same steps on tiny tables the student types.
"""

from __future__ import annotations

import streamlit as st

from app import services
from app.components.pickers import (
    causal_toggle,
    layer_head,
    show_notices,
    text_and_model,
)
from app.components.step_calculator import calculator
from app.components.step_sections import render_steps
from app.components.step_tables import steps_csv
from app.state import PERSIST, clamp, current_text

MAX_TOKENS_LIMIT = 1024
QUERY_KEY = "step_query"


def token_labels(strings) -> list[str]:
    """``"3 · cat"``: position first, so repeated words stay distinct."""
    return [f"{i} · {s}" for i, s in enumerate(strings)]


def pick_query(labels: list[str], strings) -> int:
    """The query-token picker; starts on "it" when the sentence has one (the classic example), else token 1."""
    n = len(labels)
    if QUERY_KEY not in st.session_state:
        words = [s.lower() for s in strings]
        st.session_state[QUERY_KEY] = words.index("it") if "it" in words else min(1, n - 1)
    clamp(QUERY_KEY, 0, n - 1)
    query = st.selectbox("Query token", list(range(n)), format_func=lambda i: labels[i], key=QUERY_KEY, **PERSIST,
                         help="The token whose attention is worked out below: where does it look, and what does it get?")
    return int(query)


def walkthrough() -> None:
    """Pickers, one trace, and the six steps for the chosen query token."""
    model_id, max_tokens, card = text_and_model(MAX_TOKENS_LIMIT)
    if card is None:
        return
    text = current_text()
    controls = st.columns([1, 1, 2, 2])
    with controls[3]:
        causal = causal_toggle(model_id, card.default_causal)
    try:
        with st.spinner("Running the model…"):
            trace = services.get_trace(model_id, text, causal, max_tokens)
    except Exception as err:  # noqa: BLE001
        st.warning(services.friendly_error(err))
        return
    layer, head = layer_head(trace.n_layers, trace.n_heads, columns=controls[:2])
    labels = token_labels(trace.tokens.strings)
    with controls[2]:
        query = pick_query(labels, trace.tokens.strings)
    show_notices(trace)

    steps = services.query_steps(trace, layer, head, query)
    st.caption(
        f"**{len(labels)} tokens** · layer {layer}, head {head} · d_head {trace.d_head} · query **{labels[query]}**"
        + (" · causal mask on" if trace.causal else "")
    )
    render_steps(trace, steps, labels, query, head)
    st.download_button("Download these steps as CSV", steps_csv(steps, labels), icon=":material/download:",
                       file_name=f"steps_L{layer}_H{head}_q{query}.csv", mime="text/csv")


def main() -> None:
    st.title("Step by step")
    st.write("Follow one token's attention through every step, with the real numbers of the model.")
    st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right) V")
    st.caption("M is the mask: 0 where a token may look, −∞ where it may not. The steps below take this apart "
               "for one query token of the model, layer and head you pick.")
    walkthrough()
    st.divider()
    calculator()


main()
