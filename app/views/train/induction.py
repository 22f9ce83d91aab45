"""Train live's "Induction heads" tab: the phase change of a two-layer attention-only model, shipped and live;
:func:`draw` draws one run's document (curves, head scores, loss by position, the probe before and after)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app.controls.long_job import run_job
from app.runtime.long_work import INDUCTION, long_status
from app.state import defaults
from app.ui.charts import show_chart
from app.ui.export import csv_button
from app.ui.guard import attempt, show_error
from app.ui.theme import side_by_side
from app.views.train import data
from app.views.train.charts import attention_grid, head_columns, line_chart
from app.views.train.keys import Train

SCORES = {
    "prefix_matching": (
        "Prefix matching (layer 1)",
        1,
        "attention from a letter's second copy to the letter after its first copy: TransformerLens's induction score",
    ),
    "previous_token": ("Previous token (layer 0)", 0, "attention from each position to the one just before it"),
    "copying": (
        "Copying (layer 1)",
        1,
        "Σλ/Σ|λ| over the eigenvalues of the head's OV circuit from letters to the "
        "letters' logits: +1 = raises the logit of the letter it looks at",
    ),
}
SHIPPED, YOURS = "The shipped run", "Your run"


def key(name: str) -> str:
    return f"{Train.prefix}ind_{name}"


def curves_frame(doc: dict[str, Any]) -> pd.DataFrame:
    """One row per snapshot: step, losses, ICL score and every head's three scores (columns like ``L1 H2 prefix_matching``)."""
    c = doc["curves"]
    columns = {"step": c["step"], "training loss": c["loss"], "evaluation loss": c["eval_loss"], "ICL score": c["icl"]}
    for name in SCORES:
        columns.update(head_columns([s[name] for s in c["scores"]], f" {name}"))
    return pd.DataFrame(columns)


def learning_figure(doc: dict[str, Any]) -> dict:
    columns, title = ["training loss", "ICL score"], "Loss and in-context learning"
    return line_chart(curves_frame(doc), columns, title=title, y_title="nats", rule_step=doc.get("phase_change_step"))


def scores_figure(doc: dict[str, Any], name: str) -> dict:
    """Each head's ``name`` score per snapshot, for the heads of the layer it is measured in."""
    label, layer, _ = SCORES[name]
    frame = curves_frame(doc)
    heads = {c: c.removesuffix(f" {name}") for c in frame.columns if c.startswith(f"L{layer} ") and c.endswith(name)}
    return line_chart(
        frame[["step", *heads]].rename(columns=heads),
        list(heads.values()),
        title=f"{label} score of each head",
        y_title="score",
        y_range=[-1.02 if name == "copying" else 0.0, 1.02],
        rule_step=doc.get("phase_change_step"),
    )


def moment_labels(doc: dict[str, Any]) -> dict[str, str]:
    """The two moments' names: around the phase change, or the run's start and end when there was none (yet)."""
    if doc.get("phase_change_step") is None:
        return {"before": "At the start", "after": "At the end"}
    return {"before": "Before the phase change", "after": "After the phase change"}


def position_figure(doc: dict[str, Any]) -> dict:
    """The loss at each position at the two moments; grey bands where the ICL score compares."""
    lines = {
        f"{label.lower()} (step {doc[m]['step']})": doc[m]["loss_by_position"]
        for m, label in moment_labels(doc).items()
    }
    frame = pd.DataFrame({"position": range(len(next(iter(lines.values())))), **lines})
    band = {"type": "rect", "xref": "x", "yref": "paper", "y0": 0, "y1": 1, "fillcolor": "#9e9e9e", "opacity": 0.18}
    bands = [{**band, "x0": a - 0.5, "x1": b + 0.5, "line": {"width": 0}} for a, b in (doc["early"], doc["late"])]
    x_title = "position in the context (predicting the next letter)"
    title = "Loss at each position of the context"
    return line_chart(
        frame, list(lines), title=title, y_title="loss (nats)", x="position", x_title=x_title, shapes=bands
    )


def best_heads(doc: dict[str, Any]) -> tuple[int, int]:
    """(layer-0 head with the highest previous-token score, layer-1 head with the highest prefix-matching score) after."""
    scores = doc["after"]["scores"]
    return int(np.argmax(scores["previous_token"][0])), int(np.argmax(scores["prefix_matching"][1]))


def scores_table(doc: dict[str, Any]) -> pd.DataFrame:
    """Every head's three scores at the two moments, one row per moment and head."""
    rows = []
    for moment, label in moment_labels(doc).items():
        s, when = doc[moment]["scores"], f"{label.lower()} (step {doc[moment]['step']})"
        for layer, head in np.ndindex(np.shape(s["previous_token"])):
            scores = {SCORES[n][0].split(" (")[0].lower(): round(float(s[n][layer][head]), 3) for n in SCORES}
            rows.append({"moment": when, "head": f"L{layer} H{head}", **scores})
    return pd.DataFrame(rows)


def draw(doc: dict[str, Any], where: str) -> None:
    """Every figure of one run (``where``: a key prefix, so the shipped run and yours never share widget keys)."""
    phase = doc.get("phase_change_step")
    after = doc["after"]
    prev, ind = best_heads(doc)
    icl_help = (
        f"Mean loss at positions {doc['late'][0]}–{doc['late'][1]} minus positions {doc['early'][0]}–"
        f"{doc['early'][1]} (Olsson et al. compare token 500 with token 50)."
    )
    phase_help = (
        "The first snapshot where the ICL score is halfway from its first value to its last, once it has fallen "
        "by at least 1.5 nats over the run (learning which letters a run uses takes it to about −0.5 … −0.9)."
    )
    s = after["scores"]
    metrics = (
        ("ICL score (end)", f"{after['icl']:+.2f} nats", icl_help),
        ("Phase change at step", "none yet" if phase is None else f"{phase:,}", phase_help),
        (f"Induction head L1 H{ind}", f"{s['prefix_matching'][1][ind]:.2f}", "Its prefix-matching score at the end."),
        (
            f"Previous-token head L0 H{prev}",
            f"{s['previous_token'][0][prev]:.2f}",
            "Its previous-token score at the end.",
        ),
    )
    for col, (label, value, why) in zip(st.columns(4), metrics):
        col.metric(label, value, help=why)
    left, right = side_by_side(2)
    with left:
        show_chart(learning_figure(doc), key=key(f"{where}_learning"))
        st.caption(
            "Training loss and the in-context-learning score at each snapshot: the loss late in the context "
            "minus the loss early in it (negative = the model predicts better the more it has read). The "
            "dashed line marks the phase change (when there is one), where both fall suddenly together."
        )
    with right:
        name = st.selectbox("Head score", list(SCORES), format_func=lambda n: SCORES[n][0], key=key(f"{where}_score"))
        show_chart(scores_figure(doc, name), key=key(f"{where}_scores"))
        st.caption(
            f"{SCORES[name][0]}: {SCORES[name][2]}. One line per head, one point per snapshot; the dashed "
            "line is the phase change (when there is one)."
        )
    labels = moment_labels(doc)
    show_chart(position_figure(doc), key=key(f"{where}_positions"))
    st.caption(
        f"Loss of the prediction made at each position, on 128 fixed sequences: {labels['before'].lower()} and "
        f"{labels['after'].lower()}. Until the run has been read once (8–24 letters) nothing can be known "
        "(ln 26 ≈ 3.26); once induction heads have formed the model copies from the earlier copy. Grey bands: "
        "the early and late positions the ICL score compares."
    )
    tokens = doc["probe_tokens"]
    for moment, label in labels.items():
        m = doc[moment]
        show_chart(attention_grid(np.asarray(m["probe"], dtype=np.float32), tokens), key=key(f"{where}_{moment}_grid"))
        if moment == "before":
            look = "The heads still spread their attention: nothing points back yet."
        elif phase is not None:
            look = (
                "A previous-token head draws the line just below the diagonal; an induction head in layer 1 "
                "a stripe 11 keys back, from each letter of the second copy to the letter after its first copy."
            )
        else:
            look = (
                "Look for a line just below the diagonal (previous token) in layer 0 and a stripe 11 keys back "
                "(induction) in layer 1: no phase change yet."
            )
        st.caption(
            f"{label} (step {m['step']}): every head's attention on the probe "
            f"`{' '.join(tokens)}` (rows: layers 0 and 1; in each square rows are queries, columns keys). " + look
        )
    table = scores_table(doc)
    st.dataframe(table, hide_index=True, height=240)
    st.caption("Every head's three scores before and after the phase change.")
    file_name, csv_key = f"induction_{where}_curves.csv", key(f"{where}_csv")
    csv_button("Download the curves as CSV", curves_frame(doc), file_name, csv_key, index=False)


def start() -> None:
    try:
        data.induction_start(*(st.session_state[key(name)] for name in ("steps", "lr", "seed")))
    except ValueError as err:  # a setting out of range (which and why): nothing started
        show_error(str(err), level="error")


def live_controls() -> Any:
    options = data.induction_options()
    defaults({key("steps"): options["steps"], key("lr"): options["lr"], key("seed"): 0})
    a, b, c, d = st.columns([1, 1, 1, 1], vertical_alignment="bottom")
    (low, high), (slow, fast) = options["step_range"], options["lr_range"]
    a.number_input("Steps", step=100, key=key("steps"), help=f"{low} to {high:,} optimizer updates.")
    warm = f"{slow:g} to {fast:g}, constant after a short warm-up."
    b.number_input("Learning rate", step=0.001, format="%.4f", key=key("lr"), help=warm)
    other = "Some seeds stay longer on the plateau, or find another way to use the context (no prefix-matching head)"
    c.number_input("Seed", step=1, key=key("seed"), help=f"{other}: try another.")
    status = long_status(INDUCTION)
    pressed = d.button(
        "Train it here",
        type="primary",
        icon=":material/play_arrow:",
        key=key("start"),
        disabled=status is not None and status.active,
        use_container_width=True,
    )
    return run_job(INDUCTION, "Training", start if pressed else None, extra=live_curves)  # the last progress, or None


def live_curves(status) -> None:
    doc = data.run_document(status.latest)
    if doc is not None and len(doc["curves"]["step"]) > 1:
        left, right = side_by_side(2)
        with left:
            show_chart(learning_figure(doc), key=key("live_learning"))
            st.caption("Your run so far: training loss and ICL score at each snapshot (every 20 steps).")
        with right:
            show_chart(scores_figure(doc, "prefix_matching"), key=key("live_scores"))
            st.caption(
                "Your run so far: each layer-1 head's prefix-matching score; the other scores follow when the run ends."
            )


def show() -> None:
    """The tab's content."""
    st.markdown(
        "A **two-layer transformer without MLPs** reads runs of random letters repeated to fill 64 tokens "
        "(`<bos> q f k q f k q …`, each letter one token). For a while it only learns which letters the run "
        "uses; then, suddenly, a **previous-token head** in layer 0 and an **induction head** in layer 1 "
        "form together, and the model copies from earlier in its context: in-context learning "
        "(Olsson et al. 2022). The shipped run is drawn below at once; train your own to watch it happen."
    )
    finished = live_controls()
    yours = data.run_document(finished) if finished is not None else None
    shown = SHIPPED
    if yours is not None:
        shown = st.segmented_control("Show", [SHIPPED, YOURS], default=YOURS, key=key("shown"), required=True)
    if shown == YOURS and yours is not None:
        draw(yours, "yours")
        return
    if (doc := attempt(data.induction_shipped)) is None:
        return
    st.markdown(
        f"**{SHIPPED}**: `{data.INDUCTION_MODEL}` (open it on any page as the model *Induction heads: "
        "2-layer attention-only*; type letters, then the same letters again)."
    )
    draw(doc, "shipped")
