"""The six sections of the Step-by-step page for one query token, read from an ``AttentionSteps``
(``engine.analysis.stepwise.query_steps``): 1 q, K, V → 2 q·k → 3 × scale → 4 + bias + mask → 5 softmax → 6 z."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from app.figures import shared_build
from app.ui.charts import show_chart
from app.ui.safe_text import md
from app.views.step_by_step.keys import Step
from app.views.step_by_step.tables import frame_table, rounded, show_vectors, text_column, weights_bar

TABLE_HEIGHT = 280  # px: long texts scroll inside the table


def render_steps(trace, steps, labels: list[str], query: int, head: int, query_label: str | None = None) -> None:
    """All six steps: q/K/V, then 2–3 and 4–5 side by side, the weights chart, the output. ``labels`` name the keys,
    ``query_label`` the query (cross-attention's query is an output token)."""
    query_label = labels[query] if query_label is None else query_label
    show_qkv(trace, steps, labels, query, query_label)
    two, three, four, five = (*st.columns(2, gap="large"), *st.columns(2, gap="large"))
    with two:
        show_dot_products(steps, labels, query)
    with three:
        show_scaling(trace, steps, labels)
    with four:
        show_masking(trace, steps, labels, query, head)
    with five:
        show_softmax(steps, labels)
    show_weights_chart(steps, labels, query_label)
    show_output(trace, steps, labels, query, query_label)


def step_heading(number: int, title: str, formula: str) -> None:
    st.subheader(f"{number} · {title}")
    st.latex(formula)


def show_qkv(trace, steps, labels: list[str], query: int, query_label: str) -> None:
    step_heading(1, "The query, the keys and the values", r"q_i = x_i W_Q \qquad k_j = x_j W_K \qquad v_j = x_j W_V")
    d = trace.d_head
    st.markdown(f"**q({query})**, the query of **{md(query_label)}**")
    show_vectors("q", steps.q, [query_label], key=Step.q)
    left, right = st.columns(2)
    with left:
        st.markdown("**K**: one key per token")
        show_vectors("K", steps.k, labels, key=Step.k, height=TABLE_HEIGHT)
    with right:
        st.markdown("**V**: one value per token")
        show_vectors("V", steps.v, labels, key=Step.v, height=TABLE_HEIGHT)
    rope = " For this RoPE model q and k are already rotated by their positions."
    st.caption(
        f"Every token's vector is multiplied by three learned matrices. The **query** says what token {query} is "
        "looking for, each **key** what a token offers, each **value** what a token hands over when it is looked at. "
        f"This head works in d_head = {d} dimensions"
        + (f"; the tables show the first 8, open the expanders for all {d}." if d > 8 else ".")
        + (rope if trace.pos_encoding_kind == "rope" else "")
    )


def show_dot_products(steps, labels: list[str], query: int) -> None:
    step_heading(2, "Dot products", r"s_{ij} = q_i \cdot k_j = \sum_t q_{it}\,k_{jt}")
    st.dataframe(frame_table({"q·k": rounded(steps.raw[0])}, labels), key=Step.raw, height=TABLE_HEIGHT)
    best = int(np.argmax(steps.raw[0]))
    st.caption(
        f"Multiply q({query}) and k(j) number by number and add up. A large positive score means the key points the "
        f"same way as the query. Here the best match is **{labels[best]}** ({steps.raw[0, best]:.3f})."
    )


def show_scaling(trace, steps, labels: list[str]) -> None:
    d = trace.d_head
    step_heading(3, "Scale the scores", r"\frac{s_{ij}}{\sqrt{d_k}} = s_{ij} \times \frac{1}{\sqrt{d_k}}")
    frame = frame_table({"q·k": rounded(steps.raw[0]), "× scale": rounded(steps.scaled[0])}, labels)
    st.dataframe(frame, key=Step.scaled, height=TABLE_HEIGHT)
    usual = 1 / math.sqrt(d)
    if abs(steps.scale - usual) < 1e-6 * usual:
        how = f"This model multiplies by 1/√d_k = 1/√{d} = **{steps.scale:.4f}**."
    else:
        how = f"This model multiplies by **{steps.scale:.4g}** (its own choice; 1/√d_k would be {usual:.4f})."
    st.caption(
        how + " A dot product of d numbers grows with d, and large scores make the softmax pick one key and ignore "
        "the rest; dividing by √d_k keeps the scores in a range where several keys can share the attention."
    )


def show_masking(trace, steps, labels: list[str], query: int, head: int) -> None:
    has_bias = steps.bias is not None
    bias_name = "ALiBi bias" if trace.alibi_slopes is not None else "relative-position bias"
    formula = r"\tilde s_{ij} = \frac{s_{ij}}{\sqrt{d_k}}" + (r" + b_{ij}" if has_bias else "") + r" + m_{ij}"
    step_heading(4, "Add the mask" + (f" and {bias_name}" if has_bias else ""), formula)
    columns = {"× scale": rounded(steps.scaled[0])}
    if steps.softcap is not None:  # Gemma 2 caps the scaled scores before the mask
        columns[f"capped: {steps.softcap:g}·tanh(s/{steps.softcap:g})"] = rounded(
            np.tanh(steps.scaled[0] / steps.softcap) * steps.softcap
        )
    if has_bias:
        columns["+ bias"] = rounded(steps.bias[0])
    columns["+ mask"] = text_column(steps.mask[0])
    columns["= softmax input"] = text_column(steps.masked[0])
    st.dataframe(frame_table(columns, labels), key=Step.masked, height=TABLE_HEIGHT)
    blocked = int(steps.blocked[0].sum())
    if trace.causal:
        text = (
            f"The causal mask adds **−∞** to every key after the query (j > {query}): {blocked} key(s) here. "
            "Since e^−∞ = 0 they will get weight exactly 0: a token cannot look ahead."
        )
    else:
        toggle = "" if trace.family == "encoder-decoder" else "Switch on *Causal mask* above to see −∞ appear."
        text = (
            "No causal mask: every entry adds 0, so the query may look at every token, ahead or behind. "
            + toggle
            + (f" ({blocked} padding key(s) blocked.)" if blocked else "")
        )
    if has_bias and trace.alibi_slopes is not None:
        slope = float(trace.alibi_slopes[head])
        text += (
            f" ALiBi adds −m·|i − j| with slope m = {slope:.4g} for this head: the farther a key, the lower its score."
        )
    elif has_bias:
        text += (
            " This model (T5) adds a learned bias b(j − i) for each head, read from a small table by how far the "
            "key is from the query (far distances share one entry): the model's only sense of word order."
        )
    st.caption(text)


def show_softmax(steps, labels: list[str]) -> None:
    step_heading(5, "Softmax", r"w_{ij} = \frac{e^{\tilde s_{ij}}}{\sum_{j'} e^{\tilde s_{ij'}}}")
    columns = {"softmax input": text_column(steps.masked[0]), "exp(x − max)": rounded(steps.exp[0])}
    columns["weight"] = rounded(steps.weights[0])
    st.dataframe(frame_table(columns, labels), key=Step.weights, height=TABLE_HEIGHT)
    total = f"divide by their total: the weights are positive and sum to {steps.weights[0].sum():.4f}."
    if steps.sink is not None:  # gpt-oss: a learned logit in the total that no key gets
        total = (
            f"divide by their total, which also holds e^(sink − max) for this head's learned sink logit "
            f"{steps.sink:.3f}: no key gets that share, so the weights sum to {steps.weights[0].sum():.4f} and the "
            f"sink keeps {steps.sink_weight[0]:.4f}."
        )
    st.caption(
        "Take e to the power of each score (minus the row's largest, which changes nothing but avoids overflow) and "
        + total
    )


def show_weights_chart(steps, labels: list[str], query_label: str) -> None:
    fig = shared_build(weights_bar, steps.weights[0], labels, steps.blocked[0], f"Where {query_label} looks")
    show_chart(fig, key=Step.bar)
    st.caption(
        f"The softmax weights of query **{md(query_label)}** over every key token (step 5 as bars): the taller the bar, "
        "the more of that token's value goes into the output. Grey bars are keys the mask blocks (weight 0). "
        "Pick another query token above to see its row."
    )


def show_output(trace, steps, labels: list[str], query: int, query_label: str) -> None:
    step_heading(6, "The output: a weighted average of the values", r"z_i = \sum_j w_{ij}\, v_j")
    show_vectors("z", steps.z, [f"z({query})"], key=Step.z)
    top = np.argsort(-steps.weights[0])[:3]
    parts = " + ".join(f"{steps.weights[0, j]:.3f}·v({labels[j]})" for j in top)
    st.caption(
        f"z({query}) mixes the value vectors with the weights of step 5: roughly {parts} + … . This vector is what the "
        f"head passes on for {md(query_label)}; the {trace.n_heads} heads' outputs are then joined and projected back."
    )
