"""The Pretraining page's "Next sentence and [CLS]" tab: BERT's next-sentence prediction, learned on the page by a
linear head on [CLS], and what that fine-tuning changed in the encoder's attention.

The fine-tuning runs on the long-work lane as this session's job of kind ``NSP`` (the colour task's
pattern: a queue place, then progress, then the result kept in the session). The result
(``engine.training.nsp.NspResult``) is plain numbers: the charts here only draw it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.controls.long_job import run_job
from app.runtime.long_work import NSP
from app.state import default
from app.ui.charts import show_chart
from app.ui.guard import show_error
from app.ui.heatmap import attention_heatmap
from app.ui.theme import side_by_side
from app.views.pretraining.data import fine_tune_start, nsp_examples
from app.views.pretraining.keys import FINETUNE_LRS
from app.views.pretraining.keys import Pretraining as P

SHARES = ("sentence A", "sentence B", "[CLS] and [SEP]")  # engine.training.nsp.SHARES, the page's names
NO_SEGMENTS = (
    "BERT adds a **segment embedding** (sentence A or B) to every token. Our encoder has none: it was "
    "pretrained on one story at a time with token and position embeddings only, so here the `[SEP]` "
    "between A and B is the only thing that marks where B starts."
)


def head_change_chart(change: np.ndarray, title: str, key: str, zmax: float | None = None) -> None:
    """``[layer, head]`` values as a small heatmap (layers down, heads across): how far each head moved."""
    layers = [f"layer {i}" for i in range(change.shape[0])]
    heads = [f"head {h}" for h in range(change.shape[1])]
    fig = attention_heatmap(change, layers, heads, title=title, height=300, zmax=zmax)
    fig.update_xaxes(title_text="head")
    fig.update_yaxes(title_text="layer")
    show_chart(fig, key=key)


def most_moved(change: np.ndarray, n: int = 3) -> str:
    """The ``n`` heads that moved most, as "layer 1 head 2 (0.41), …"."""
    order = np.argsort(-change, axis=None)[:n]
    heads = change.shape[1]
    return ", ".join(f"layer {i // heads} head {i % heads} ({change.flat[i]:.2f})" for i in order)


@dataclass(frozen=True)
class FineTune:
    """A fine-tuning section of the page (the colour task's, next-sentence prediction's): its job's kind and
    words, what draws its running curve, its default steps, what a step is, and its session keys."""

    kind: str
    what: str
    button: str
    curve: Callable[[Any], None]
    default_steps: int
    a_step: str
    steps_key: str
    lr_key: str
    go_key: str
    result_key: str


def fine_tune(job: FineTune) -> Any:
    """The steps and learning-rate controls and the button, then the job (start → follow → collect); its result."""
    left, right, button = st.columns([2, 2, 1], vertical_alignment="bottom")
    with left:
        default(job.steps_key, job.default_steps)
        steps = st.slider("Steps", 50, 500, step=50, key=job.steps_key, help=f"Training steps of {job.a_step}.")
    with right:
        default(job.lr_key, 1e-3)
        lr = st.select_slider("Learning rate", FINETUNE_LRS, key=job.lr_key, format_func=lambda x: f"{x:g}")
    with button:
        pressed = st.button(job.button, type="primary", icon=":material/model_training:", key=job.go_key)
    start = (lambda: fine_tune_start(job.kind, steps, lr)) if pressed else None
    return run_job(job.kind, job.what, start, keep=job.result_key, extra=job.curve)


def next_sentence() -> None:
    st.write(
        "BERT's second pretraining task: given two pieces of text, A and B, is B what really comes next? Half "
        "of the pairs are real, half take B from another story. The answer is read from the first position, "
        "[CLS] (our `<bos>`), by a linear layer on its final vector: the same head "
        "`AutoModelForSequenceClassification` puts on a pretrained model for any labelled task. Here our "
        "masked-LM encoder learns it, and you can see which heads change to answer."
    )
    st.info(NO_SEGMENTS, icon=":material/info:")
    _examples()
    result = fine_tune(
        FineTune(NSP, "NSP fine-tuning", "Fine-tune on NSP", _running_curve, 300, "32 pairs each (a few "
                 "seconds to a minute)", P.nsp_steps, P.nsp_lr, P.nsp_go, P.nsp_result)
    )  # fmt: skip
    if result is None:
        st.caption(
            "Press **Fine-tune on NSP**: the held-out accuracy starts at a coin flip (the head is untrained) "
            "and climbs as the encoder learns to compare B with A."
        )
        return
    show_nsp_result(result)


def _examples() -> None:
    try:
        pairs = nsp_examples()
    except Exception as err:  # noqa: BLE001 — a section: its model run may raise anything; the rest of the page draws
        show_error(err)
        return
    frame = pd.DataFrame(
        {
            "A: the story so far": [_tail(" ".join(p.a)) for p in pairs],
            "B": [" ".join(p.b) for p in pairs],
            "does B come next?": ["yes" if p.is_next else "no" for p in pairs],
        }
    )
    st.dataframe(frame, hide_index=True, key=P.nsp_examples)
    st.caption(
        "Training pairs as the task makes them from generated stories (seeded). As in BERT, where a "
        '"sentence" is any span of text, A is a story\'s opening up to some sentence; B is the sentence '
        "after it or a sentence (never an opening) from another story, each with probability ½. The model "
        "reads them as `[CLS] A [SEP] B [SEP]`."
    )


def _tail(text: str, limit: int = 90) -> str:
    """The end of ``text`` (where A meets B), cut at the front with "…"."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def running_figure(steps: list[int], accuracy: list[float], total: int, chance: float | None = 0.5) -> dict:
    """The held-out accuracy measured so far, on fixed axes (steps 0 to ``total``, accuracy 0 to 100 %), so the
    chart keeps its frame while points arrive; a dashed line at ``chance`` (none when None).

    A plain figure dict (:func:`app.ui.charts.ready` takes it as it is): a job's page redraws this every
    poll, and Plotly's validated objects cost that poll ~5 ms more, an Altair chart ~40 ms (docs/BENCHMARKS.md
    "Long work next to a class")."""
    layout: dict = {
        "height": 240,
        "margin": {"l": 5, "r": 5, "t": 30, "b": 5},
        "title": {"text": "Held-out accuracy so far", "x": 0.0},
        "xaxis": {"title": {"text": "step"}, "range": [0, max(total, 1)]},
        "yaxis": {"title": {"text": "held-out accuracy"}, "range": [0, 1], "tickformat": ".0%"},
        "showlegend": False,
    }
    if chance is not None:
        line = {"color": "#888888", "dash": "dash"}
        layout["shapes"] = [
            {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": chance, "y1": chance, "line": line}
        ]
        layout["annotations"] = [
            {
                "text": "chance",
                "xref": "paper",
                "x": 0,
                "y": chance,
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
            }
        ]
    trace = {
        "type": "scatter",
        "x": list(steps),
        "y": list(accuracy),
        "mode": "lines+markers",
        "name": "held-out",
        "line": {"width": 2, "color": "#1f5fbf"},
        "hovertemplate": "step %{x}: %{y:.0%}<extra>held-out accuracy</extra>",
    }
    return {"data": [trace], "layout": layout}


def show_running_accuracy(status, key: str, chance: float | None = 0.5) -> int | None:
    """A running fine-tune's held-out accuracy so far (its progress updates with a ``step`` and an ``accuracy``), as
    :func:`running_figure`; the run's total steps, or None and no chart before its first point (Streamlit's Vega
    chart of no points filled the browser console with "Infinite extent" warnings)."""
    points = [u for u in status.updates if hasattr(u, "step") and hasattr(u, "accuracy")]
    if not points:
        return None
    total = max(getattr(u, "steps", 0) or 0 for u in points) or points[-1].step
    show_chart(running_figure([u.step for u in points], [u.accuracy for u in points], total, chance), key=key)
    return total


def _running_curve(status) -> None:
    """The held-out accuracy of a running NSP fine-tune so far, with what it shows."""
    total = show_running_accuracy(status, f"{P.nsp_loss}_running")
    if total is not None:
        st.caption(
            f"The fine-tune running now: accuracy on the held-out pairs (stories it never trains on), measured "
            f"every few of its {total} steps; the dashed line is chance (50 %). The full loss curve follows when it "
            "ends."
        )


def loss_figure(curve) -> go.Figure:
    """Each step's training loss, the held-out loss where it was measured, and ln 2 (a coin flip's loss)."""
    steps = np.arange(1, len(curve.train_loss) + 1)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=steps,
            y=curve.train_loss,
            mode="lines",
            name="training batch (32 pairs)",
            line=dict(width=1, color="#9bb7e0"),
            hovertemplate="step %{x}: %{y:.3f}<extra>training batch</extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=curve.eval_steps,
            y=curve.eval_loss,
            mode="lines+markers",
            name="held-out pairs",
            line=dict(width=2, color="#1f5fbf"),
            hovertemplate="step %{x}: %{y:.3f}<extra>held-out pairs</extra>",
        )
    )
    fig.add_hline(
        y=math.log(2),
        line_dash="dash",
        line_color="#888888",
        annotation_text="ln 2: a coin flip",
        annotation_position="top right",
    )
    fig.update_layout(
        height=300,
        margin=dict(l=5, r=5, t=30, b=5),
        title=dict(text="Loss while fine-tuning", x=0.0),
        xaxis=dict(title="step"),
        yaxis=dict(title="cross-entropy (nats)", rangemode="tozero"),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def curve_csv(curve) -> bytes:
    """The loss curve as CSV: one row per step, the held-out columns filled where they were measured."""
    frame = pd.DataFrame({"step": np.arange(len(curve.train_loss) + 1), "training loss": [np.nan, *curve.train_loss]})
    held = pd.DataFrame(
        {"step": curve.eval_steps, "held-out loss": curve.eval_loss, "held-out accuracy": curve.eval_accuracy}
    )
    return frame.merge(held, on="step", how="left").to_csv(index=False, float_format="%.6f").encode("utf-8")


def shares_figure(before: np.ndarray, after: np.ndarray, title: str) -> go.Figure:
    """Where [CLS] looks (its weight on A, on B, on the specials), before and after, as grouped bars."""
    fig = go.Figure()
    for values, name, colour in ((before, "before", "#9bb7e0"), (after, "after", "#1f5fbf")):
        fig.add_trace(
            go.Bar(
                x=list(SHARES),
                y=values,
                name=name,
                marker_color=colour,
                text=[f"{v:.0%}" for v in values],
                textposition="auto",
                hovertemplate="%{x}: %{y:.1%}<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(
        height=300,
        margin=dict(l=5, r=5, t=30, b=5),
        title=dict(text=title, x=0.0),
        barmode="group",
        yaxis=dict(title="share of [CLS]'s attention", range=[0, 1], tickformat=".0%"),
        legend=dict(orientation="h", y=-0.2),
    )
    return fig


def show_nsp_result(result) -> None:
    a, b, c = st.columns(3)
    a.metric("NSP accuracy before", f"{result.accuracy_before:.0%}", help="The untrained head: a coin flip.")
    b.metric(
        "NSP accuracy after",
        f"{result.accuracy_after:.0%}",
        delta=f"{result.accuracy_after - result.accuracy_before:+.0%}",
    )
    c.metric("Chance", f"{result.chance:.0%}", help="Half the pairs are real.")
    st.caption(
        f"Accuracy on {result.n_test} held-out pairs made from stories the fine-tuning never saw (it trained "
        f"on {result.n_train} pairs). A model this small learns NSP only part of the way: a few hundred steps "
        "take it some way above chance, and more steps barely help. NSP can often be answered from the topic "
        "alone (here: does B name someone A never mentioned?), and RoBERTa (Liu et al., 2019) later found that "
        "BERT does as well or slightly better without it."
    )
    show_chart(loss_figure(result.curve), key=P.nsp_loss)
    st.caption(
        "Cross-entropy of the classifier's two scores (not next, is next): thin, each training batch; "
        "bold, all the held-out pairs, measured every few steps. The dashed line is ln 2 ≈ 0.69, the loss "
        "of always answering ½: below it, the model knows something about which B's belong."
    )
    st.download_button(
        "Download the loss curve as CSV",
        curve_csv(result.curve),
        file_name="nsp_loss_curve.csv",
        mime="text/csv",
        key=P.nsp_curve_csv,
        on_click="ignore",
    )
    left, right = side_by_side(2)
    with left:
        head_change_chart(result.change, "How far each head's attention moved", P.nsp_change)
        st.caption(
            "Mean total-variation distance between each head's patterns before and after fine-tuning, over "
            f"every query of held-out pairs (0: unchanged, 1: completely different). Moved most: "
            f"{most_moved(result.change)}."
        )
    with right:
        head_change_chart(result.cls_change, "How far [CLS]'s attention moved", P.nsp_cls_change)
        st.caption(
            "The same distance for the [CLS] row alone, the one position the classifier reads. Moved "
            f"most: {most_moved(result.cls_change)}."
        )
    layer, head = (int(x) for x in np.unravel_index(np.argmax(result.cls_change), result.cls_change.shape))
    show_chart(
        shares_figure(
            result.shares_before[layer, head],
            result.shares_after[layer, head],
            f"Where [CLS] looks, layer {layer} head {head}",
        ),
        key=P.nsp_shares,
    )
    st.caption(
        "The head whose [CLS] row moved most: the share of [CLS]'s attention on sentence A, on sentence B and "
        "on the special tokens, averaged over held-out pairs, before and after fine-tuning."
    )
    inspect_pair(result)


def _kind(probe) -> str:
    return "real next" if probe.is_next else "random B"


def _pair_label(i: int, probe) -> str:
    words = [t for t in probe.tokens if t not in ("[CLS]", "[SEP]")]
    return f"Pair {i + 1} ({_kind(probe)}): …{' '.join(words[-9:])}"


def _cls_map(rows: np.ndarray, tokens: list[str], sep: int, title: str, zmax: float):
    """[CLS]'s attention ``[layer, head, key]`` as a heatmap, one row per head, a line where B starts."""
    labels = [f"L{layer} H{head}" for layer in range(rows.shape[0]) for head in range(rows.shape[1])]
    fig = attention_heatmap(rows.reshape(-1, rows.shape[-1]), labels, tokens, title=title, height=380, zmax=zmax)
    fig.add_vline(x=sep + 0.5, line_width=2, line_color="#d62728")
    fig.update_yaxes(title_text="layer and head")
    return fig


def inspect_pair(result) -> None:
    """One held-out pair: [CLS]'s attention in every head before and after, and the classifier's answer."""
    st.subheader("Inspect one pair")
    probes = result.probes
    i = st.selectbox(
        "Held-out pair", range(len(probes)), format_func=lambda k: _pair_label(k, probes[k]), key=P.nsp_pair
    )
    probe = probes[i if i is not None else 0]
    a, b, c = st.columns(3)
    a.metric("Truth", _kind(probe), help="Real next: B is the sentence after A. Random B: B is from another story.")
    b.metric("P(is next) before", f"{probe.p_before:.0%}")
    c.metric(
        "P(is next) after",
        f"{probe.p_after:.0%}",
        delta=f"{probe.p_after - probe.p_before:+.0%}",
        delta_color="normal" if probe.is_next else "inverse",
    )  # green when it moved towards the truth
    tokens = [f"{k} {t}" for k, t in enumerate(probe.tokens)]
    sep = probe.segments.index(1) - 1  # the [SEP] after A
    zmax = float(max(probe.cls_before.max(), probe.cls_after.max()))
    cols = side_by_side(2)
    for col, rows, when in ((cols[0], probe.cls_before, "before"), (cols[1], probe.cls_after, "after")):
        with col:
            show_chart(_cls_map(rows, tokens, sep, f"[CLS]'s attention, {when}", zmax), key=f"{P.nsp_inspect}{when}")
    st.caption(
        "Each row is one head's attention from [CLS] to every token of the pair (rows sum to 1), on one colour "
        f"scale before and after; the red line is where sentence B starts (after the [SEP] at {sep}). "
        "Words the head reads here are what the classifier's one vector can be built from."
    )


__all__ = [
    "head_change_chart",
    "loss_figure",
    "most_moved",
    "next_sentence",
    "running_figure",
    "show_running_accuracy",
    "shares_figure",
    "show_nsp_result",
]
