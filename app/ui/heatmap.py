"""Every page's heatmap of attention weights, as a compact plain dict (``map_spec``): one float32 array (blocked
cells NaN, drawn grey) on categorical axes, token text escaped (Plotly reads a subset of HTML in labels)."""

from __future__ import annotations

import html
import math
from typing import Literal

import numpy as np
import plotly.graph_objects as go

from app.ui import theme
from app.ui.map_data import MapData, exact_map

MASKED_COLOR = "#d9d9d9"
LABEL_PX = 15  # vertical pixels one tick label needs; with more labels than fit, every k-th is printed
Scale = Literal["linear", "log", "row"]
SCALES: dict[str, str] = {"linear": "linear", "log": "log", "row": "per-row max"}  # the control's help says more
PHONE_PLOT_PX = 200  # px across a map's plot on a 390 px phone (page padding, row labels and colour bar taken)
PHONE_LABEL_PX = 24  # px apart that two upright column labels need there (a line and a gap, measured)
LOG_DECADES = 4  # the log colour scale spans 10⁻⁴ × max … max


def safe_label(text: str) -> str:
    """Token text for Plotly labels: HTML escaped, long tokens shortened."""
    text = text if len(text) <= 24 else text[:23] + "…"
    return html.escape(text, quote=True)


def colorscale() -> str:
    return theme.current().colorscale


def tick_labels(labels: list[str], plot_px: int, need_px: int | None = None) -> tuple[list, list[str]]:
    """Every k-th label, so that the printed ones fit ``plot_px`` pixels, ``need_px`` each (default the theme's)."""
    fit = max(4, plot_px // (need_px or max(LABEL_PX, theme.current().label_px)))
    shown = list(labels[:: max(1, math.ceil(len(labels) / fit))])
    return shown, list(shown)


def label_margin(labels: list[str], title: str, look: theme.Theme | None = None) -> int:
    """The left margin (px) y tick ``labels`` and an axis ``title`` need, set up front (no automargin redraw)."""
    look = look or theme.current()
    widest = max((theme.shown_chars(label) for label in labels), default=0)
    return int(math.ceil(widest * theme.CHAR_EM * look.tick_px + (look.axis_title_px if title else 0) + 46))


def colorbar_margin(title: str, look: theme.Theme | None = None) -> int:
    """The right margin (px) a vertical colour bar with ``title`` needs."""
    look = look or theme.current()
    return int(math.ceil(max(5, theme.shown_chars(title)) * 0.45 * max(look.tick_px, look.axis_title_px) + 48))


def unique_labels(labels: list[str]) -> list[str]:
    """Labels made distinct with invisible zero-width spaces (a categorical axis merges equal names)."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, -1) + 1
        out.append(label + "\u200b" * seen[label])
    return out


def colorscale_stops() -> list[list]:
    """The theme's scale as colour stops (a plain dict must not carry the name: plotly.js's "Blues" differs)."""
    colors = theme.current().colors
    return [[i / (len(colors) - 1), c] for i, c in enumerate(colors)]


def log_colorscale() -> list[list]:
    """The theme's colours with stops at 0, 10⁻⁴, …, 1 of the maximum."""
    colors = theme.current().colors
    stops = [0.0, *np.logspace(-LOG_DECADES, 0, len(colors) - 1).tolist()]
    stops[-1] = 1.0
    return [[s, c] for s, c in zip(stops, colors)]


def map_figure(data: MapData, **kwargs) -> go.Figure:
    """:func:`map_spec` as a ``go.Figure`` (for pages that add traces or shapes through Plotly)."""
    return go.Figure(map_spec(data, **kwargs))


def map_spec(
    data: MapData,
    *,
    title: str = "",
    scale: Scale = "linear",
    zmax: float | None = None,
    height: int | None = None,
    width: int | None = None,
    showscale: bool = True,
    x_title: str = "key (attended to)",
    y_title: str = "query (attending)",
    rows_px: int | None = None,
) -> dict:
    """One map (exact cells or pooled blocks) as a Plotly figure's plain dict. ``zmax``: top of the colour scale
    (default the largest value); ``width``: pixels across when the chart shares a row; ``rows_px``: pixels the rows
    get when the browser sizes the map (presenter mode)."""
    values = np.asarray(data.values, dtype=np.float32)
    n_q, n_k = values.shape
    q_lab, k_lab = (unique_labels([safe_label(t) for t in labels]) for labels in (data.q_labels, data.k_labels))
    top = float(zmax) if zmax is not None else float(np.max(values, where=np.isfinite(values), initial=0.0))
    top = top if top > 0 else 1.0
    what = "share of row max" if scale == "row" and data.value_name == "weight" else data.value_name
    cell = f" ({data.reduce} over block)" if data.pooled else ""
    hover = "query <b>%{y}</b> → key <b>%{x}</b><br>" + html.escape(what) + cell + " %{z:.3f}<extra></extra>"
    colorbar = dict(title={"text": html.escape(what) + (" (log colour)" if scale == "log" else "")}, thickness=12)
    if scale == "log":
        colorbar.update(tickvals=[top * 10.0**-k for k in range(LOG_DECADES, -1, -1)][-3:], tickformat=".3g")
    look = theme.current()
    row_px = max(22, look.label_px + 2)  # presenter mode: taller rows, so every label still fits
    side = height or max(320, min(900, row_px * max(n_q, n_k) + 140))
    across = width if width is not None and not look.stack else side
    # rows sized by the browser (rows_px): thinned only where one em per label does not fit
    yv, yt = tick_labels(q_lab, rows_px, look.tick_px) if rows_px is not None else tick_labels(q_lab, side - 140)
    if width is None:  # a map of its own: margins set for its labels and colour bar, so it is drawn once
        margin_l = label_margin(yt, y_title, look)
        margin_r = colorbar_margin(colorbar["title"]["text"], look) if showscale else 10
    else:  # maps side by side, a few hundred px each: plotly.js's automargin fits them tightest (a second draw)
        margin_l = margin_r = 10
    if look.compact:  # a phone: the plot is ~PHONE_PLOT_PX across whatever the figure's height; labels upright
        xv, xt = tick_labels(k_lab, PHONE_PLOT_PX * look.label_px // PHONE_LABEL_PX)
    else:  # rotated −60°, neighbouring labels need ~1.15 × their line apart across the plot (margins ≈ 160 px)
        xv, xt = tick_labels(k_lab, int((across - 160) / 1.15) if width is not None else side - 140)
    return {
        "data": [
            {
                "type": "heatmap",
                "z": values,
                "x": k_lab,
                "y": q_lab,
                "zmin": 0.0,
                "zmax": top,
                "colorscale": log_colorscale() if scale == "log" else colorscale_stops(),
                "hovertemplate": hover,
                "hoverongaps": False,
                "colorbar": colorbar,
                "showscale": showscale,
            }
        ],
        "layout": {
            "title": dict(text=html.escape(title), x=0.0, font={"size": 15}, yref="container", automargin=True),
            "height": side,
            "margin": {"l": margin_l, "r": margin_r, "t": 40 if title else 10, "b": 10},
            "plot_bgcolor": MASKED_COLOR,
            "xaxis": label_axis(x_title, xv, xt, type="category", tickangle=-90 if look.compact else -60, side="top"),
            "yaxis": label_axis(y_title, yv, yt, type="category", autorange="reversed"),
        },
    }


def label_axis(title: str, values: list, labels: list[str], **extra) -> dict:
    """An axis that prints ``labels`` at ``values``, with no grid or zero line."""
    axis = {"title": {"text": title}, "tickmode": "array", "tickvals": values, "ticktext": labels}
    return {**axis, "showgrid": False, "zeroline": False, **extra}


def attention_heatmap(
    pattern: np.ndarray, query_tokens: list[str], key_tokens: list[str], *, blocked: np.ndarray | None = None, **options
) -> go.Figure:
    """One small exact map with tokens on both axes; ``blocked`` cells grey; ``options`` as for :func:`map_spec`."""
    return map_figure(exact_map(pattern, query_tokens, key_tokens, blocked=blocked), **options)


def layer_mean_map(real) -> go.Figure:
    """A layer's mean of heads as the Pretraining page's "Real" map (the page and the offline pack)."""
    return attention_heatmap(
        real.weights,
        list(real.queries),
        list(real.keys),
        blocked=real.blocked,
        title=f"Real: {real.model_id}, layer {real.layer}, mean of heads",
        height=320,
    )
