"""``show_chart``: the one way pages put a Plotly figure on screen.

Why one wrapper instead of ``st.plotly_chart`` everywhere: a projector and a slide deck need the same
things from every chart. Here each figure gets the session's theme (:mod:`app.components.theme`:
font sizes, text contrast) and a download button (the modebar's camera) that saves a PNG or an SVG —
the sidebar's "Chart downloads" setting — under a file name taken from the chart, at a size fit for
a slide. The download is made by plotly.js in the browser, so the server does no work for it.
"""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

from app.components import theme

#: pixels of the exported picture when the chart does not fix its own width (a 16:9 slide's width)
EXPORT_WIDTH = 1600
SCALE_PNG = 2  # PNGs at twice the size: sharp on a projector; SVG is vector and needs none


def file_stem(fig, key: str | None) -> str:
    """A file name for the chart: its title, else its key, reduced to letters, digits, '-' and '_'."""
    title = ""
    if fig.layout.title is not None and fig.layout.title.text:
        title = re.sub(r"<[^>]+>", "", str(fig.layout.title.text))
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", title or key or "chart").strip("_")
    return (stem or "chart")[:80]


def chart_config(fig, key: str | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Plotly's ``config`` for a chart: the modebar's download button in the chosen format and name.

    ``extra`` (a page's own config) wins, except that a chart whose modebar a page hid gets it back:
    every chart must be downloadable, and its download button is in that bar.
    """
    fmt = theme.download_format()
    height = fig.layout.height or 450
    width = fig.layout.width or EXPORT_WIDTH
    config: dict[str, Any] = {
        "toImageButtonOptions": {"format": fmt, "filename": file_stem(fig, key), "height": int(height),
                                 "width": int(width), "scale": SCALE_PNG if fmt == "png" else 1},
        "displaylogo": False,
    }
    for name, value in (extra or {}).items():
        if name == "displayModeBar" and value is False:
            continue  # keep the bar: it holds the download button
        config[name] = value
    return config


def show_chart(fig, *, key: str, **kwargs):
    """Draw ``fig`` themed, with a PNG/SVG download; every other argument goes to ``st.plotly_chart``."""
    theme.style(fig)
    config = chart_config(fig, key, kwargs.pop("config", None))
    return st.plotly_chart(fig, key=key, config=config, **kwargs)
