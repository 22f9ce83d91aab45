"""Sections of the Heads page beyond the model view and metrics: similarity, compare, rollout; each a function
of :class:`HeadsContext` over the cached results of ``app.runtime.heads``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.runtime.heads import (
    SIMILARITY_MAX_HEADS,
    SIMILARITY_MAX_TOKENS,
    head_metrics_table,
    head_similarity,
    heads_attention,
    rollout_maps,
)
from app.state import PERSIST, bounded, clamp, defaults
from app.ui.charts import show_chart
from app.ui.export import csv_button
from app.ui.guard import show_error
from app.ui.heatmap import attention_heatmap
from app.ui.rollout_controls import discard_rule_picker, discard_sentence
from app.ui.theme import side_by_side
from app.views.heads.context import HeadsContext, metric_columns
from app.views.heads.figures import difference_heatmap, similarity_figure
from app.views.heads.keys import Heads
from engine import AttentionTrace

PAIR_A = "The animal didn't cross the street because it was too tired."
PAIR_B = "The animal didn't cross the street because it was too wide."
FUSIONS = ("mean", "max", "min")
COMPARED = ("pattern", "score", "entropy", "sink", "previous", "self", "next", "mean_distance", "alignment")


def similarity_section(ctx: HeadsContext) -> None:
    """The head × head Jensen–Shannon divergence matrix in clustering order, and the closest pairs."""
    att = ctx.attention
    with st.spinner("Comparing every pair of heads…"):
        divergence, order, coarsened, n_layers = head_similarity(ctx.request)
    labels = [f"L{layer}H{head}" for layer in range(n_layers) for head in range(att.n_heads)]
    show_chart(similarity_figure(divergence, labels, order), key=Heads.similarity)
    st.caption(
        "How differently two heads attend: for each query token, the Jensen–Shannon divergence between the two "
        "heads' rows (natural log: 0 = identical, ln 2 ≈ 0.69 = no overlap at all), averaged over the queries. "
        "Heads are ordered by hierarchical clustering (average linkage, optimal leaf order), so **bright (yellow) "
        "blocks along the diagonal are families of heads that attend alike**, often across layers; dark means "
        "different."
    )
    if coarsened:
        st.info(
            f"Long input: to stay fast, the comparison uses {SIMILARITY_MAX_TOKENS} evenly spaced query "
            f"rows and sums the keys into {SIMILARITY_MAX_TOKENS} groups of neighbouring tokens."
        )
    if n_layers < att.n_layers:
        st.info(
            f"Only the first {n_layers} of {att.n_layers} layers are compared (at most {SIMILARITY_MAX_HEADS} heads)."
        )
    rows, cols = np.triu_indices(len(labels), k=1)  # the closest pairs: the smallest divergences
    best = np.argsort(divergence[rows, cols], kind="stable")[:10]
    pairs = {"head A": [labels[i] for i in rows[best]], "head B": [labels[j] for j in cols[best]]}
    pairs["JS divergence (nats)"] = divergence[rows[best], cols[best]]
    js = {"JS divergence (nats)": st.column_config.NumberColumn(format="%.4f")}
    st.dataframe(pd.DataFrame(pairs), hide_index=True, key=Heads.pairs, column_config=js)
    st.caption("The most alike pairs of heads (smallest divergence).")
    full = pd.DataFrame(divergence, index=labels, columns=labels)
    csv_button("Download the divergence matrix as CSV", full, "head_similarity.csv", float_format="%.6f")


def shared_top(*maps: np.ndarray) -> float:
    """The top of ONE colour scale for maps shown side by side (the largest finite value of all)."""
    tops = [float(np.nanmax(m)) for m in maps if np.isfinite(m).any()]
    return max(tops, default=1.0) or 1.0


def side_maps(maps: list[tuple], height: int, texts: tuple[str | None, ...] = (None, None)) -> None:
    """Two maps side by side on one colour scale (the same shade is the same weight in both): each ``(chart key,
    title, pattern, query labels, key labels, blocked)``, ``texts`` the sentences they show when not the page's;
    presenter mode stacks them."""
    top = shared_top(*(pattern for _, _, pattern, *_ in maps))
    for col, (key, title, pattern, q_labels, k_labels, blocked), text in zip(side_by_side(2), maps, texts):
        with col:
            fig = attention_heatmap(pattern, q_labels, k_labels, blocked=blocked, title=title, height=height, zmax=top)
            show_chart(fig, key=key, text=text)


def one_head(key: str, title: str, att: AttentionTrace, layer: int, head: int) -> tuple:
    """One head's map for :func:`side_maps`, under its own layer's mask (sliding windows may differ by layer)."""
    pattern, blocked = att.pattern(layer, head), np.isneginf(att.mask(layer))
    return key, title, pattern, att.tokens.labels(), att.key_tokens.labels(), blocked


def _head_picker(title: str, prefix: str, n_layers: int, n_heads: int, default: tuple[int, int]) -> tuple[int, int]:
    st.markdown(f"**{title}**")
    picked = []
    for column, name, n, start in zip(st.columns(2), ("Layer", "Head"), (n_layers, n_heads), default):
        key = f"{prefix}_{name.lower()}"
        clamp(key, 0, n - 1, start=start)
        picked.append(int(column.selectbox(name, range(n), key=key, **PERSIST)))
    return picked[0], picked[1]


def compare_section(ctx: HeadsContext) -> None:
    """Two heads side by side; then one head on two sentences with their difference."""
    att = ctx.attention
    st.subheader("Two heads, one sentence")
    starts = {"A": (Heads.cmp_a, ctx.head), "B": (Heads.cmp_b, (ctx.head + 1) % att.n_heads)}
    heads = {}
    for column, (name, (prefix, head)) in zip(st.columns(2), starts.items()):
        with column:
            heads[name] = _head_picker(f"Head {name}", prefix, att.n_layers, att.n_heads, (ctx.layer, head))
    side_maps(
        [one_head(f"{Heads.cmp}{n}", f"{n}: layer {ly}, head {h}", att, ly, h) for n, (ly, h) in heads.items()], 440
    )
    frame = head_metrics_table(ctx.request)
    st.dataframe(
        _metric_rows(frame, heads), hide_index=True, key=Heads.cmp_metrics, column_config=metric_columns(frame.columns)
    )
    st.caption(
        "Two heads of the same model reading the same sentence. Heads in one layer see the same input but "
        "learn different queries and keys, so they look at different tokens; the table puts their metrics "
        "side by side."
    )

    st.subheader(f"One head (layer {ctx.layer}, head {ctx.head}), two sentences")
    sentence_pair(ctx)


def _metric_rows(frame: pd.DataFrame, heads: dict[str, tuple[int, int]]) -> pd.DataFrame:
    rows = []
    for name, (layer, head) in heads.items():
        row = frame[(frame["layer"] == layer) & (frame["head"] == head)].iloc[0]
        rows.append({"": name, "layer": layer, "head": head, **{c: row[c] for c in COMPARED if c in frame.columns}})
    return pd.DataFrame(rows)


def _trace_or_message(ctx: HeadsContext, text: str, name: str) -> AttentionTrace | None:
    try:
        return heads_attention(ctx.request.with_text(text))
    except Exception as err:  # noqa: BLE001 — a section: its model run may raise anything; the rest of the page draws
        show_error(err, before=f"Sentence {name}: ")
        return None


def sentence_pair(ctx: HeadsContext) -> None:
    """The chosen head on sentences A and B; their difference B − A when the tokens line up."""
    defaults({Heads.text_a: PAIR_A, Heads.text_b: PAIR_B})
    texts = {}
    for column, name, key in zip(st.columns(2), "AB", (Heads.text_a, Heads.text_b)):
        texts[name] = column.text_input(f"Sentence {name}", key=key, max_chars=2000, **PERSIST)
    att_a, att_b = (_trace_or_message(ctx, text, name) for name, text in texts.items())
    if att_a is None or att_b is None:
        return
    layer, head = ctx.layer, ctx.head
    pat_a, pat_b = att_a.pattern(layer, head), att_b.pattern(layer, head)
    side_maps(
        [one_head(f"{Heads.sent}{n}", f"Sentence {n}", att, layer, head) for n, att in zip("AB", (att_a, att_b))],
        440,
        (texts["A"], texts["B"]),
    )
    if pat_a.shape == pat_b.shape:
        q_lab = _merged_labels(att_a.tokens.strings, att_b.tokens.strings)
        k_lab = _merged_labels(att_a.key_tokens.strings, att_b.key_tokens.strings)
        changed = [f"{x}→{y}" for x, y in zip(att_a.tokens.strings, att_b.tokens.strings) if x != y]
        pair = "A → B: " + ", ".join(changed or ["the same tokens"])
        show_chart(difference_heatmap(pat_b - pat_a, q_lab, k_lab, "Difference B − A"), key=Heads.diff, text=pair)
        st.caption(
            "The same head reading two sentences that differ in one place. Below them: B's weights minus A's — **red** "
            "where sentence B attends more, **blue** where A does; words that differ are shown as A→B. Watch the row "
            "of *it*: does the head move between *animal* and *street* when *tired* becomes *wide*?"
        )
    else:
        st.info(
            f"The two sentences have different numbers of tokens (A: {pat_a.shape[0]}×{pat_a.shape[1]}, "
            f"B: {pat_b.shape[0]}×{pat_b.shape[1]} query × key tokens), so their cells do not line up one to one "
            "and no difference map is drawn. The patterns are shown side by side, and the head's metrics (averages "
            "over all tokens) can still be compared below. Make the sentences differ by words of one token each "
            "to get a difference map."
        )
    rows = [_metric_rows(head_metrics_table(ctx.request.with_text(t)), {n: (layer, head)}) for n, t in texts.items()]
    both = pd.concat(rows, ignore_index=True)
    st.dataframe(both, hide_index=True, key=Heads.sent_metrics, column_config=metric_columns(both.columns))


def _merged_labels(a: tuple[str, ...], b: tuple[str, ...]) -> list[str]:
    return [f"{i} {x}" if x == y else f"{i} {x}→{y}" for i, (x, y) in enumerate(zip(a, b))]


def rollout_section(ctx: HeadsContext) -> None:
    """Raw (head-fused) attention of the chosen layer next to the rollout through layers 0..layer."""
    if not ctx.square:
        st.info(
            "Rollout follows **self**-attention from layer to layer. Cross-attention mixes the English sentence "
            "into the French one and does not chain across layers: pick encoder or decoder self-attention."
        )
        return
    first = ctx.attention.tokens
    class_token = f"`{first.strings[0]}`" if len(first) and first.special[0] else "the first token"
    left, middle, right = st.columns([1, 1, 2])
    says = "How the heads of a layer become one map: their mean (as in the paper), max or min."
    fusion = left.selectbox("Head fusion", FUSIONS, key=Heads.fusion, **PERSIST, help=says)
    says = "Drops that share of each layer's smallest off-diagonal weights before rolling out; sharper maps. The "
    says += "discard rule says which weights may go."
    middle.slider("Discard the weakest share of weights", 0.0, 0.9, 0.0, 0.05, key=Heads.discard, **PERSIST, help=says)
    with right:
        rule = discard_rule_picker(Heads.discard_rule, class_token)
    fusion = fusion if fusion in FUSIONS else "mean"
    discard = bounded(round(float(st.session_state.get(Heads.discard, 0.0)) * 100), 0, 90) / 100
    with st.spinner("Rolling attention out through the layers…"):
        maps, fused = rollout_maps(ctx.request, fusion, discard, rule)
    att, layer = ctx.attention, ctx.layer
    labels, blocked = att.tokens.labels(), np.isneginf(att.mask(layer))
    raw = (Heads.raw, f"Raw attention, layer {layer} ({fusion} of heads)", fused[layer], labels, labels, blocked)
    side_maps([raw, (Heads.rollout, f"Rollout, layers 0–{layer}", maps[layer], labels, labels, blocked)], height=480)
    st.caption(
        "Left: where each token looks in this layer's *input* — but after the first layer those inputs are already "
        "mixtures of tokens. Right: **attention rollout** (Abnar & Zuidema, 2020) follows the mixing through every "
        "layer up to this one: each layer's fused attention is averaged with the identity (the residual "
        "connection), and the layers are multiplied. A row says how much of each *original* token flows into "
        "that position. Pick the layer above; the last layer gives the full rollout. "
        + discard_sentence(discard, rule, class_token)
    )
