"""``show_chart``: the one way pages put a Plotly figure on screen, themed and with a PNG/SVG download. A figure is
themed as its JSON dict, once, in a read-only :class:`ReadyFigure` that may be sent to every session."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import html
import math
import re
from collections.abc import Hashable
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from app.state import Look
from app.ui import theme

#: pixels of the exported picture when the chart does not fix its own width (a 16:9 slide's width)
EXPORT_WIDTH = 1600
SCALE_PNG = 2  # PNGs at twice the size: sharp on a projector; SVG is vector and needs none


class ReadyFigure(go.Figure):
    """A themed figure already in Plotly's JSON form: ``to_dict()`` answers the dict it holds. Read-only."""

    def __init__(self, spec: dict[str, Any]) -> None:  # noqa: D107 — go.Figure's own init is skipped on purpose
        self._spec = spec

    @property
    def spec(self) -> dict[str, Any]:
        return self._spec

    def to_dict(self) -> dict[str, Any]:
        return self._spec

    to_plotly_json = to_dict

    def __repr__(self) -> str:
        return f"ReadyFigure({self._spec.get('layout', {}).get('title', {}).get('text', '')!r})"


@functools.cache
def _default_template() -> dict[str, Any]:
    """Plotly's default template, made once, shared, never changed."""
    return go.Figure().to_dict()["layout"]["template"]


#: what of the default template's layout is colour defaults for traces (the traces' colours, colour scales)
_TRACE_COLOURS = ("colorway", "colorscale", "coloraxis")


def _own_colours(trace: Any) -> bool:
    """A trace that reads no colour of the template: a heatmap with its own scale, or markers in one colour."""
    if not isinstance(trace, dict):
        return False
    if trace.get("type") == "heatmap":
        return trace.get("colorscale") is not None and "coloraxis" not in trace
    marker = trace.get("marker") if trace.get("type") == "scatter" and trace.get("mode") == "markers" else None
    return isinstance(marker, dict) and isinstance(marker.get("color"), str)


def lean_template(fig: ReadyFigure) -> ReadyFigure:
    """A new ``fig`` whose default template keeps only the trace types it draws, and no colours when no trace reads
    them (the rest is bytes to hash and send). A figure with a template of its own is returned as it is."""
    layout = fig.spec.get("layout")
    template = layout.get("template") if isinstance(layout, dict) else None
    default = _default_template()
    if not isinstance(template, dict) or not (template is default or template == default):
        return fig
    traces = fig.spec.get("data") or ()
    types = frozenset(str(trace.get("type") or "scatter") for trace in traces if isinstance(trace, dict))
    lean = _lean(types, bool(traces) and all(_own_colours(trace) for trace in traces))
    return ReadyFigure({**fig.spec, "layout": {**layout, "template": lean}})


@functools.cache
def _lean(types: frozenset[str], colourless: bool) -> dict[str, Any]:
    """The default template cut to ``types``' defaults, and to no colours when ``colourless`` (a few kinds of figure
    in all: kept for the process, never changed)."""
    default = _default_template()
    data = {name: defaults for name, defaults in default.get("data", {}).items() if name in types}
    if not colourless:
        return {**default, "data": data}
    layout = {k: v for k, v in default.get("layout", {}).items() if k not in _TRACE_COLOURS}
    data = {name: [{k: v for k, v in d.items() if k != "colorscale"} for d in ds] for name, ds in data.items()}
    return {**default, "layout": layout, "data": data}


def ready(fig: go.Figure | dict, look: theme.Theme | None = None) -> ReadyFigure:
    """``fig`` (a ``go.Figure``, or a builder's plain dict, taken over) as a themed :class:`ReadyFigure`, in the
    session's theme unless ``look`` is given."""
    if isinstance(fig, ReadyFigure):
        return fig
    if isinstance(fig, dict):
        typed_arrays(fig)
        fig.setdefault("layout", {}).setdefault("template", _default_template())
    return lean_template(ReadyFigure(theme.style(fig if isinstance(fig, dict) else fig.to_dict(), look)))


_SCALARS = (str, int, float, bool, type(None))


def typed_arrays(obj: Any) -> None:
    """Every array in a figure's dict as a plotly.js typed array, in place, as Plotly's ``convert_to_base64`` writes
    it, asking only what is not a scalar (a tick label) whether it is an array."""
    from _plotly_utils.basevalidators import is_homogeneous_array
    from _plotly_utils.utils import is_skipped_key, to_typed_array_spec

    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, _SCALARS) or is_skipped_key(key):
                continue
            if is_homogeneous_array(value):
                obj[key] = to_typed_array_spec(value)
            else:
                typed_arrays(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            if not isinstance(value, _SCALARS):
                typed_arrays(value)


def frame(x0: float, x1: float, y0: float, y1: float, color: str) -> dict[str, Any]:
    """A rectangle's 3 px outline in data coordinates (the chosen head, a highlighted token's row or column)."""
    return {"type": "rect", "x0": x0, "x1": x1, "y0": y0, "y1": y1, "line": {"color": color, "width": 3}}


def with_shapes(fig: ReadyFigure, shapes: list[dict[str, Any]]) -> ReadyFigure:
    """A new figure: ``fig`` plus ``shapes`` on top (``fig``, perhaps shared, is not changed)."""
    if not shapes:
        return fig
    layout = fig.spec.get("layout", {})
    return ReadyFigure({**fig.spec, "layout": {**layout, "shapes": [*layout.get("shapes", ()), *shapes]}})


SOURCE_CHARS = 70  # characters of the sentence a chart's subtitle quotes
NARROW_SOURCE_CHARS = 28  # the same for a chart a third of the page wide (its model and sentence on two lines)


def source_line(model: str, text: str = "", chars: int = SOURCE_CHARS) -> str:
    """A chart's subtitle: the model and the text cut to ``chars`` characters, HTML-escaped."""
    words = " ".join(str(text).split())
    if len(words) > chars:
        words = words[: chars - 1].rstrip() + "…"
    return html.escape(f"{model} · “{words}”" if words else model, quote=False)


def _source_key() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return f"{Look.source}:{ctx.page_script_hash if ctx is not None else ''}"


def set_source(model: str, text: str = "") -> None:
    """Name the model and text under every :func:`show_chart` title of this page (kept per page; wide, narrow)."""
    st.session_state[_source_key()] = (source_line(model, text), source_line(model, text, NARROW_SOURCE_CHARS), model)


def page_source() -> str:
    """The page's :func:`set_source` line as plain text (for a view that draws text, not markup), "" if none."""
    return html.unescape(st.session_state.get(_source_key(), ("",))[0] or "")


def with_source(fig: ReadyFigure, source: str | None, *, narrow: bool = False) -> ReadyFigure:
    """A new figure: ``fig`` with ``source`` as its title's subtitle (``narrow``: model and sentence on two lines)."""
    if not source:
        return fig
    layout = fig.spec.get("layout", {})
    title = layout.get("title") if isinstance(layout.get("title"), dict) else {}
    look = theme.current()
    lines = 1
    if (look.compact or narrow) and " · " in source:  # model and sentence on two lines
        model, _, words = source.partition(" · ")
        source, lines = f"{model}<br>{words}", 2
    margin = dict(layout.get("margin") or {})
    subtitle_px = max(11, look.tick_px - 1)
    title_px = look.title_px if title.get("text") else 0
    room = title_px + lines * (subtitle_px + 6) + 24 + top_labels_px(layout, look)  # title, subtitle, labels
    before = int(margin.get("t") or 0)
    margin["t"] = max(before, room)
    subtitle = {"text": source, "font": {"size": subtitle_px, "color": look.text}}
    layout = {**layout, "margin": margin, "title": {**title, "subtitle": subtitle}}
    if isinstance(layout.get("height"), (int, float)):  # the plot keeps the size its builder gave it (square tiles)
        layout["height"] = layout["height"] + margin["t"] - before
    return ReadyFigure({**fig.spec, "layout": layout})


def top_labels_px(layout: dict[str, Any], look: theme.Theme) -> int:
    """Pixels that column labels on top of the plot and their axis title take (the top margin holds them too)."""
    need = 0
    for name, axis in layout.items():
        if not (re.fullmatch(r"xaxis\d*", name) and isinstance(axis, dict) and axis.get("side") == "top"):
            continue
        longest = max((theme.shown_chars(t) for t in axis.get("ticktext") or ()), default=3)
        angle = math.radians(abs(float(axis.get("tickangle") or 0)))
        labels = longest * theme.CHAR_EM * look.tick_px * math.sin(angle) + look.tick_px * (1 + math.cos(angle))
        titled = bool((axis.get("title") or {}).get("text")) if isinstance(axis.get("title"), dict) else False
        need = max(need, int(labels + (look.axis_title_px + 14 if titled else 0) + 8))
    return need


def content_key(data: Any) -> Hashable:
    """A cache key equal exactly when two inputs are: arrays by a digest of their bytes, containers and dataclasses
    item by item, anything else as it is (hashable)."""
    if isinstance(data, np.ndarray) and data.dtype.hasobject:  # its bytes are pointers: key the items themselves
        return ("object array", data.shape, content_key(data.ravel().tolist()))
    if isinstance(data, np.ndarray):  # a digest, not the bytes: a cache key outlives the call (a 224² image is 1 MB)
        return (data.dtype.str, data.shape, hashlib.blake2b(np.ascontiguousarray(data).data, digest_size=16).digest())
    if isinstance(data, dict):
        return tuple((str(name), content_key(values)) for name, values in data.items())
    if dataclasses.is_dataclass(data) and not isinstance(data, type):  # a view's record: field by field
        fields = dataclasses.fields(data)
        return (type(data).__qualname__, tuple((f.name, content_key(getattr(data, f.name))) for f in fields))
    if isinstance(data, (list, tuple)):  # every item: a dataclass argument (a caption's view) is keyed field by field
        return tuple(content_key(item) for item in data)
    return data


def _layout(fig) -> dict[str, Any]:
    return fig.spec.get("layout", {}) if isinstance(fig, ReadyFigure) else fig.layout.to_plotly_json()


def file_stem(fig, key: str | None) -> str:
    """A file name for the chart: its title, else its key, reduced to letters, digits, '-' and '_'."""
    title = _layout(fig).get("title") or {}
    text = re.sub(r"<[^>]+>", "", str(title.get("text") or "")) if isinstance(title, dict) else ""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", text or key or "chart").strip("_")
    return (stem or "chart")[:80]


def chart_config(fig, key: str | None, extra: dict[str, Any] | None = None, toolbar: bool = True) -> dict[str, Any]:
    """Plotly's ``config``: the modebar's download in the chosen format; ``extra`` wins but cannot hide the bar (only
    ``toolbar=False`` or the phone view do)."""
    fmt, layout = theme.download_format(), _layout(fig)
    image = {"format": fmt, "filename": file_stem(fig, key), "scale": SCALE_PNG if fmt == "png" else 1}
    image |= {"height": int(layout.get("height") or 450), "width": int(layout.get("width") or EXPORT_WIDTH)}
    config: dict[str, Any] = {"toImageButtonOptions": image, "displaylogo": False}
    config |= {name: value for name, value in (extra or {}).items() if (name, value) != ("displayModeBar", False)}
    if not toolbar or theme.current().compact:  # a phone: the bar covered the title, and a phone rarely saves one
        config["displayModeBar"] = False
    return config


def clicked_points(key: str) -> list[dict]:
    """The points selected (clicked) on chart ``key``, as Streamlit keeps them."""
    event = st.session_state.get(key)
    try:
        return list(event["selection"]["points"])
    except (KeyError, TypeError):
        return []


def clicked_square(key: str, memo: str, size: int, rows: int, cols: int) -> int | None:
    """The square (row-major, ``size`` pixels on a ``rows`` × ``cols`` grid) under a new click on chart ``key``, or
    None; the point is kept under ``memo`` so a selection Streamlit still holds is read once."""
    try:
        first = clicked_points(key)[0]
        point = float(first["x"]), float(first["y"])
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    if st.session_state.get(memo) == point:
        return None
    st.session_state[memo] = point
    r, c = int((point[1] + 0.5) // size), int((point[0] + 0.5) // size)
    return r * cols + c if 0 <= r < rows and 0 <= c < cols else None


def show_chart(
    fig,
    *,
    key: str,
    source: str | None = None,
    text: str | None = None,
    narrow: bool = False,
    toolbar: bool = True,
    **kwargs,
):
    """Draw ``fig`` with a PNG/SVG download; other arguments go to ``st.plotly_chart``. ``source``: the line under
    its title (default: the page's :func:`set_source`, "" for none); ``text``: the sentence it shows when not the
    page's (the page's model, this text); ``narrow``: a chart a third of the page wide; ``toolbar``: False for none
    (a projected room screen, where the bar covers a title and nobody downloads)."""
    page = st.session_state.get(_source_key(), (None, None, None))
    if source is None and text is not None and page[2] is not None:
        source = source_line(page[2], text, NARROW_SOURCE_CHARS if narrow else SOURCE_CHARS)
    elif source is None:
        source = page[narrow]
    fig = with_source(ready(fig), source, narrow=narrow)
    config = chart_config(fig, key, kwargs.pop("config", None), toolbar=toolbar)
    return st.plotly_chart(fig, key=key, config=config, **kwargs)
