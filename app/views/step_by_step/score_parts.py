"""Step by step's "What made this score?": the raw score q·k of the chosen query and key split into parts that add
up to it (``engine.analysis.score_terms``) as a waterfall with its numbers, what to notice, every part in a folded
table and as CSV, and for a RoPE model each frequency band's term against the query–key distance."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.links import app_link
from app.runtime.request import TraceRequest
from app.state import PERSIST, K, choose, default_from, settle
from app.ui.charts import show_chart
from app.ui.guard import attempt
from app.ui.heatmap import safe_label
from app.ui.safe_text import md
from app.url_state import page_params
from app.views.step_by_step.data import band_distances, score_parts
from app.views.step_by_step.keys import SPLITS, Step
from app.views.step_by_step.tables import frame_table, rounded

TOP = 12  # parts drawn; the rest are folded into one "other (N parts)" bar
UP, DOWN, TOTAL_COLOR = "#1f77b4", "#d62728", "#555555"
#: what a source pair's kinds say about the head (query kind, key kind; "head", "MLP": an earlier one)
MEANINGS = {
    ("position", "position"): "this head looks by position, not content",
    ("token", "token"): "this head matches what the two tokens are (content), not where they are",
    ("token", "position"): "the query's word asks for a place in the sentence",
    ("position", "token"): "the query's place asks for a kind of word",
    ("bias", "bias"): "a part every key shares much alike, so it hardly changes where the head looks",
}


def score_link(layer: int, head: int, query: int, key: int) -> str:
    """A link to "What made this score?" of the shown sentence and model at (layer, head, query, key), open."""
    cell = {K.layer: layer, K.head: head, Step.query: query, Step.key: key, Step.parts: True}
    return app_link("step_by_step", page_params("step_by_step") | cell)


def splits_for(attention) -> list[str]:
    """The splits offered: sources always (the engine says where they are not done), RoPE bands and ALiBi where the
    model uses them."""
    rope, alibi = attention.pos_encoding_kind == "rope", attention.alibi_slopes is not None
    return ["sources", *(["rope_bands"] if rope else []), *(["alibi"] if alibi else [])]


def folded(terms: dict[str, float], top: int = TOP) -> dict[str, float]:
    """The ``top`` largest parts in their order, the rest summed into one ``"other (N parts)"``."""
    if len(terms) <= top + 1:
        return dict(terms)
    keep = set(sorted(terms, key=lambda name: -abs(terms[name]))[:top])
    out = {name: value for name, value in terms.items() if name in keep}
    out[f"other ({len(terms) - top} parts)"] = sum(value for name, value in terms.items() if name not in keep)
    return out


def waterfall(parts: dict[str, float], total: float, total_label: str, title: str) -> go.Figure:
    """Horizontal waterfall: one bar per part from the top, then ``total_label`` (the trace's score) at ``total``."""
    names = [safe_label(name) for name in parts] + [total_label]
    bar = go.Waterfall(
        orientation="h",
        y=names,
        x=[*parts.values(), total],
        measure=["relative"] * len(parts) + ["total"],
        text=[f"{v:+.3f}" for v in parts.values()] + [f"{total:.3f}"],
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{y}: %{x:.4f}<extra></extra>",
        increasing=dict(marker=dict(color=UP)),
        decreasing=dict(marker=dict(color=DOWN)),
        totals=dict(marker=dict(color=TOTAL_COLOR)),
        connector=dict(line=dict(width=1, dash="dot")),
    )
    ends = np.concatenate([[0.0], np.cumsum(list(parts.values())), [total]])
    low, high = float(ends.min()), float(ends.max())
    pad = 0.2 * (high - low or 1.0)  # room for the numbers beside the bars
    fig = go.Figure(bar)
    fig.update_layout(
        title=dict(text=html.escape(title, quote=True), x=0.0, font=dict(size=15)),
        height=110 + 26 * len(names),
        margin=dict(l=10, r=40, t=40, b=10),
        yaxis=dict(autorange="reversed", automargin=True),
        xaxis=dict(title="adds to the score", zeroline=True, range=[low - pad, high + pad]),
        showlegend=False,
    )
    return fig


def kinds(name: str) -> tuple[str, ...]:
    """``"head 0.3 · token"`` → ``("head", "token")``: each side's kind of source."""
    return tuple(side.strip().split(" ")[0] for side in name.split("·"))


def notice(terms: dict[str, float], by: str) -> str:
    """What to notice: the largest part, and for sources what its kind of pair says about the head."""
    size = sum(abs(v) for v in terms.values()) or 1.0
    if by != "sources":
        name = max(terms, key=lambda n: abs(terms[n]))
        share = f"**{md(name)}** ({terms[name]:+.3f}, {abs(terms[name]) / size:.0%} of the parts' total size)"
        if by == "alibi":
            return f"The larger part is {share}: " + (
                "what the tokens are matters more here than how far apart they are."
                if name.startswith("content")
                else "the distance penalty outweighs the content: this head prefers near keys."
            )
        return (
            f"The largest part is {share}. Low band numbers turn fast (about a radian per token): a large fast band "
            "picks keys by distance. High bands barely turn over a sentence: they compare content."
        )
    groups: dict[tuple[str, ...], float] = {}
    for name, value in terms.items():
        groups[kinds(name)] = groups.get(kinds(name), 0.0) + value
    pair = max(groups, key=lambda g: abs(groups[g]))
    single = max(terms, key=lambda n: abs(terms[n]))
    if "head" in pair or "MLP" in pair:
        why = "an earlier layer's output shapes where this head looks: a circuit across layers"
    else:
        why = MEANINGS.get(pair, "the query's and the key's sources meet in this pair")
    text = f"The biggest push comes from **{' · '.join(pair)}** pairs ({groups[pair]:+.3f}): {why}."
    return text if kinds(single) == tuple(single.split(" · ")) else text + f" Its largest part: **{md(single)}**."


def band_map(distances: np.ndarray, bands: dict[str, np.ndarray], picked: int) -> go.Figure:
    """Heatmap: each band (rows, fastest first) × query–key distance, the band's mean term; ``picked`` framed."""
    z = np.array(list(bands.values()))
    edge = float(np.abs(z).max()) or 1.0
    cells = go.Heatmap(
        z=z,
        x=distances,
        y=list(bands),
        colorscale="RdBu",
        reversescale=True,
        zmin=-edge,
        zmax=edge,
        colorbar=dict(title="mean term"),
        hovertemplate="%{y}, distance %{x}: %{z:.4f}<extra></extra>",
    )
    fig = go.Figure(cells)
    fig.add_vline(x=picked, line=dict(color="black", width=1, dash="dot"))
    fig.update_layout(
        title=dict(text="Each band's term by distance", x=0.0, font=dict(size=15)),
        height=140 + len(bands) * max(8, min(26, 640 // len(bands))),
        margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(title="distance: query position − key position"),
        yaxis=dict(autorange="reversed"),
    )
    return fig


def band_caption(distances: np.ndarray, bands: dict[str, np.ndarray], picked: int) -> str:
    """Which band carries "the previous token" (the most at distance 1) and which stays flattest (content)."""
    text = (
        "Each row is one rotation band's term of q·k, averaged over every query–key pair of the sentence at that "
        f"distance (dotted line: your key, distance {picked}). A row that changes with the distance carries position; "
        "a flat row carries content."
    )
    if 1 in distances and len(distances) > 2:
        at_one = int(np.flatnonzero(distances == 1)[0])
        prev = max(bands, key=lambda b: bands[b][at_one])
        flat = min(bands, key=lambda b: float(np.std(bands[b])) / (float(np.abs(bands[b]).mean()) or 1.0))
        text += (
            f" At distance 1 (the previous token) **{prev}** adds the most ({bands[prev][at_one]:+.3f}); "
            f"**{flat}** varies least with the distance."
        )
    if picked != 1 and picked in distances:
        at = int(np.flatnonzero(distances == picked)[0])
        most = max(bands, key=lambda b: bands[b][at])
        text += f" At your key's distance {picked}, **{most}** adds the most ({bands[most][at]:+.3f})."
    return text


def parts_csv(terms: dict[str, float]) -> bytes:
    """Every part at full precision, in the engine's order."""
    frame = pd.DataFrame({"part": list(terms), "value": list(terms.values())})
    return frame.to_csv(index=False, float_format="%.8g").encode("utf-8")


def pick_key(labels: list[str], allowed: list[int], weights: np.ndarray) -> int:
    """The key-token picker over the keys the query may look at; starts on the one it weighs most."""
    best = max(allowed, key=lambda j: weights[j])
    if default_from(Step.key, lambda: best) not in allowed:
        settle(Step.key, best)
    says = "The key token whose score with the query is taken apart."
    return int(st.selectbox("Key token", allowed, format_func=labels.__getitem__, key=Step.key, help=says, **PERSIST))


def score_section(request: TraceRequest, attention, steps, cell: tuple[int, int, int], labels: list[str], asks: str):
    """The folded section: key and split pickers, the waterfall, what to notice, the table, the RoPE band chart.
    ``cell``: (layer, head, query); ``labels`` name the keys, ``asks`` the query."""
    layer, head, query = cell
    panel = st.expander("What made this score?", key=Step.parts, on_change="rerun", icon=":material/waterfall_chart:")
    if not panel.open:
        return
    with panel:
        allowed = [j for j in range(len(labels)) if not steps.blocked[0, j]]
        if not allowed:
            st.caption("The mask blocks every key of this query: there is no score to take apart.")
            return
        splits = splits_for(attention)
        choose(Step.split, splits)
        left, right = st.columns([1, 2])
        with left:
            key = pick_key(labels, allowed, steps.weights[0])
        with right:
            by = st.radio("Split", splits, format_func=SPLITS.get, key=Step.split, horizontal=True, **PERSIST)
        if not show_split(request, steps, (*cell, key), (asks, labels[key]), by):
            others = [SPLITS[s] for s in splits if s != by]
            st.caption(f"Pick another split above: {', '.join(others)}." if others else "No other split applies here.")
        if by == "rope_bands":
            show_bands(request, layer, head, query - key + attention.n_keys - attention.n_queries)


def show_split(request: TraceRequest, steps, cell: tuple[int, int, int, int], names: tuple[str, str], by: str) -> bool:
    """One split's waterfall, caption, folded table and CSV (False: the engine's message shown instead);
    ``names``: the query's and the key's labels."""
    layer, head, query, key = cell
    if (terms := attempt(lambda: score_parts(request, *cell, by), "Taking the score apart…")) is None:
        return False
    alibi = by == "alibi"
    total = float((steps.masked if alibi else steps.raw)[0, key])
    total_label = "= score after scale and ALiBi" if alibi else "= raw score"
    parts = folded(terms)
    title = f"{'Score' if alibi else 'q·k'} of {names[0]} → {names[1]}, layer {layer} head {head}"
    show_chart(waterfall(parts, total, total_label, title), key=Step.parts_chart)
    what = {
        "sources": "one per (query source · key source) pair, a source being the token or position embedding, an "
        "earlier head or MLP, or the biases (LayerNorm's scale held at its value for this sentence)",
        "rope_bands": "each rotation frequency band of the rotated q and k (band 0 turns fastest)",
        "alibi": "the content term q·k·scale and ALiBi's distance penalty −m·|i − j|",
    }[by]
    folds = f" The {len(terms) - TOP} smallest parts are summed into one bar." if len(parts) < len(terms) else ""
    st.caption(
        f"The score **{md(names[0])} → {md(names[1])}** ({total:.3f}) split into {len(terms)} parts that add "
        f"up to it exactly: {what}. Bars go right when a part raises the score, left when it lowers it.{folds} "
        + notice(terms, by)
    )
    with st.expander(f"All {len(terms)} parts as a table"):
        st.dataframe(frame_table({"adds": rounded(list(terms.values()))}, list(terms)), key=Step.parts_table)
    name = f"score_parts_{by}_L{layer}_H{head}_q{query}_k{key}.csv"
    csv = parts_csv(terms)
    st.download_button(
        "Download every part as CSV", csv, name, "text/csv", key=Step.parts_csv, icon=":material/download:"
    )
    return True


def show_bands(request: TraceRequest, layer: int, head: int, picked: int) -> None:
    """The band × distance chart of a RoPE head, with what it shows."""
    if (found := attempt(lambda: band_distances(request, layer, head))) is None:
        return
    distances, bands = found
    show_chart(band_map(distances, bands, picked), key=Step.bands_chart)
    st.caption(band_caption(distances, bands, picked))
