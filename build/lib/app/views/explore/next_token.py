"""Explore's "What comes next?" tab: a decoder's top-10 next tokens, re-shaped by a temperature slider that only
re-runs softmax(z / T) in numpy on the shared scores (``runtime.heads.get_next_token``), never the model."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from app.runtime.heads import get_next_token
from app.runtime.request import TraceRequest
from app.state import PERSIST
from app.ui.charts import show_chart
from app.ui.guard import attempt
from app.ui.heatmap import safe_label, unique_labels
from app.views.explore.keys import Explore
from engine.analysis.next_token import probabilities


def _temperature() -> float:
    """The slider's value, checked on the server (a forged value falls back to 1.0)."""
    value = st.slider(
        "Temperature", min_value=0.1, max_value=2.0, value=1.0, step=0.1, key=Explore.temperature, **PERSIST
    )
    try:
        t = float(value)
    except (TypeError, ValueError):
        t = math.nan
    return min(max(t, 0.1), 2.0) if math.isfinite(t) else 1.0


def next_token_figure(tokens: tuple[str, ...], probs: list[float], temperature: float) -> go.Figure:
    """Horizontal bars, the most likely token on top; labels escaped like every other chart's."""
    labels = unique_labels([safe_label(t) for t in tokens])
    fig = go.Figure(
        go.Bar(
            x=probs,
            y=labels,
            orientation="h",
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
            text=[f"{p:.1%}" for p in probs],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.update_layout(
        title=f"Next token at temperature {temperature:.1f}",
        height=360,
        xaxis={"title": "probability", "range": [0, 1.12]},  # room for the numbers
        yaxis={"autorange": "reversed", "type": "category"},
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
    )
    return fig


def show_next_token(request: TraceRequest, family: str) -> None:
    """The tab's content: a one-line note for encoders, else the bars and the temperature slider."""
    if family != "decoder":
        st.info("Next-token prediction needs a decoder (a GPT-style model); pick tiny-gpt-stories.")
        return
    if (nt := attempt(lambda: get_next_token(request), "Running the model once for its next-token scores…")) is None:
        return
    t = _temperature()
    p = probabilities(nt.logits, t)
    probs = [float(p[i]) for i in nt.top_ids]
    show_chart(next_token_figure(nt.top_tokens, probs, t), key=Explore.next_chart, config={"displayModeBar": False})
    st.caption(
        "Each bar is how likely the model thinks that token comes right after your text: its ten best guesses "
        "out of the whole vocabulary. Temperature divides the scores before they become probabilities: low "
        "values give the top token almost everything, high values make the guesses flatter."
    )
