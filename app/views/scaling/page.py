"""Scaling: six sizes of our stories GPT trained alike (``python -m engine.training.scaling``), loss against N with
the fitted L(N) = (N_c / N)^α and E + (N_c / N)^α and against compute with its frontier and the same two laws;
"Train one more size" adds a point live."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from app.controls.long_job import run_job
from app.runtime.long_work import SCALE
from app.state import choose, default
from app.ui.charts import show_chart
from app.ui.guard import attempt
from app.ui.theme import side_by_side
from app.views.scaling import data
from app.views.scaling.figures import loss_vs_compute, loss_vs_params
from app.views.scaling.keys import Scaling as S
from engine.analysis.scaling_laws import PowerLaw, Run
from engine.job_limits import about


def _live_runs() -> dict:
    """Sizes this session trained here: name → ``Run``."""
    return default(S.live_runs, {})


def verdict(pure: PowerLaw, with_e: PowerLaw) -> str:
    """Which law fits better, by r² of log L (the measure both fits minimise)."""
    if with_e.r2 - pure.r2 > 0.005:
        return (
            f"**The law with E fits better** (r² {with_e.r2:.3f} against {pure.r2:.3f}): the losses flatten as the "
            "models grow, and a pure power law, a straight line on these axes, cannot bend."
        )
    return f"The pure law fits as well (r² {pure.r2:.3f} against {with_e.r2:.3f}): E adds nothing the line misses."


def charts(curves, live: list) -> None:
    fit, settings = curves.fit, curves.settings
    fit_e, cfit_e = data.fits_with_e()
    left, right = side_by_side(2)
    with left:
        show_chart(loss_vs_params(curves.runs, fit, live, with_e=fit_e), key=S.params_chart, source="")
        st.caption(
            f"Each point is one size's held-out loss after the same {settings['steps']} steps "
            f"({settings['steps'] * settings['batch_size'] * settings['seq_len']:,} tokens), against its "
            "non-embedding parameters N (log-log). Two laws, each fitted by least squares on log L: the grey "
            f"dashed line is the pure power law L(N) = (N_c / N)^α, **α = {fit.alpha:.3f}**, N_c = {fit.scale:.3g} "
            f"(r² = {fit.r2:.3f} over {fit.n_points} sizes); the purple dash-dot one adds an irreducible loss E, "
            f"L(N) = E + (N_c / N)^α: **E = {fit_e.irreducible:.2f} nats, α = {fit_e.alpha:.3f}**, "
            f"N_c = {fit_e.scale:.3g} (r² = {fit_e.r2:.3f}). {verdict(fit, fit_e)}"
        )
        st.caption(
            "Why E: part of the loss is the entropy of the text itself, which no model, however large, removes, so "
            "the loss levels off at E instead of falling towards 0. Chinchilla's law (Hoffmann et al. 2022) "
            "writes it L(N, D) = E + A/N^α + B/D^β, and Kaplan's group's (Henighan et al. 2020) L = L_∞ + "
            "(x₀/x)^α. Kaplan et al. 2020 fitted the pure law over their range (noting that it must level off, "
            "since text has non-zero entropy) and measured α ≈ 0.076 for models trained to convergence on far more data; ours are tiny and trained "
            "briefly, so the exponents are only this mini-lab's."
        )
        if live:
            both, both_e = data.refit(tuple(curves.runs) + tuple(live))
            sizes = "the size" if len(live) == 1 else f"the {len(live)} sizes"
            st.caption(
                f"With {sizes} trained here (orange) in the fit as well: α = {both.alpha:.3f} (r² = {both.r2:.3f}); "
                f"with E: E = {both_e.irreducible:.2f}, α = {both_e.alpha:.3f} (r² = {both_e.r2:.3f})."
            )
    with right:
        cfit = curves.compute_fit
        figure = loss_vs_compute(curves.runs, curves.frontier, cfit, live, with_e=cfit_e)
        show_chart(figure, key=S.compute_chart, source="")
        st.caption(
            "Each line is one size's held-out loss as training goes on, against the compute spent so far, "
            "C ≈ 6·N·tokens (log-log). The thick black line is the compute-optimal frontier: for each "
            "compute, the lowest loss any size reached with no more compute (the lower envelope of all "
            f"the curves). A power law fitted to it: **L(C) = (C_c / C)^{cfit.alpha:.3f}** (grey, r² = "
            f"{cfit.r2:.3f}); with E (purple): L(C) = {cfit_e.irreducible:.2f} + (C_c / C)^{cfit_e.alpha:.3f} "
            f"(r² = {cfit_e.r2:.3f}). Small models lead at small compute, larger ones take over later: for a fixed "
            "budget there is a best size."
        )


def runs_table(curves, live: list) -> None:
    rows = [
        {
            "size": r.name,
            "d_model": r.d_model,
            "layers": r.n_layers,
            "heads": r.n_heads,
            "N (non-embedding)": r.n_params,
            "all parameters": r.n_params_total,
            "final held-out loss": round(r.final_loss, 4),
            "compute at the end": f"{r.compute[-1]:.3g}",
            "trained": where,
            "seconds": r.wall_s,
        }
        for runs, where in ((curves.runs, "shipped"), (live, "here"))
        for r in runs
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key=S.table)
    st.caption(
        "The runs: the non-embedding count leaves out the token and position embeddings and the unembedding "
        "(Kaplan et al.'s N); “all parameters” includes them. Seconds: where each run was trained."
    )
    record = json.dumps(
        {"format": 1, "runs": [r.name for r in curves.runs], "settings": curves.settings, "machine": curves.machine},
        indent=1,
    )
    st.download_button(
        "Download the curves (JSON)",
        data.scaling_json,
        file_name="stories-scaling.json",
        mime="application/json",
        key=S.download,
        on_click="ignore",
    )
    with st.expander("How these curves were made"):
        st.markdown(
            f"Command: `{curves.command}` ({about(curves.wall_s)} on the machine below). Every size saw "
            "the same batches in the same order (one data seed) with the same learning-rate schedule "
            "(warm-up, then cosine decay)."
        )
        st.code(record, language="json")


def train_one_more(curves) -> None:
    st.subheader("Train one more size")
    names = list(data.LIVE)
    choose(S.live_size, names)
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    with left:
        name = st.radio(
            "Size",
            names,
            key=S.live_size,
            horizontal=True,
            format_func=lambda n: f"{n} (about {about(data.live_estimate_s(n))})",
            help="d_model and layers; d_mlp = 4·d_model. Trained with the shipped settings, "
            "on one core of this server.",
        )
    with right:
        pressed = st.button("Train it", type="primary", icon=":material/model_training:", key=S.live_go)
    result = run_job(SCALE, "Training", (lambda: data.scaling_start(name)) if pressed else None)
    if isinstance(result, dict):
        run = Run.from_dict(result)
        _live_runs()[run.name] = run  # the session keeps it, whatever the queue forgets
    st.caption(
        "The new size trains with exactly the shipped settings (steps, batch, data order, schedule); when it "
        "ends its point joins both charts in orange. Does it land on the fitted lines?"
    )


def page() -> None:
    st.title("Scaling laws, in miniature")
    st.write(
        "Kaplan et al. (2020) found that a language model's loss falls as a **power law** in its size and in "
        "the compute spent on it. Here six sizes of our stories GPT (d_model 16 → 96, 1 → 4 layers) were "
        "trained on the same stories, in the same order, with the same schedule."
    )
    curves = attempt(data.scaling_curves)  # a missing or damaged curves file: its message
    if curves is None:
        return
    live = list(_live_runs().values())
    charts(curves, live)
    train_one_more(curves)
    live_now = list(_live_runs().values())
    if len(live_now) != len(live):
        st.rerun()  # a run just finished: draw it on the charts above
    runs_table(curves, live_now)


page()
