"""Pretraining objectives: fill in the blank, the three objectives side by side, the two fine-tuning tabs
(``finetune.py``) and the cost of attention against an RNN and a convolution (counted, and measured as a long job)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.controls.long_job import run_job
from app.controls.pickers import page_tabs
from app.runtime.long_work import MEASURE
from app.state import default
from app.ui.charts import show_chart
from app.ui.guard import attempt, calm_errors
from app.ui.heatmap import attention_heatmap, layer_mean_map
from app.ui.safe_text import md, quoted
from app.ui.theme import side_by_side
from app.views.pretraining import data
from app.views.pretraining.finetune import fine_tuning, head_rows, next_sentence
from app.views.pretraining.keys import COST_D, COST_N, FILL_DEFAULT, OBJECTIVES_DEFAULT
from app.views.pretraining.keys import TABS as PRETRAINING_TABS
from app.views.pretraining.keys import Pretraining as P
from app.views.vit.figures import probability_bars

TABS = tuple(PRETRAINING_TABS.values())


def _mask_word(index: int) -> None:
    """on_change of the word pills: the picked word becomes [MASK] (the others stay as typed)."""
    words = st.session_state.get(P.fill_text, FILL_DEFAULT).split()
    if 0 <= index < len(words):
        words[index] = "[MASK]"
        st.session_state[P.fill_text] = " ".join(words)
    st.session_state[P.fill_pick] = None


def sentence(label: str, key: str, value: str, max_chars: int, help: str) -> str:
    """A text input starting at ``value``; what it holds."""
    default(key, value)
    st.text_input(label, key=key, max_chars=max_chars, help=help)
    return st.session_state.get(key) or ""


def fill_in_the_blank() -> None:
    st.write(
        "BERT is trained by hiding words and asking for them back. Type a sentence with **[MASK]** where a "
        "word should be guessed, or click a word to hide it. Our encoder was trained that way on generated "
        "children's stories."
    )
    unknown = "Words the model never saw become <unk>; it knows the words of simple stories."
    text = sentence("Sentence with [MASK]", P.fill_text, FILL_DEFAULT, 300, unknown)
    words = text.split()
    st.pills(
        "Hide a word",
        list(range(len(words))),
        format_func=lambda i: md(words[i]),
        key=P.fill_pick,
        on_change=lambda: _mask_word(st.session_state.get(P.fill_pick)),
    )
    result = attempt(lambda: data.get_fill_mask(text), "Filling in…")  # a model run may raise anything: shown
    if result is None:
        return
    for notice in result.notices:
        st.info(md(notice))
    labels = [f"{i} {t}" for i, t in enumerate(result.tokens.strings)]
    for n, blank in enumerate(result.blanks):
        left, right = side_by_side([2, 3])
        with left:
            fig = probability_bars(blank.words, blank.probs, top=len(blank.words))
            show_chart(
                fig.update_layout(title_text=f"Guesses for the blank at {blank.position}"), key=f"{P.fill_bars}{n}"
            )
            st.caption(
                f"The model's top guess is {quoted(blank.words[0])} ({blank.probs[0]:.0%}). The bars are the softmax of "
                "its scores at the blank over all the words it knows: a blank that many words fit spreads "
                "out, one the context decides (a pronoun that refers back) is nearly certain."
            )
        with right:
            att = data.blank_attention(text, blank.position)  # [layer, head, key]
            fig = head_rows(att, labels, f"Where the blank at {blank.position} looks, layer by layer", 360)
            show_chart(fig, key=f"{P.fill_att}{n}")
            st.caption(
                "Each row is one head's attention from the blank to every token (rows sum to 1); the "
                "first layers at the top. No causal mask: the blank reads the words on both sides, which "
                "is what makes an encoder good at filling in."
            )


def objective_column(title: str, mask: np.ndarray, labels: tuple, mask_title: str, keys: tuple, real: tuple) -> None:
    """One objective: its mask (``labels``: queries and keys) and the real mean attention of ``real`` = (model,
    text, causal, layer, block); ``keys``: the two charts' keys."""
    st.subheader(title)
    fig = attention_heatmap(mask.astype(np.float32), *labels, blocked=~mask, title=mask_title, height=320, zmax=1.0)
    show_chart(fig, key=keys[0])
    if (fig := attempt(lambda: layer_mean_map(data.objective_attention(*real)))) is not None:
        show_chart(fig, key=keys[1])


def objectives_side_by_side() -> None:
    st.write(
        "Three ways to learn from plain text, on the same sentence: what each lets a position see (its "
        "mask), what our own models' attention really does, and the training examples each makes."
    )
    simple = "Use simple words: the three models were trained on stories and toy translations."
    words = sentence("Sentence", P.objectives_text, OBJECTIVES_DEFAULT, 200, simple).lower().split()[:24]
    if len(words) < 2:
        st.info("Type at least two words.")
        return
    examples = data.objective_examples(tuple(words))
    layer = st.radio(
        "Layer of the real attention",
        [0, 1, 2],
        horizontal=True,
        key=P.objectives_layer,
        help="Each model has (at least) 3 layers; the maps show the mean of the heads of this layer.",
    )
    masked, pairs, span = examples["masked"], examples["next"], examples["span"]
    enc, dec, text = list(span.inputs), list(span.targets), " ".join(words)
    left, mid, right = side_by_side(3)
    with left:
        real, title = (data.MLM_MODEL, " ".join(masked.inputs), False, layer, "self"), "Mask: everyone sees everyone"
        objective_column(
            "Masked LM (BERT)", examples["bidirectional"], (words, words), title, (P.mask_mlm, P.real_mlm), real
        )
        targets = ", ".join(f"{t} at {i}" for i, t in enumerate(masked.targets) if t)
        st.caption(f"**Example:** {md(' '.join(masked.inputs))} → predict {md(targets)}")
    with mid:
        real, title = (data.NEXT_TOKEN_MODEL, text, True, layer, "self"), "Mask: each word sees the words before it"
        objective_column(
            "Next token (GPT)", examples["causal"], (words, words), title, (P.mask_next, P.real_next), real
        )
        st.caption(
            f"**{len(pairs)} examples from one sentence**, e.g. "
            + "; ".join(f"{md(' '.join(p[-3:]))} → {md(t)}" for p, t in pairs[:3])
            + " … every position is trained at once."
        )
    with right:
        real, mask = (data.SEQ2SEQ_MODEL, text, None, layer, "cross"), np.ones((len(dec), len(enc)), bool)
        title = "Cross-attention mask: the writer reads all of the input"
        objective_column("Span corruption (T5)", mask, (dec, enc), title, (P.mask_span, P.real_span), real)
        st.caption(
            f"**Example:** encoder reads {md(' '.join(enc))}; the decoder writes {md(' '.join(dec))} (causal), seeing "
            "the whole corrupted input through cross-attention. The real map is our translator's cross-attention: "
            "trained to translate, not on spans, but built the same way."
        )


def time_bars(times: dict[str, float], title: str) -> go.Figure:
    """Measured seconds per call as horizontal bars, each labelled with its own time in ms."""
    text = [f"{t * 1e3:.1f} ms" for t in times.values()]
    bar = dict(
        orientation="h", marker_color="#1f5fbf", textposition="auto", hovertemplate="%{y}: %{x:.4f} s<extra></extra>"
    )
    fig = go.Figure(go.Bar(x=list(times.values()), y=list(times), text=text, **bar))
    fig.update_layout(
        height=240,
        margin=dict(l=5, r=5, t=30, b=5),
        title=dict(text=title, x=0.0),
        xaxis=dict(title="seconds"),
        yaxis=dict(autorange="reversed", type="category"),
    )
    return fig


def cost_of_attention() -> None:
    st.write(
        "Attention compares every position with every other: its work grows with n², a recurrent layer's "
        "with n but one step after another. Move n (positions) and d (width) and compare."
    )
    left, right = st.columns(2)
    with left:
        default(P.cost_n, 512)
        n = st.select_slider("n: positions", COST_N, key=P.cost_n)
    with right:
        default(P.cost_d, 64)
        d = st.select_slider("d: width", COST_D, key=P.cost_d)
    costs = data.layer_costs(int(n), int(d))
    frame = pd.DataFrame(
        {
            "layer": [c.name for c in costs],
            "operations (multiply-adds)": [f"{c.multiply_adds:,}" for c in costs],
            "complexity": ["O(n²·d)", "O(n·d²)", "O(k·n·d²)"],
            "values kept": [f"{c.memory_values:,}" for c in costs],
            "sequential steps": [f"{c.sequential_steps:,}" for c in costs],
            "longest path between two words": [f"{c.path_length:,}" for c in costs],
        }
    )
    st.dataframe(frame, hide_index=True, key=P.cost_table)
    attention, rnn, _conv = costs
    cheaper = "fewer" if attention.multiply_adds < rnn.multiply_adds else "more"
    st.caption(
        f"At n = {n}, d = {d}, attention needs {cheaper} operations than the RNN "
        f"({attention.multiply_adds / rnn.multiply_adds:.2g}×): they cross at n = d. But the RNN takes {n} "
        "steps one after another, and a word's information must pass through every step in between; "
        "attention does all positions at once and links any two words in one step."
    )
    n, d = int(n), int(d)
    pressed = st.button(
        "Measure on this server",
        icon=":material/timer:",
        key=P.cost_measure,
        help="Times one attention head, an RNN cell loop and a convolution at this n and d (a few seconds).",
    )
    if pressed:
        st.session_state[P.cost_measured] = (n, d)
    if st.session_state.get(P.cost_measured) != (n, d):
        return
    times = None if pressed else data.measured_costs(n, d)
    if times is None:  # start (when pressed) and follow this session's measurement of that size
        run_job(MEASURE, "Measuring", (lambda: data.measure_start(n, d)) if pressed else None, match=(n, d))
        times = data.measured_costs(n, d)
    if times is None:
        return
    show_chart(time_bars(times, f"Seconds per call at n = {n}, d = {d}"), key=P.cost_times)
    st.caption(
        "Median of 3 calls each, one CPU thread, torch: the attention head is "
        "`scaled_dot_product_attention` (what our models run); the RNN is a loop of `RNNCell` steps; "
        "the convolution a `Conv1d` with kernel 3. The RNN's loop cannot use the parallel hardware. "
        "Measured on the server's long-work lane, at a lower priority than the pages: on a busy "
        "server the times grow."
    )


def main() -> None:
    st.title("Pretraining objectives")
    st.write(
        "Before a transformer is fine-tuned for a task it is pretrained on plain text. The objective decides "
        "what each position may look at, and so what the model learns."
    )
    tabs = page_tabs(list(TABS), key=P.tab)
    sections = (fill_in_the_blank, objectives_side_by_side, fine_tuning, next_sentence, cost_of_attention)
    for tab, section in zip(tabs, sections):
        if not tab.open:
            continue
        with tab, calm_errors(section.__name__):
            section()


main()
