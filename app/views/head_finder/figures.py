"""The Head finder's pictures: every head as a point of two metrics coloured by a third, and a top snippet as a line
of tokens with the query and the key it attends to marked (user and corpus text escaped: shown literally)."""

from __future__ import annotations

import html
from typing import Any

from app.runtime.heads import HEAD_BLOCKS
from app.ui.safe_text import md
from app.views.head_finder.data import Snippet
from app.views.head_finder.keys import METRICS, head_id

CHOSEN = "#d62728"  # the chosen head's ring
CONTEXT = 12  # tokens shown on each side of a snippet's query and key
QUERY, KEY, BOTH = "orange", "blue", "violet"  # Streamlit's background colours: the query, the key, a token both


def head_label(row: dict[str, Any]) -> str:
    """ "Layer 1, head 2" (an encoder-decoder's: "Cross-attention: layer 0, head 1")."""
    name = f"layer {row['layer']}, head {row['head']}"
    return name.capitalize() if row["block"] == "self" else f"{HEAD_BLOCKS.get(row['block'], row['block'])}: {name}"


def plotted(rows: list[dict[str, Any]], metrics: tuple[str, ...]) -> list[int]:
    """The rows that have every one of ``metrics`` (cross-attention has no previous token, induction, …)."""
    return [i for i, row in enumerate(rows) if all(row.get(m) is not None for m in metrics)]


def scatter(rows: list[dict[str, Any]], x: str, y: str, colour: str, chosen: int | None) -> dict[str, Any]:
    """Every head of ``rows`` (a table's ``heads``) with ``x``, ``y`` and ``colour``, a ring around row ``chosen``;
    each point's ``customdata`` is its head id (a click picks it)."""
    shown = plotted(rows, (x, y, colour))
    names = [html.escape(head_label(rows[i])) for i in shown]
    hover = (
        f"<b>%{{text}}</b><br>{METRICS[x]} %{{x:.3f}}<br>{METRICS[y]} %{{y:.3f}}"
        f"<br>{METRICS[colour]} %{{marker.color:.3f}}<extra></extra>"
    )
    ids = [[head_id(rows[i]["block"], rows[i]["layer"], rows[i]["head"])] for i in shown]
    points = {
        "type": "scatter",
        "mode": "markers",
        "x": [rows[i][x] for i in shown],
        "y": [rows[i][y] for i in shown],
        "text": names,
        "customdata": ids,
        "hovertemplate": hover,
        "marker": {
            "color": [rows[i][colour] for i in shown],
            "colorscale": "Viridis",
            "size": 12,
            "line": {"width": 1, "color": "#333333"},
            "colorbar": {"title": {"text": METRICS[colour]}, "thickness": 12},
        },
    }
    data = [points]
    if chosen in shown:
        row = rows[chosen]
        ring = {"color": "rgba(0,0,0,0)", "size": 22, "line": {"width": 3, "color": CHOSEN}}
        data.append(
            {"type": "scatter", "mode": "markers", "x": [row[x]], "y": [row[y]], "marker": ring, "hoverinfo": "skip"}
        )
    return {
        "data": data,
        "layout": {
            "title": {"text": f"Every head: {METRICS[y]} against {METRICS[x]}", "x": 0.0},
            "height": 480,
            "showlegend": False,
            "xaxis": {"title": {"text": METRICS[x]}, "zeroline": False},
            "yaxis": {"title": {"text": METRICS[y]}, "zeroline": False},
            "margin": {"l": 70, "r": 20, "t": 60, "b": 60},
        },
    }


def marked(tokens: tuple[str, ...], marks: dict[int, str], lo: int, hi: int) -> str:
    """``tokens[lo:hi]`` as markdown, each token literal, those of ``marks`` on their background colour in bold."""
    words = [f":{marks[i]}-background[**{md(t)}**]" if i in marks else md(t) for i, t in enumerate(tokens[lo:hi], lo)]
    return ("… " if lo > 0 else "") + " ".join(words) + (" …" if hi < len(tokens) else "")


def snippet_lines(snippet: Snippet, square: bool) -> list[str]:
    """A snippet as markdown lines: one line of tokens in self-attention (the query and key marked, up to
    :data:`CONTEXT` tokens around them); the queries' and keys' sequences apart in cross-attention."""
    q, k = snippet.query, snippet.key
    if square:
        lo, hi = max(0, min(q, k) - CONTEXT), min(len(snippet.queries), max(q, k) + CONTEXT + 1)
        return [marked(snippet.queries, {q: BOTH} if q == k else {q: QUERY, k: KEY}, lo, hi)]
    return [
        "Output (queries): " + marked(snippet.queries, {q: QUERY}, max(0, q - CONTEXT), q + CONTEXT + 1),
        "Input (keys): " + marked(snippet.keys, {k: KEY}, max(0, k - CONTEXT), k + CONTEXT + 1),
    ]
