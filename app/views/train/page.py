"""Train live: train a tiny transformer here and watch its attention patterns form, head by head. Tabs: "Your own
model" (below; this session's ``TRAIN`` job, followed by ``app/controls/long_job.py``) and "Induction heads"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app import routes
from app.controls.long_job import follow
from app.controls.pickers import page_tabs, use_text
from app.runtime.long_work import TRAIN, long_status
from app.state import PERSIST, K, default, defaults
from app.ui.charts import show_chart
from app.ui.clicks import once
from app.ui.export import csv_button
from app.ui.guard import show_error
from app.ui.safe_text import md
from app.ui.theme import side_by_side
from app.views.train import charts, data
from app.views.train import induction as induction_section
from app.views.train.keys import BATCHES, DEFAULTS, HEADS, POS_ENCODINGS, TABS, TASK_LABELS, WIDTHS, Train
from engine.job_limits import about

STATUS = {
    "running": "Training on **{device}**.",
    "paused": "Paused at step {step}. Resume to go on (a paused job keeps its training slot: the server stops any "
    "job that holds one longer than about {deadline}).",
    "done": "Done: {step} steps.",
    "stopped": "Stopped at step {step}.",
}


def key(name: str) -> str:
    return f"{Train.prefix}{name}"


def setting(name: str) -> dict:
    """A setting's widget arguments: its key, kept across pages."""
    return {"key": key(name), **PERSIST}


def settings_from_state() -> dict:
    """The settings as the widgets left them (validated on the server by the engine, not here)."""
    return {name: st.session_state.get(key(name), value) for name, value in DEFAULTS.items()}


def setup_widgets() -> None:
    defaults({key(name): value for name, value in DEFAULTS.items()})
    left, mid, right = st.columns(3)
    with left:
        st.markdown("**Task**")
        st.selectbox("What to learn", list(TASK_LABELS), format_func=TASK_LABELS.get, **setting("task"))
        info = data.train_task_info(st.session_state[key("task")])
        st.caption(info["description"])
    with mid:
        st.markdown("**Model**")
        st.slider("Layers", 1, 4, **setting("n_layers"))
        a, b = st.columns(2)
        a.selectbox("Heads per layer", HEADS, **setting("n_heads"))
        b.selectbox("d_model (width)", WIDTHS, **setting("d_model"))
        order = "How the model knows word order. 'none' leaves only the causal mask to tell positions apart."
        st.selectbox("Positional encoding", POS_ENCODINGS, **setting("pos_encoding"), help=order)
        peek = "On: each token sees only earlier tokens (GPT). Off: the model can peek at the answer."
        st.toggle("Causal mask", **setting("causal"), help=peek)
    with right:
        st.markdown("**Training**")
        st.number_input("Steps", step=100, **setting("steps"), help="1 to 20,000 optimizer updates.")
        a, b = st.columns(2)
        a.selectbox("Batch size", BATCHES, **setting("batch_size"))
        b.number_input("Seed", step=1, **setting("seed"))
        peak = "Peak learning rate, 0.00001 to 0.1 (warm-up, then cosine decay)."
        st.number_input("Learning rate", step=0.001, format="%.4f", **setting("lr"), help=peak)


def estimate_line() -> str | None:
    """Show the parameter count, the server's time estimate and its limit; the refusal (shown, with settings that
    fit) when over the limit per job, else None (invalid settings show their error: Start shows it again)."""
    settings = settings_from_state()
    try:
        with st.spinner("Timing a few training steps…"):
            params, estimate = data.train_estimate(settings)
    except ValueError as err:
        show_error(str(err), level="error")
        return None
    st.markdown(
        f"**{params:,} parameters** · about **{estimate.per_step * 1000:.0f} ms per step** (a few steps "
        f"timed on this server, in one CPU thread's time) → {estimate.steps:,} steps in about "
        f"**{about(estimate.seconds)}** (more if the server is busy: the run checks its own first steps); the "
        f"limit per job is **{about(estimate.budget.max_seconds)}**."
    )
    if estimate.fits:
        return None
    st.error(estimate.refusal(), icon=":material/timer_off:")
    return estimate.refusal()


def controls(progress, fits: bool) -> None:
    """Start and Reset (Pause, Resume and Stop come with the running job: :func:`live`)."""
    active = progress is not None and not progress.finished
    start_col, reset_col, _ = st.columns([1, 1, 3])
    start_col.button(
        "Start",
        type="primary",
        icon=":material/play_arrow:",
        key=key("start"),
        disabled=active or not fits,
        on_click=once(start),
        use_container_width=True,
        help=None if fits else "Over the server's time limit per job: see the message above.",
    )
    reset_col.button(
        "Reset",
        icon=":material/restart_alt:",
        key=key("reset"),
        disabled=progress is None,
        use_container_width=True,
        on_click=once(data.train_reset),
    )


def start() -> None:
    st.session_state.pop(key("error"), None)
    settings = settings_from_state()
    try:
        data.train_start(settings)
    except ValueError as err:
        st.session_state[key("error")] = (settings, str(err))  # shown until the settings change


def status_line(p) -> None:
    if p.status == "failed":
        show_error(str(p.error), before="Training failed: ", level="error")
    elif p.status in STATUS:
        deadline = about(p.estimate.deadline) if p.estimate is not None else "twice its estimate"
        message = STATUS[p.status].format(device=p.device or "cpu", step=p.step, deadline=deadline)
        if p.status == "stopped" and p.error:
            message += f" ({p.error})"
        st.markdown(f"Status: {message}")
        if p.notice and not p.finished:
            st.warning(f"This run stops early: {p.notice}.", icon=":material/timer:")


def numbers(p) -> None:
    last = p.snapshots[-1]
    shown = {
        "Loss": f"{last.loss:.3f}",
        last.metric_name.capitalize(): f"{last.metric:.1%}",
        "Tokens / s": f"{last.tokens_per_s:,.0f}",
        "Elapsed": f"{last.elapsed_s:.1f} s",
        "Device": p.device or "—",
    }
    for col, (label, value) in zip(st.columns(len(shown)), shown.items()):
        col.metric(label, value)


def pick_snapshot(p) -> int:
    """Index of the snapshot to show: the latest while following, else the time-lapse slider's."""
    steps = [s.step for s in p.snapshots]
    latest = st.toggle(
        "Follow the latest snapshot",
        value=True,
        key=key("follow"),
        help="Off: replay how the patterns formed with the time-lapse slider.",
    )
    if latest or len(steps) < 2:
        return len(steps) - 1
    chosen = st.select_slider("Time-lapse: training step", options=steps, value=steps[-1], key=key("timelapse"))
    return steps.index(chosen) if chosen in steps else len(steps) - 1


def attention_view(p, index: int, info: dict) -> None:
    trace = p.snapshots[index].probe_trace
    if trace is None:
        return
    patterns = np.stack([trace.pattern(layer) for layer in range(trace.n_layers)])  # [L, H, n, n]
    ideal = info["ideal"] if info["ideal"] is not None and info["ideal"].shape[0] == trace.n_queries else None
    fig = charts.attention_grid(patterns, list(trace.tokens.strings), ideal, blocked=np.isneginf(trace.mask(0)))
    show_chart(fig, key=key("grid"))
    tokens = " ".join(trace.tokens.strings)
    st.caption(
        f"Attention of every head (rows: layers) on the probe input `{tokens}` at step "
        f"{p.snapshots[index].step}. Each square: rows are queries (the token asking), columns keys (the "
        "token looked at); dark = much weight, all on the same 0–1 scale, grey = hidden by the causal mask."
        + (" The last column is the ideal pattern that solves the task." if ideal is not None else "")
    )


def curves(p, index: int) -> None:
    metric = p.snapshots[-1].metric_name
    frame = charts.curve_frame(p.snapshots, metric)
    rule = p.snapshots[index].step
    left, right = side_by_side(2)
    with left:
        show_chart(charts.loss_chart(frame, rule), key=key("charts.loss_chart"))
        st.caption(
            "Cross-entropy loss: lower is better. Training loss is averaged over the steps since the "
            "previous point; evaluation loss is on a fixed set of fresh examples. The dashed line is the step "
            "shown in the attention grid."
        )
    with right:
        show_chart(charts.accuracy_chart(frame, metric, rule), key=key("acc_chart"))
        st.caption(
            f"{metric.capitalize()}: the share of evaluation examples answered entirely right; token accuracy: "
            "the share of answer tokens right."
        )
    csv_button("Download the curves as CSV", frame, "training_curves.csv", key("curves_csv"), index=False)


def head_scores(p, index: int) -> None:
    if not p.head_scores or p.head_scores[-1].size == 0:
        return
    show_chart(
        charts.head_score_chart(charts.score_frame(p.snapshots, p.head_scores), p.snapshots[index].step),
        key=key("score_chart"),
    )
    st.caption(
        "For each head, the share of its attention (on the answer positions of the probe) that falls where "
        "the ideal pattern puts it: 1 = the head does exactly what solves the task. A line that jumps up "
        "is the moment that head 'clicks'."
    )


def run_view(p) -> None:
    """The run so far: status, numbers, the attention grid, the curves, the head scores."""
    status_line(p)
    if not p.snapshots:
        return
    numbers(p)
    index = pick_snapshot(p)
    info = data.train_task_info(p.settings.task)
    st.subheader("Attention on the probe input")
    attention_view(p, index, info)
    st.subheader("Learning curves")
    curves(p, index)
    head_scores(p, index)


def live() -> None:
    """This session's job: followed while it waits or trains (Pause, Resume, Stop; the view polled under its
    progress bar), else the finished run and what to do with its model."""
    status = long_status(TRAIN)
    p = data.train_progress()
    if p is None or status is None:
        st.info("Pick a task and a model, then press **Start**.", icon=":material/info:")
    elif status.active:
        follow(TRAIN, status, "Training", extra=lambda _: run_view(data.train_progress()), pause=True)
    else:
        run_view(p)
        if p.snapshots and p.status != "failed":
            finished(p)


def finished(p) -> None:
    """Try the trained model, open it in Explore, download it."""
    st.subheader("Try the trained model")
    info = data.train_task_info(p.settings.task)
    default(key("try"), info["example"])
    text = st.text_input(
        "Your input",
        key=key("try"),
        max_chars=300,
        help="Toy tasks: type letters such as 'a f c p b k'. Stories: the start of a story. "
        "Translation: an English sentence of the toy grammar.",
    )
    try:
        result = data.train_answer(text)
    except ValueError as err:
        show_error(str(err), before="Cannot read this input: ")
    else:
        st.markdown(
            f"The model read {md(' '.join(result.prompt))} and wrote **{md(' '.join(result.model)) or '(nothing)'}**"
        )
        if result.correct:
            n = len(result.correct)
            st.markdown(
                f"Correct answer: **{md(' '.join(result.correct))}** — {sum(result.right)} of {n} tokens right."
            )
            model = [*result.model[:n], *[""] * (n - len(result.model[:n]))]
            right = ["yes" if r else "no" for r in result.right]
            st.dataframe(pd.DataFrame({"model": model, "correct": list(result.correct), "right?": right}), height=220)
    left, right = st.columns(2)
    if left.button("Open this model in Explore", icon=":material/grid_on:", key=key("explore")):
        model_id = data.train_register()
        trace = p.snapshots[-1].probe_trace
        st.session_state[K.model] = model_id
        st.session_state[K.hub_id] = ""
        use_text(" ".join(t for t in trace.tokens.strings if t != "<bos>"))
        st.switch_page(routes.page("explore.py"))
    right.download_button(
        "Download the model (safetensors + config JSON, zipped)",
        data.train_checkpoint(),
        f"trained-{p.settings.task}.zip",
        "application/zip",
        icon=":material/download:",
        key=key("download"),
        on_click="ignore",
    )
    st.caption(
        "The zip holds the weights (safetensors), the config and vocabulary (JSON) and a model card; "
        "`engine.training.load_checkpoint(folder, name)` reads it back."
    )


def main() -> None:
    st.title("Train live")
    own, induction = page_tabs(list(TABS.values()), key("tab"))
    if induction.open:
        with induction:
            induction_section.show()
    if not own.open:
        return
    with own:
        st.write(
            "Train a tiny transformer right here and watch attention patterns form, head by head. "
            "The defaults learn to reverse letters in well under a minute."
        )
        setup_widgets()
        task = st.session_state[key("task")]
        if not st.session_state[key("causal")] and task != "previous-token":
            st.warning(
                "Without the causal mask every token also sees the tokens after it, including the answer it "
                "is asked to predict: the model can learn to copy from the future instead of solving the task."
            )
        if task == "translation":
            st.caption(
                "Translation is trained as one decoder-only model reading `<bos> English <sep> French <eos>`, "
                "scored on the French part only (a prefix language model)."
            )
        over_time = estimate_line()
        controls(data.train_progress(), fits=over_time is None)
        refused = st.session_state.get(key("error"))
        if refused is not None and refused[0] == settings_from_state() and refused[1] != over_time:
            show_error(refused[1], level="error")
        live()


main()
