"""Plotly figures for the Scaling page: loss against parameters and against compute, both on log-log axes.

Inputs are the plain records ``services.scaling_curves()`` reads (``Run``s with float64 arrays, ``PowerLaw``s);
nothing here trains or fits. Shipped sizes are drawn in a sequential colour from small (light) to large
(dark); sizes trained live on the page are orange diamonds / dashed lines; the fitted power law is a dashed
grey line and the compute-optimal frontier a thick black line through the points on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from engine.analysis.scaling_laws import PowerLaw, Run

FIT, FRONTIER, LIVE = "#666666", "#000000", "#e66101"


def size_colours(n: int) -> list[str]:
    """``n`` colours from light to dark blue (Plotly's Blues, its lightest quarter left out)."""
    scale = plotly.colors.sequential.Blues
    return plotly.colors.sample_colorscale(scale, list(np.linspace(0.35, 1.0, n))) if n > 1 else [scale[-1]]


def _log_axes(fig: go.Figure, x_title: str, title: str, height: int) -> go.Figure:
    # the legend hangs from the figure's bottom edge (yref container), not at a fraction of the plot's height: the
    # compute chart's nine entries wrap to three rows in a half-width column, the bottom margin grows to hold them
    # and the plot shrinks, so a legend at y=-0.25 of the plot rose onto the x-axis title
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=50, b=10),
        title=dict(text=title),
        xaxis=dict(type="log", title=dict(text=x_title)),
        yaxis=dict(type="log", title=dict(text="held-out loss (nats/token)")),
        legend=dict(orientation="h", yref="container", y=0, yanchor="bottom"),
    )
    return fig


def loss_vs_params(runs: Sequence[Run], fit: PowerLaw, live: Sequence[Run] = (), *, height: int = 420) -> go.Figure:
    """Each size's final held-out loss against its non-embedding parameters, and the fitted L(N)."""
    fig = go.Figure()
    n_all = [r.n_params for r in (*runs, *live)]
    xs = np.geomspace(min(n_all) / 1.5, max(n_all) * 1.5, 60)
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=fit.predict(xs),
            mode="lines",
            line=dict(color=FIT, dash="dash"),
            name=f"fit: L = (N_c / N)^{fit.alpha:.3f}",
            hovertemplate="N %{x:,.0f}: fit %{y:.3f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[r.n_params for r in runs],
            y=[r.final_loss for r in runs],
            mode="markers+text",
            name="shipped sizes",
            text=[r.name for r in runs],
            textposition="top right",
            marker=dict(size=11, color=size_colours(len(runs))),
            hovertemplate="%{text}: N %{x:,.0f}, loss %{y:.3f}<extra></extra>",
        )
    )
    if live:
        fig.add_trace(
            go.Scatter(
                x=[r.n_params for r in live],
                y=[r.final_loss for r in live],
                mode="markers+text",
                name="trained here",
                text=[r.name for r in live],
                textposition="bottom left",
                marker=dict(size=13, color=LIVE, symbol="diamond"),
                hovertemplate="%{text} (trained here): N %{x:,.0f}, loss %{y:.3f}<extra></extra>",
            )
        )
    fig = _log_axes(fig, "non-embedding parameters N", "Loss against parameters", height)
    fig.update_xaxes(range=[np.log10(xs[0]), np.log10(xs[-1] * 2.5)])  # room for the largest size's label
    return fig


def loss_vs_compute(
    runs: Sequence[Run],
    frontier: Sequence[tuple[str, int]],
    compute_fit: PowerLaw,
    live: Sequence[Run] = (),
    *,
    height: int = 420,
) -> go.Figure:
    """Each size's held-out curve against compute C = 6·N·tokens, the frontier and its power law."""
    fig = go.Figure()
    for run, colour in zip(runs, size_colours(len(runs))):
        seen = run.compute > 0  # step 0 has no place on a log axis
        fig.add_trace(
            go.Scatter(
                x=run.compute[seen],
                y=run.held_out_loss[seen],
                mode="lines",
                name=run.name,
                line=dict(color=colour, width=2),
                customdata=run.step[seen],
                hovertemplate=f"{run.name}, step %{{customdata:.0f}}: C %{{x:.3g}}, loss %{{y:.3f}}<extra></extra>",
            )
        )
    for run in live:
        seen = run.compute > 0
        fig.add_trace(
            go.Scatter(
                x=run.compute[seen],
                y=run.held_out_loss[seen],
                mode="lines",
                name=f"{run.name} (trained here)",
                line=dict(color=LIVE, width=2, dash="dash"),
                customdata=run.step[seen],
                hovertemplate=f"{run.name} (here), step %{{customdata:.0f}}: C %{{x:.3g}}, "
                "loss %{y:.3f}<extra></extra>",
            )
        )
    by_name = {r.name: r for r in runs}
    fx = np.array([by_name[name].compute[i] for name, i in frontier])
    fy = np.array([by_name[name].held_out_loss[i] for name, i in frontier])
    fig.add_trace(
        go.Scatter(
            x=fx,
            y=fy,
            mode="lines+markers",
            name="compute-optimal frontier",
            line=dict(color=FRONTIER, width=4),
            marker=dict(size=7, color=FRONTIER),
            text=[name for name, _ in frontier],
            hovertemplate="frontier (%{text}): C %{x:.3g}, loss %{y:.3f}<extra></extra>",
        )
    )
    if fx.size:
        xs = np.geomspace(fx.min(), fx.max(), 60)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=compute_fit.predict(xs),
                mode="lines",
                line=dict(color=FIT, dash="dot"),
                name=f"frontier fit: L = (C_c / C)^{compute_fit.alpha:.3f}",
                hovertemplate="C %{x:.3g}: fit %{y:.3f}<extra></extra>",
            )
        )
    return _log_axes(fig, "compute C = 6·N·tokens (floating-point operations)", "Loss against compute", height)
