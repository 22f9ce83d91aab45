"""Bahdanau attention: an RNN translator writes French word by word, looking back at the English each time: the
alignment map, one decoding step number by number, and Luong's dot attention and a transformer's cross-attention."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.controls.pickers import pick_head, pick_index
from app.figures import shared_build
from app.state import PERSIST, clamp, default
from app.ui.charts import show_chart
from app.ui.clicks import once
from app.ui.export import csv_button
from app.ui.guard import attempt
from app.ui.safe_text import md
from app.ui.theme import side_by_side
from app.views.bahdanau import data
from app.views.bahdanau.figures import alignment_map, context_figure, energies_and_weights, state_strip, table
from app.views.bahdanau.keys import Bahdanau
from engine.analysis.toy_grammar import EXAMPLES, reference, vocabulary_by_kind

TEXT, VARIANT, EXAMPLE = Bahdanau.text, Bahdanau.variant, Bahdanau.example
MAX_CHARS = 200
VARIANT_LABELS = {"additive": "Additive (Bahdanau)", "dot": "Dot / general (Luong)"}


def _use_example() -> None:
    if choice := st.session_state.get(EXAMPLE):
        st.session_state[TEXT], st.session_state[EXAMPLE] = choice, None


def _set_text(sentence: str) -> None:
    st.session_state[TEXT] = sentence


def inputs() -> tuple[str, str]:
    """The sentence, the example picker, the vocabulary and the attention variant; returns ``(text, variant)``."""
    default(TEXT, Bahdanau.DEFAULTS[TEXT])
    left, right = st.columns([3, 2])
    with left:
        help = "Words of the toy grammar (see the vocabulary), e.g. “the red car is big”, or a date such as “21 November 2026”."
        st.text_input("English sentence or a date", key=TEXT, max_chars=MAX_CHARS, help=help, **PERSIST)
    with right:
        example = dict(index=None, key=EXAMPLE, on_change=_use_example, placeholder="Choose an example sentence")
        st.selectbox("…or pick an example", EXAMPLES, **example)
    help = "Both models have the same GRU encoder and decoder; only the score e(i, j) differs."
    labels = VARIANT_LABELS
    st.radio("Attention", labels, format_func=labels.get, key=VARIANT, horizontal=True, help=help, **PERSIST)
    with st.expander("Vocabulary: the English words the models know"):
        st.caption(
            "Sentences look like *subject verb object*, *subject is adjective (and adjective)* or "
            "*subject is preposition object*; plural nouns take *the*. Dates: “21 November 2026”, "
            "“November 21, 2026”, “21/11/2026”, “Saturday, 21 November 2026”."
        )
        for kind, words in vocabulary_by_kind().items():
            st.markdown(f"**{kind}**: " + ", ".join(f"`{w}`" for w in words))
    return str(st.session_state.get(TEXT) or ""), st.session_state.get(VARIANT) or Bahdanau.DEFAULTS[VARIANT]


def show_translation(trace, text: str) -> None:
    """The model's output, the grammar's reference, and whether they match."""
    ref = reference(text)
    out_col, ref_col = st.columns(2)
    with out_col:
        st.markdown(f"**Model output** (greedy decoding)\n\n> {md(trace.output_text) or '(nothing)'}")
    with ref_col:
        if ref.text:
            verdict = ":green[matches]" if ref.matches(trace.output_text) else ":red[differs]"
            st.markdown(f"**Reference** from the grammar ({verdict})\n\n> {md(ref.text)}")
        else:
            st.markdown("**Reference**: none")
            st.caption(f"No reference translation: {md(ref.why)}.")


def show_map(trace, text: str, model_id: str) -> None:
    """The alignment map with the gold links, its caption and the agreement with the gold alignment."""
    agreement, why = data.bahdanau_agreement(model_id, text)
    gold = [(r.gold_index, r.target_index) for r in agreement.rows] if agreement else None
    target, source = list(trace.target.strings), list(trace.source.strings)
    title = f"Alignment map α(i, j), {VARIANT_LABELS[trace.variant]}"
    fig = shared_build(alignment_map, trace.alignment, target, source, gold=gold, title=title, meta=Bahdanau.map)
    show_chart(fig, key=Bahdanau.map)
    st.caption(
        "Each **row** is a French word being written (top to bottom in writing order), each **column** an English "
        "word; a white cell means the decoder looked almost only at that word when writing that row (black = ignored), "
        "as in Figure 3 of Bahdanau et al. (2015). Where French puts the adjective after the noun (“red car” → "
        "“voiture rouge”) the bright cells **cross**: the decoder reads *car* to write *voiture*, then goes back to "
        "*red* for *rouge*. Orange squares are the grammar's gold word links."
    )
    frame = pd.DataFrame(trace.alignment, index=target, columns=source)
    csv_button("Download the alignment map as CSV", frame, "alignment_map.csv", Bahdanau.map_csv, float_format="%.6f")
    show_agreement(agreement, why, model_id, text)


def show_agreement(agreement, why: str, model_id: str, text: str) -> None:
    """Attention weights are not word alignments: the score for this sentence and a counter-example."""
    if agreement is None:
        st.caption(f"Agreement with the gold alignment: not available ({md(why)}).")
    else:
        off = agreement.differing
        detail = "; ".join(
            f"**{md(r.target_word)}** looks most at **{md(r.argmax_word)}**, the gold link is **{md(r.gold_word)}** "
            f"(α = {r.weight_on_gold:.2f} there)"
            for r in off
        )
        st.caption(
            f"**Attention weights are not word alignments.** Agreement with the grammar's gold alignment: "
            f"**{agreement.score:.0%}** of the {len(agreement.rows)} words look most at their gold source word. "
            + (
                f"Where it differs: {detail}. The model reads whatever helps it write the word (a noun's gender for "
                "an article, say), not what a dictionary would link."
                if off
                else "Here every word looks most at its gold word; that is not guaranteed (see the example below)."
            )
        )
    with st.spinner("Searching the grammar for a sentence where attention and gold links differ…"):
        found = data.bahdanau_disagreement(model_id)
    if found is None:
        st.caption("A search over generated grammar sentences found none where attention and gold links differ.")
        return
    r = found.agreement.differing[0]
    st.caption(
        f"Searched {found.searched} grammar sentences: the least agreement ({found.agreement.score:.0%}) is in "
        f"“{md(found.sentence)}”, where **{md(r.target_word)}** looks most at **{md(r.argmax_word)}** instead of "
        f"**{md(r.gold_word)}**."
    )
    if found.sentence != text.strip():
        click = dict(on_click=once(_set_text), args=(found.sentence,), key=Bahdanau.differs)
        st.button(f"Try “{found.sentence}”", icon=":material/swap_horiz:", **click)


FORMULAS = {
    "additive": r"e(i,j) = v^\top \tanh\big(W\,s_{i-1} + U\,h_j\big),\quad "
    r"\alpha_{ij} = \frac{\exp e(i,j)}{\sum_k \exp e(i,k)},\quad c_i = \sum_j \alpha_{ij}\, h_j",
    "dot": r"e(i,j) = s_{i-1}^\top\, W_h\, h_j,\quad "
    r"\alpha_{ij} = \frac{\exp e(i,j)}{\sum_k \exp e(i,k)},\quad c_i = \sum_j \alpha_{ij}\, h_j",
}


def pick_step(target: tuple[str, ...]) -> int:
    """A slider over the output steps (labelled with the word each one writes); returns the row index."""
    n = len(target)
    clamp(Bahdanau.step, 0, n - 1)
    if n == 1:
        st.caption(f"One decoding step: it writes **{md(target[0])}**.")
        return 0
    help = "Each step writes one word; before writing, the decoder looks back at every source word."
    names = [f"{i + 1}: {word}" for i, word in enumerate(target)]
    options = dict(key=Bahdanau.step, format_func=names.__getitem__, help=help, **PERSIST)
    return int(st.select_slider("Decoding step i (the word it writes)", range(n), **options))


def show_pieces(b, rows: list[str]) -> None:
    """The step's scores as a table per source word, how they are made, and each piece of the score in an expander."""
    dim, n = len(b.query), len(rows)
    additive = b.variant == "additive"
    if additive:
        score, key, query = "vᵀ tanh(W s + U h(j))", "U h(j)", "W s(i−1)"
        titles = ("W s(i−1): the query part", "U h(j): the key part", "tanh(W s(i−1) + U h(j)): the sum after tanh")
        how = (
            f"Each row is one source word j. The decoder state is turned into a query **W s(i−1)** ({dim} numbers), "
            f"each encoder state into a key **U h(j)** ({dim} numbers); they are **added**, squashed by **tanh**, "
            "and the vector **v** scores the result (a dot product): that number is the energy e(i, j). Softmax "
            "over the row turns energies into weights α that sum to 1."
        )
    else:
        score, key, query = "s(i−1) · W_h h(j)", "W_h h(j)", "s(i−1)"
        titles = ("s(i−1): the decoder state", "W_h h(j): the keys")
        titles += ("s(i−1) ⊙ W_h h(j): the products; each row sums to e(i, j)",)
        how = (
            f"Luong's “general” score: each encoder state is mapped by **W_h** to {dim} numbers and multiplied "
            "component by component with the decoder state s(i−1); the sum of those products is the energy. No "
            "tanh, no v: a large energy means the two vectors point the same way."
        )
    pieces = [
        (f"{titles[0]} ({dim} numbers)", b.query, [query]),
        (f"{titles[1]}, one row per source word ({n} × {dim})", b.keys, rows),
        (f"{titles[2]} ({n} × {dim})", b.hidden, rows),
    ]
    if additive:
        pieces.append((f"v: the scoring vector ({dim} numbers); e(i, j) = v · row j of the table above", b.v, ["v"]))
    summary = {
        f"{score} = e(i, j)": b.energies,
        "α(i, j)": b.alignment,
        f"|{key}| (length)": np.linalg.norm(b.keys, axis=1),
    }
    summary = pd.DataFrame(summary, index=rows).round(4)
    summary.insert(0, "source word", list(b.source))
    st.dataframe(summary, width="stretch", key=Bahdanau.step_table)
    st.caption(how)
    for title, values, names in pieces:
        with st.expander(title):
            st.dataframe(table(values, names, "k"), width="stretch")


def show_step(model_id: str, text: str, target: tuple[str, ...]) -> None:
    """The step picker and every number of the chosen step."""
    step = pick_step(target)
    b = data.bahdanau_step(model_id, text, step)
    rows = [f"{j} {w}" for j, w in enumerate(b.source)]
    st.latex(FORMULAS[b.variant])
    left, right = st.columns([1, 2])
    with left:
        help = "The word with the highest probability (greedy decoding)."
        st.metric(f"Step {step + 1} writes", b.target_word, help=help)
        st.caption(
            f"with probability **{b.probability:.3f}**; it attends most to **{md(b.source[int(np.argmax(b.alignment))])}** "
            f"(α = {b.alignment.max():.3f})."
        )
    with right:
        title = f"Decoder state s(i−1) read by step {step + 1} ({len(b.s_prev)} numbers)"
        show_chart(shared_build(state_strip, b.s_prev, title=title), key=Bahdanau.state)
        st.caption(
            "The decoder's memory of what it has written so far (blue positive, red negative). "
            "Step 1 reads s(0), made from the backward encoder's summary of the whole sentence."
        )
    title = f"Step {step + 1}: how much “{b.target_word}” looks at each source word"
    fig = shared_build(energies_and_weights, b.energies, b.alignment, list(b.source), title=title)
    show_chart(fig, key=Bahdanau.energies)
    st.caption(
        "Left: the raw energies (any real number). Right: after the softmax, the weights (0 to 1, summing to 1); "
        "this is row i of the alignment map above."
    )
    show_pieces(b, rows)
    fig = shared_build(context_figure, b.encoder_states, b.alignment, b.context, list(b.source))
    show_chart(fig, key=Bahdanau.context)
    st.caption(
        f"The context vector c(i) ({len(b.context)} numbers, last row) is the weighted sum of the encoder states "
        "h(j) above it, with the weights α(i, j) shown in each row's label: when one word gets almost all the "
        "weight, c(i) is almost a copy of its h(j). The decoder reads c(i) together with the previous word to write "
        f"“{md(b.target_word)}”."
    )
    frame = pd.DataFrame({"source": list(b.source), "energy": b.energies, "alpha": b.alignment}, index=rows)
    name = f"bahdanau_step{step + 1}.csv"
    csv_button("Download this step (energies, weights) as CSV", frame, name, Bahdanau.step_csv, float_format="%.6f")


def show_compare(text: str) -> None:
    """Bahdanau, Luong and the transformer's cross-attention on the same sentence, side by side."""
    st.subheader("Compare: additive, dot-product and transformer cross-attention")
    columns = side_by_side(3)

    def compare(z, target, source, title: str, key: str, zmax: float = 1.0) -> None:
        fig = shared_build(alignment_map, z, list(target), list(source), title=title, meta=key, compact=True, zmax=zmax)
        show_chart(fig, key=key)

    for column, (variant, label) in zip(columns, VARIANT_LABELS.items()):
        with column:
            rnn = data.bahdanau_trace(data.BAHDANAU_MODELS[variant], text)
            compare(rnn.alignment, rnn.target.strings, rnn.source.strings, label, Bahdanau.cmp + variant)
            st.caption(f"Output: {md(rnn.output_text)}")
    s2s = data.bahdanau_trace(data.TRANSFORMER_TRANSLATOR, text)
    cross = s2s.cross
    with columns[2]:
        left, right = st.columns(2)
        with left:
            layer = pick_index("Layer", cross.n_layers, Bahdanau.tf_layer)
        with right:
            head = pick_head(cross.n_heads, Bahdanau.tf_head, "average")
        weights = cross.pattern(layer).mean(axis=0) if head is None else cross.pattern(layer, head)
        # row t of the transformer's cross-attention reads target[t] and writes target[t + 1]
        rows = [*cross.tokens.strings[1:], "(cut)" if any("did not end" in n for n in s2s.notices) else "<eos>"]
        title = f"Transformer, layer {layer}, " + ("head average" if head is None else f"head {head}")
        top = float(weights.max())
        compare(weights, rows, cross.key_tokens.strings, title, Bahdanau.cmp_transformer, top)
        st.caption(f"Output: {md(s2s.output_text)} · white = weight {top:.2f}")
    st.caption(
        "Left: Bahdanau's additive score; middle: Luong's dot (“general”) score, same RNN otherwise; right: the "
        "cross-attention of our small encoder-decoder transformer (tiny-translator), where each of its heads has its "
        "own map and a row is the decoder position that reads the previous word to write this one (its source ends "
        "with <eos>; white is its largest weight, given under it, not 1). The RNNs have one attention and must put it "
        "on the useful word; the transformer spreads the job over heads and layers, so a single head is often far "
        "from a word alignment, and the average blurs."
    )


def main() -> None:
    st.title("Bahdanau attention")
    st.write(
        "A recurrent translator writes French one word at a time. Before each word it scores every English "
        "word, turns the scores into weights with a softmax and reads their weighted sum (Bahdanau, Cho & Bengio, "
        "2015). Type a sentence of the toy grammar and watch where it looks."
    )
    text, variant = inputs()
    if not text.strip():
        st.info("Type an English sentence of the toy grammar (or a date) to translate, or pick an example.")
        return
    if len(text) > MAX_CHARS:
        st.warning(f"The text is long: only its first {MAX_CHARS} characters are translated.")
        text = text[:MAX_CHARS]
    model_id = data.BAHDANAU_MODELS.get(variant, data.BAHDANAU_MODELS["additive"])
    if (trace := attempt(lambda: data.bahdanau_trace(model_id, text), "Translating…")) is None:
        return
    for notice in trace.notices:
        st.info(md(notice))
    show_translation(trace, text)
    st.subheader("The alignment map")
    show_map(trace, text, model_id)
    st.subheader("Step through decoding")
    show_step(model_id, text, tuple(trace.target.strings))
    show_compare(text)


main()
