"""Explore's "Write more" tab: a decoder continues the user's text; its attention over prompt + output.

The settings sit in a form, remembered with the text and model they were for (``Explore.write_request``); the model
writes on the long-work queue (``data.request_generation``) while the tab follows the job.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from app.controls.long_job import follow
from app.runtime.long_work import WRITE
from app.runtime.maps import head_view
from app.runtime.request import TraceRequest
from app.ui.charts import show_chart
from app.ui.guard import show_error
from app.ui.heatmap import map_figure
from app.ui.linked_tokens import focus, outline
from app.ui.map_data import MapData, MapView
from app.ui.safe_text import md
from app.views.explore.data import get_generation, request_generation
from app.views.explore.keys import Explore
from engine.generation import MAX_NEW_TOKENS, DecodeSettings

MODES = ("Greedy", "Sampled")
GENERATED_COLOR = "#c2410c"  # dark orange: the generated part, on text and on the chart's tick labels


def settings_form(
    form_key: str = Explore.write_form, button: str = "Write more", tokens: int = 20, prefix: str = Explore.write_prefix
) -> tuple | None:
    """The decoding settings form (Write more; an encoder-decoder's decoding on Explore); on submit, the settings as
    plain values in ``DecodeSettings`` field order (checked by ``DecodeSettings``: see :func:`remembered`)."""
    mode = st.radio(
        "How to pick each token",
        MODES,
        key=f"{prefix}_mode",
        horizontal=True,
        help="Greedy: always the most likely token (the same text every time). Sampled: draw "
        "at random from the likely tokens (a seed makes it repeatable).",
    )
    greedy = mode != "Sampled"
    off = " Greedy ignores it: pick Sampled to use it." if greedy else ""
    with st.form(form_key, enter_to_submit=True, border=True):
        left, mid, right = st.columns(3)
        with left:
            n_new = st.number_input(
                "Tokens to write",
                min_value=1,
                max_value=MAX_NEW_TOKENS,
                value=tokens,
                step=1,
                key=f"{prefix}_tokens",
                help="How many tokens the model writes, one forward "
                "pass each. It stops earlier if it writes its end token.",
            )
        with mid:
            temperature = st.slider(
                "Temperature",
                0.1,
                2.0,
                1.0,
                0.1,
                key=f"{prefix}_temperature",
                disabled=greedy,
                help="Sampled only: below 1 sharpens the guesses, above 1 flattens them." + off,
            )
            top_p = st.slider(
                "Top-p",
                0.05,
                1.0,
                1.0,
                0.05,
                key=f"{prefix}_top_p",
                disabled=greedy,
                help="Sampled only: keep the fewest likely tokens whose probabilities add up to p (1: all)." + off,
            )
        with right:
            top_k = st.number_input(
                "Top-k",
                min_value=0,
                max_value=1000,
                value=0,
                step=1,
                key=f"{prefix}_top_k",
                disabled=greedy,
                help="Sampled only: keep only the k most likely tokens (0: all)." + off,
            )
            seed = st.number_input(
                "Seed",
                min_value=0,
                max_value=2**32 - 1,
                value=0,
                step=1,
                key=f"{prefix}_seed",
                disabled=greedy,
                help="Sampled only: the same seed and settings write the same text." + off,
            )
        pressed = st.form_submit_button(button, type="primary", icon=":material/edit_note:")
    if not pressed:
        return None
    if greedy:  # greedy ignores the rest: one cache entry however the sliders stand
        return (n_new, False, 1.0, 0, 1.0, 0)
    return (n_new, True, temperature, top_k, top_p, seed)


def remembered(key: str, asked: tuple | None, request: TraceRequest) -> DecodeSettings | None:
    """Decoding settings kept in session state ``key`` with the model, text and token limit they were asked for
    (``asked``: a form just submitted); None once any of those changed. EngineError: a setting out of range."""
    view = (request.model_id, request.text, request.max_tokens)
    if asked is not None:
        st.session_state[key] = (*view, tuple(asked))
    kept = st.session_state.get(key)
    return DecodeSettings(*kept[3]) if kept and tuple(kept[:3]) == view else None


def generated_markdown(prompt: str, rest: str) -> str:
    """The prompt as plain text, then the generated part highlighted; both escaped (shown literally)."""
    lead = " " if rest[:1].isspace() else ""
    body = rest.strip()
    if not body:
        return md(prompt) + " *(the model ended the text right away)*"
    return f"{md(prompt)}{lead}:orange-background[**{md(body)}**]"


def mark_generated(fig: go.Figure, data: MapData, start: int, n_tokens: int) -> go.Figure:
    """Dashed lines where generation begins (rows below, columns right of them are the model's own tokens),
    and the tick labels of generated tokens in :data:`GENERATED_COLOR`."""
    row = float(np.searchsorted(data.q_edges, start)) - 0.5  # rows are blocks of query positions
    col = float(np.searchsorted(data.k_edges, int(np.searchsorted(data.k_pos, start)))) - 0.5
    line = {"color": GENERATED_COLOR, "width": 2, "dash": "dash"}
    if start < n_tokens:
        fig.add_shape(type="line", x0=col, x1=col, y0=0, y1=1, yref="paper", line=line)
        fig.add_shape(type="line", x0=0, x1=1, xref="paper", y0=row, y1=row, line=line)
    for axis, first in (("xaxis", col), ("yaxis", row)):
        ax = fig.layout[axis]
        names = list(fig.data[0].x if axis == "xaxis" else fig.data[0].y)
        where = {name: i for i, name in enumerate(names)}
        ax.ticktext = [
            f'<span style="color:{GENERATED_COLOR}"><b>{t}</b></span>' if where.get(v, -1) > first else t
            for v, t in zip(ax.tickvals, ax.ticktext)
        ]
    return fig


def show_write_more(request: TraceRequest, family: str, layer: int, head: int) -> None:
    """The tab: settings, the button, then the text and the chosen head over prompt + generated tokens."""
    if family != "decoder":
        st.info("Writing more text needs a decoder (a GPT-style model); pick tiny-gpt-stories.")
        return
    if request.causal is False:
        st.caption(
            "The model writes with its causal mask on, as it was trained: the mask toggle above changes "
            "the first chart only."
        )
    asked = settings_form()
    try:
        settings = remembered(Explore.write_request, asked, request)
        if settings is None:
            st.caption(
                "Set how many tokens and how to pick them, then press **Write more**: the model adds one "
                "token at a time, each time reading everything before it."
            )
            return
        request = request.with_decode(settings)
        view = MapView(layer, head)
        status = request_generation(request, pressed=asked is not None, view=view)
        if status is not None and status.status != "done":
            follow(WRITE, status, "Writing")
            return
        trace, prompt, rest = get_generation(request)
        data = head_view(request, view)
    except Exception as err:  # noqa: BLE001 — a section: its model run may raise anything; the rest of the page draws
        show_error(err)
        return
    st.markdown(generated_markdown(prompt, rest))
    for notice in trace.notices:
        st.caption(md(notice))
    start = trace.generated_from if trace.generated_from is not None else len(trace.tokens)
    fig = outline(map_figure(data, title=f"Layer {layer}, head {head} · prompt + generated"), data, focus())
    fig = mark_generated(fig, data, start, len(trace.tokens))
    show_chart(fig, key=Explore.write_chart)
    st.caption(
        f"The same head over your text and the {len(trace.tokens) - start} tokens the model wrote "
        "(highlighted above, orange labels on the chart). Rows below the dashed line are generated tokens: "
        "each one was picked after looking at every token before it, the earlier generated ones included. "
        "Grey cells are the causal mask: nothing looks ahead."
    )
