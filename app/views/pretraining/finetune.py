"""The Pretraining page's fine-tuning tabs (the colour task; next-sentence prediction on [CLS]), both one
:func:`fine_tune_tab` over this session's long job, and what the fine-tuning changed in the encoder's attention."""

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
from app.runtime.long_work import FINETUNE, NSP
from app.state import default
from app.ui.charts import show_chart
from app.ui.export import csv_button
from app.ui.guard import attempt
from app.ui.heatmap import attention_heatmap
from app.ui.theme import side_by_side
from app.views.pretraining.data import fine_tune_start, nsp_examples
from app.views.pretraining.keys import FINETUNE_LRS
from app.views.pretraining.keys import Pretraining as P
from app.views.train.charts import line_chart
from engine.job_records import JobStatus
from engine.text import shorten

SHARES = ("sentence A", "sentence B", "[CLS] and [SEP]")  # engine.training.nsp.SHARES, the page's names
NO_SEGMENTS = (
    "BERT adds a **segment embedding** (sentence A or B) to every token. Our encoder has none: it was "
    "pretrained on one story at a time with token and position embeddings only, so here the `[SEP]` "
    "between A and B is the only thing that marks where B starts."
)
BLUE, PALE, GREY = "#1f5fbf", "#9bb7e0", "#888888"


@dataclass(frozen=True)
class FineTune:
    """A fine-tuning tab: its job's kind and words, its default steps and what a step is, its session keys (steps,
    learning rate, button, result, running chart), what it says before a run, the running curve's chance line and
    caption (``{total}``: the run's steps), and what draws the result."""

    kind: str
    what: str
    button: str
    default_steps: int
    a_step: str
    keys: tuple[str, str, str, str, str]
    idle: str
    chance: float | None
    running: str
    result: Callable[[Any], None]


def fine_tune_tab(job: FineTune) -> None:
    """The steps and learning-rate controls and the button, then the job (start → follow → collect) and its result."""
    steps_key, lr_key, go_key, result_key, running_key = job.keys
    left, right, button = st.columns([2, 2, 1], vertical_alignment="bottom")
    with left:
        default(steps_key, job.default_steps)
        steps = st.slider("Steps", 50, 500, step=50, key=steps_key, help=f"Training steps of {job.a_step}.")
    with right:
        default(lr_key, 1e-3)
        lr = st.select_slider("Learning rate", FINETUNE_LRS, key=lr_key, format_func=lambda x: f"{x:g}")
    with button:
        pressed = st.button(job.button, type="primary", icon=":material/model_training:", key=go_key)
    start = (lambda: fine_tune_start(job.kind, steps, lr)) if pressed else None

    def running(status: JobStatus) -> None:
        """The held-out accuracy so far (updates with a ``step`` and an ``accuracy``; no chart before the first)."""
        points = [u for u in status.updates if hasattr(u, "step") and hasattr(u, "accuracy")]
        if points:
            total = max(getattr(u, "steps", 0) or 0 for u in points) or points[-1].step
            steps, accuracy = [u.step for u in points], [u.accuracy for u in points]
            show_chart(running_figure(steps, accuracy, total, job.chance), key=running_key)
            if job.running:
                st.caption(job.running.format(total=total))

    result = run_job(job.kind, job.what, start, keep=result_key, extra=running)
    if result is None:
        st.caption(job.idle)
    else:
        job.result(result)


def head_change_chart(change: np.ndarray, title: str, key: str, zmax: float | None = None) -> None:
    """``[layer, head]`` values as a small heatmap (layers down, heads across)."""
    layers = [f"layer {i}" for i in range(change.shape[0])]
    heads = [f"head {h}" for h in range(change.shape[1])]
    fig = attention_heatmap(change, layers, heads, title=title, height=300, zmax=zmax)
    show_chart(fig.update_xaxes(title_text="head").update_yaxes(title_text="layer"), key=key)


def moved(change: np.ndarray, title: str, key: str, over: str) -> None:
    """How far each head's patterns moved in fine-tuning (measured ``over``), and which moved most."""
    head_change_chart(change, title, key)
    st.caption(
        f"Mean total-variation distance between each head's patterns before and after fine-tuning, {over} (0: "
        f"unchanged, 1: completely different). Moved most: {most_moved(change)}."
    )


def most_moved(change: np.ndarray, n: int = 3) -> str:
    """The ``n`` heads that moved most, as "layer 1 head 2 (0.41), …"."""
    heads = change.shape[1]
    return ", ".join(
        f"layer {i // heads} head {i % heads} ({change.flat[i]:.2f})" for i in np.argsort(-change, None)[:n]
    )


def accuracy_metrics(result, name: str, untrained: str, chance: str) -> None:
    """Held-out accuracy before and after (with the gain), and chance."""
    a, b, c = st.columns(3)
    a.metric(f"{name} before", f"{result.accuracy_before:.0%}", help=f"The untrained head: {untrained}.")
    gain = result.accuracy_after - result.accuracy_before
    b.metric(f"{name} after", f"{result.accuracy_after:.0%}", delta=f"{gain:+.0%}")
    c.metric("Chance", f"{result.chance:.0%}", help=chance)


def before_after(figures: dict[str, Any], key: str) -> None:
    """Two figures side by side, keyed ``key`` + ``before`` / ``after``."""
    for col, (when, fig) in zip(side_by_side(2), figures.items()):
        with col:
            show_chart(fig, key=f"{key}{when}")


def running_figure(steps: list[int], accuracy: list[float], total: int, chance: float | None = 0.5) -> dict:
    """The held-out accuracy so far on fixed axes (steps 0 to ``total``, 0 to 100 %), a dashed line at ``chance``."""
    frame = pd.DataFrame({"step": steps, "held-out accuracy": accuracy})
    title, y_title = "Held-out accuracy so far", "held-out accuracy"
    fig = line_chart(
        frame, [y_title], title=title, y_title=y_title, fmt=".0%", y_range=[0, 1], height=240, x_title="step"
    )
    fig["layout"].update(margin={"l": 5, "r": 5, "t": 30, "b": 5}, showlegend=False)
    fig["layout"]["xaxis"]["range"] = [0, max(total, 1)]
    fig["layout"]["yaxis"]["tickformat"] = ".0%"
    if chance is not None:
        line = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": chance, "y1": chance}
        fig["layout"]["shapes"] = [{**line, "line": {"color": GREY, "dash": "dash"}}]
        note = {"xref": "paper", "x": 0, "y": chance, "xanchor": "left", "yanchor": "bottom", "showarrow": False}
        fig["layout"]["annotations"] = [{"text": "chance", **note}]
    return fig


# --- the colour task


def fine_tuning() -> None:
    st.write(
        "After pretraining, a model is fine-tuned on a task with labels. Here our masked-LM encoder learns to "
        'name the colour in a sentence ("max found a **red** coin ." → red), read from the first token '
        "(`<bos>`, BERT's [CLS]). To answer, that position has to find the colour word: watch which heads learn to."
    )
    fine_tune_tab(COLOUR)


def show_colour_result(result) -> None:
    accuracy_metrics(result, "Accuracy", "a guess", f"{round(1 / result.chance)} colours")
    left, right = side_by_side(2)
    with left:
        moved(result.change, "How far each head's attention moved", P.finetune_change, "over held-out sentences")
    with right:
        title = "Weight <bos> puts on the colour word, after"
        head_change_chart(result.colour_after, title, P.finetune_colour, zmax=1.0)
        best = np.unravel_index(np.argmax(result.colour_after - result.colour_before), result.colour_after.shape)
        st.caption(
            f"Before fine-tuning, layer {best[0]} head {best[1]} put {result.colour_before[best]:.0%} of the "
            f"first token's attention on the colour word; after, {result.colour_after[best]:.0%}."
        )
    layer, head = (int(x) for x in best)
    where, text = f"Layer {layer}, head {head}", shorten(result.probe_text)
    tokens = [f"{i} {t}" for i, t in enumerate(result.tokens)]
    figures = {
        when: attention_heatmap(p[layer, head], tokens, tokens, zmax=1.0, height=360, title=f"{where}, {when}: {text}")
        for when, p in (("before", result.before_patterns), ("after", result.after_patterns))
    }
    before_after(figures, P.finetune)
    st.caption(
        "The same held-out sentence and head before and after, on one colour scale; the first row is the "
        "`<bos>` position the classifier reads."
    )


# --- next-sentence prediction


def next_sentence() -> None:
    st.write(
        "BERT's second pretraining task: given two pieces of text, A and B, is B what really comes next? Half "
        "of the pairs are real, half take B from another story. The answer is read from the first position, "
        "[CLS] (our `<bos>`), by a linear layer on its final vector: the same head "
        "`AutoModelForSequenceClassification` puts on a pretrained model for any labelled task. Here our "
        "masked-LM encoder learns it, and you can see which heads change to answer."
    )
    st.info(NO_SEGMENTS, icon=":material/info:")
    if (pairs := attempt(nsp_examples)) is not None:  # a model run may raise anything: shown, the tab goes on
        tail = [" ".join(p.a) for p in pairs]
        frame = pd.DataFrame(
            {
                "A: the story so far": [a if len(a) <= 90 else "…" + a[-89:] for a in tail],  # where A meets B
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
    fine_tune_tab(NEXT_SENTENCE)


def small_layout(fig: go.Figure, title: str, legend_y: float, **more: Any) -> go.Figure:
    """The tab's result charts: 300 px high, the title on the left, the legend underneath."""
    legend = dict(orientation="h", y=legend_y)
    return fig.update_layout(
        height=300, margin=dict(l=5, r=5, t=30, b=5), title=dict(text=title, x=0.0), legend=legend, **more
    )


def loss_figure(curve) -> go.Figure:
    """Each step's training loss, the held-out loss where it was measured, and ln 2 (a coin flip's loss)."""
    fig, steps = go.Figure(), np.arange(1, len(curve.train_loss) + 1)
    for x, y, name, mode, line in (
        (steps, curve.train_loss, "training batch", "lines", dict(width=1, color=PALE)),
        (curve.eval_steps, curve.eval_loss, "held-out pairs", "lines+markers", dict(width=2, color=BLUE)),
    ):
        hover = f"step %{{x}}: %{{y:.3f}}<extra>{name}</extra>"
        label = f"{name} (32 pairs)" if mode == "lines" else name
        fig.add_trace(go.Scatter(x=x, y=y, mode=mode, name=label, line=line, hovertemplate=hover))
    fig.add_hline(y=math.log(2), line_dash="dash", line_color=GREY, annotation_text="ln 2: a coin flip")
    axes = dict(xaxis=dict(title="step"), yaxis=dict(title="cross-entropy (nats)", rangemode="tozero"))
    return small_layout(fig, "Loss while fine-tuning", -0.25, **axes)


def curve_frame(curve) -> pd.DataFrame:
    """The loss curve: one row per step, the held-out columns filled where they were measured."""
    frame = pd.DataFrame({"step": np.arange(len(curve.train_loss) + 1), "training loss": [np.nan, *curve.train_loss]})
    held = pd.DataFrame(
        {"step": curve.eval_steps, "held-out loss": curve.eval_loss, "held-out accuracy": curve.eval_accuracy}
    )
    return frame.merge(held, on="step", how="left")


def shares_figure(before: np.ndarray, after: np.ndarray, title: str) -> go.Figure:
    """Where [CLS] looks (its weight on A, on B, on the specials), before and after, as grouped bars."""
    fig = go.Figure()
    for values, name, colour in ((before, "before", PALE), (after, "after", BLUE)):
        hover = "%{x}: %{y:.1%}<extra>" + name + "</extra>"
        text = [f"{v:.0%}" for v in values]
        bar = go.Bar(x=list(SHARES), y=values, name=name, marker_color=colour, text=text, textposition="auto")
        fig.add_trace(bar.update(hovertemplate=hover))
    yaxis = dict(title="share of [CLS]'s attention", range=[0, 1], tickformat=".0%")
    return small_layout(fig, title, -0.2, barmode="group", yaxis=yaxis)


def show_nsp_result(result) -> None:
    accuracy_metrics(result, "NSP accuracy", "a coin flip", "Half the pairs are real.")
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
    csv_button(
        "Download the loss curve as CSV",
        curve_frame(result.curve),
        "nsp_loss_curve.csv",
        P.nsp_curve_csv,
        index=False,
        float_format="%.6f",
    )
    left, right = side_by_side(2)
    with left:
        moved(result.change, "How far each head's attention moved", P.nsp_change, "over every query of held-out pairs")
    with right:
        head_change_chart(result.cls_change, "How far [CLS]'s attention moved", P.nsp_cls_change)
        st.caption(
            "The same distance for the [CLS] row alone, the one position the classifier reads. Moved "
            f"most: {most_moved(result.cls_change)}."
        )
    layer, head = (int(x) for x in np.unravel_index(np.argmax(result.cls_change), result.cls_change.shape))
    before, after = result.shares_before[layer, head], result.shares_after[layer, head]
    show_chart(shares_figure(before, after, f"Where [CLS] looks, layer {layer} head {head}"), key=P.nsp_shares)
    st.caption(
        "The head whose [CLS] row moved most: the share of [CLS]'s attention on sentence A, on sentence B and "
        "on the special tokens, averaged over held-out pairs, before and after fine-tuning."
    )
    inspect_pair(result)


def _kind(probe) -> str:
    return "real next" if probe.is_next else "random B"


def head_rows(att: np.ndarray, tokens: list[str], title: str, height: int, zmax: float | None = None) -> go.Figure:
    """One position's attention ``[layer, head, key]`` as a heatmap, one row per head (first layers at the top)."""
    rows = [f"L{layer} H{head}" for layer in range(att.shape[0]) for head in range(att.shape[1])]
    fig = attention_heatmap(att.reshape(-1, att.shape[-1]), rows, tokens, title=title, height=height, zmax=zmax)
    return fig.update_yaxes(title_text="layer and head")


def inspect_pair(result) -> None:
    """One held-out pair: [CLS]'s attention in every head before and after, and the classifier's answer."""
    st.subheader("Inspect one pair")
    probes = result.probes

    def label(k: int) -> str:
        words = [t for t in probes[k].tokens if t not in ("[CLS]", "[SEP]")]
        return f"Pair {k + 1} ({_kind(probes[k])}): …{' '.join(words[-9:])}"

    i = st.selectbox("Held-out pair", range(len(probes)), format_func=label, key=P.nsp_pair)
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
    rows = {"before": probe.cls_before, "after": probe.cls_after}
    figures = {w: head_rows(r, tokens, f"[CLS]'s attention, {w}", 380, zmax) for w, r in rows.items()}
    for fig in figures.values():
        fig.add_vline(x=sep + 0.5, line_width=2, line_color="#d62728")  # where B starts
    before_after(figures, P.nsp_inspect)
    st.caption(
        "Each row is one head's attention from [CLS] to every token of the pair (rows sum to 1), on one colour "
        f"scale before and after; the red line is where sentence B starts (after the [SEP] at {sep}). "
        "Words the head reads here are what the classifier's one vector can be built from."
    )


COLOUR = FineTune(
    FINETUNE,
    "Fine-tuning",
    "Fine-tune",
    200,
    "32 sentences each (a few seconds)",
    (P.finetune_steps, P.finetune_lr, P.finetune_go, P.finetune_result, P.finetune_running),
    "Press **Fine-tune**: the accuracy on held-out sentences climbs as the heads change.",
    None,  # the colour task's chance is in the result
    "",
    show_colour_result,
)
NEXT_SENTENCE = FineTune(
    NSP,
    "NSP fine-tuning",
    "Fine-tune on NSP",
    300,
    "32 pairs each (a few seconds to a minute)",
    (P.nsp_steps, P.nsp_lr, P.nsp_go, P.nsp_result, P.nsp_running),
    "Press **Fine-tune on NSP**: the held-out accuracy starts at a coin flip (the head is untrained) and climbs "
    "as the encoder learns to compare B with A.",
    0.5,
    "The fine-tune running now: accuracy on the held-out pairs (stories it never trains on), measured every few of "
    "its {total} steps; the dashed line is chance (50 %). The full loss curve follows when it ends.",
    show_nsp_result,
)
