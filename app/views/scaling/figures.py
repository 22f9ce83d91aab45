"""The Scaling page's figures: loss against parameters and against compute, on log-log axes (``Run`` and
``PowerLaw`` records in). Shipped sizes go light to dark blue, sizes trained here are orange; the pure power law is
grey, the law with an irreducible term E purple."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from engine.analysis.scaling_laws import PowerLaw, Run

FIT, FIT_E, FRONTIER, LIVE = "#666666", "#5e3c99", "#000000", "#e66101"


def size_colours(n: int) -> list[str]:
    """``n`` colours from light to dark blue (Plotly's Blues, its lightest quarter left out)."""
    scale = plotly.colors.sequential.Blues
    return plotly.colors.sample_colorscale(scale, list(np.linspace(0.35, 1.0, n))) if n > 1 else [scale[-1]]


def _trace(x, y, name: str, hover: str, mode: str = "lines", **style) -> go.Scatter:
    return go.Scatter(x=x, y=y, name=name, mode=mode, hovertemplate=f"{hover}<extra></extra>", **style)


def _log_axes(fig: go.Figure, x_title: str, title: str, height: int) -> go.Figure:
    # the legend hangs from the figure's bottom edge (yref container): wrapped rows never climb onto the x title
    return fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=50, b=10),
        title=dict(text=title),
        xaxis=dict(type="log", title=dict(text=x_title)),
        yaxis=dict(type="log", title=dict(text="held-out loss (nats/token)")),
        legend=dict(orientation="h", yref="container", y=0, yanchor="bottom"),
    )


def law_name(fit: PowerLaw, x: str) -> str:
    """``L = (N_c / N)^α`` or ``L = E + (N_c / N)^α`` with the fitted numbers (``x``: "N" or "C")."""
    e = f"{fit.irreducible:.2f} + " if fit.irreducible else ""
    return f"L = {e}({x}_c / {x})^{fit.alpha:.3f}"


def _fits(fig: go.Figure, xs: np.ndarray, fits: Sequence[PowerLaw], x: str, prefix: str, dash: str) -> None:
    """The pure law (grey, ``dash``) and, when ``fits`` holds a second, the law with E (purple, dash-dot)."""
    x_hover = "%{x:,.0f}" if x == "N" else "%{x:.3g}"
    for fit, colour, style, with_e in zip(fits, (FIT, FIT_E), (dash, "dashdot"), ("", " with E")):
        name, line = f"{prefix}{with_e}: {law_name(fit, x)}", dict(color=colour, dash=style)
        fig.add_trace(_trace(xs, fit.predict(xs), name, f"{x} {x_hover}: fit{with_e} %{{y:.3f}}", line=line))


def loss_vs_params(
    runs: Sequence[Run],
    fit: PowerLaw,
    live: Sequence[Run] = (),
    *,
    with_e: PowerLaw | None = None,
    height: int = 420,
) -> go.Figure:
    """Each size's final held-out loss against its non-embedding parameters, the fitted L(N) and, given, the
    fitted law with an irreducible term."""
    n_all = [r.n_params for r in (*runs, *live)]
    xs = np.geomspace(min(n_all) / 1.5, max(n_all) * 1.5, 60)
    fig = go.Figure()
    _fits(fig, xs, [fit, with_e] if with_e else [fit], "N", "fit", "dash")
    shipped = dict(size=11, color=size_colours(len(runs)))
    for group, name, (where, note), marker in (
        (runs, "shipped sizes", ("top right", ""), shipped),
        (live, "trained here", ("bottom left", " (trained here)"), dict(size=13, color=LIVE, symbol="diamond")),
    ):
        if group:
            x, y = [r.n_params for r in group], [r.final_loss for r in group]
            hover = f"%{{text}}{note}: N %{{x:,.0f}}, loss %{{y:.3f}}"
            style = dict(text=[r.name for r in group], textposition=where, marker=marker)
            fig.add_trace(_trace(x, y, name, hover, "markers+text", **style))
    fig = _log_axes(fig, "non-embedding parameters N", "Loss against parameters", height)
    return fig.update_xaxes(range=[np.log10(xs[0]), np.log10(xs[-1] * 2.5)])  # room for the largest size's label


def loss_vs_compute(
    runs: Sequence[Run],
    frontier: Sequence[tuple[str, int]],
    compute_fit: PowerLaw,
    live: Sequence[Run] = (),
    *,
    with_e: PowerLaw | None = None,
    height: int = 420,
) -> go.Figure:
    """Each size's held-out curve against compute C = 6·N·tokens, the frontier, its power law and, given, its law
    with an irreducible term."""
    fig = go.Figure()
    lines = [(run, run.name, dict(color=colour, width=2)) for run, colour in zip(runs, size_colours(len(runs)))]
    lines += [(run, f"{run.name} (trained here)", dict(color=LIVE, width=2, dash="dash")) for run in live]
    for run, name, line in lines:
        seen = run.compute > 0  # step 0 has no place on a log axis
        hover = f"{name}, step %{{customdata:.0f}}: C %{{x:.3g}}, loss %{{y:.3f}}"
        fig.add_trace(
            _trace(run.compute[seen], run.held_out_loss[seen], name, hover, line=line, customdata=run.step[seen])
        )
    by_name = {r.name: r for r in runs}
    fx = np.array([by_name[name].compute[i] for name, i in frontier])
    fy = np.array([by_name[name].held_out_loss[i] for name, i in frontier])
    style = dict(line=dict(color=FRONTIER, width=4), marker=dict(size=7, color=FRONTIER), text=[n for n, _ in frontier])
    hover = "frontier (%{text}): C %{x:.3g}, loss %{y:.3f}"
    fig.add_trace(_trace(fx, fy, "compute-optimal frontier", hover, "lines+markers", **style))
    if fx.size:
        xs = np.geomspace(fx.min(), fx.max(), 60)
        _fits(fig, xs, [compute_fit, with_e] if with_e else [compute_fit], "C", "frontier fit", "dot")
    return _log_axes(fig, "compute C = 6·N·tokens (floating-point operations)", "Loss against compute", height)
