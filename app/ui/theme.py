"""One place for how charts look: font sizes, text colours, colour scales, presenter mode and the phone view.

A projector needs every page's figures to change together (larger type, darker text, a colour-blind-safe scale).
Builders read :func:`current` for the scale and sizes they choose; :func:`style` writes the rest (fonts, tick
colours, the paper colour) into a figure's *layout*, over Streamlit's own Plotly template (whose 12 px ticks in
``#808495`` are 3.7:1 on white, under WCAG's 4.5:1).

Presenter mode is on when the URL says ``?present=1`` on load or the sidebar toggle (session key
``present``) is on. It stacks side-by-side charts (:func:`side_by_side`), folds page controls into an
expander (:func:`controls`) and enlarges the page's type with a little CSS.

Compact view is for phones: on when the browser's User-Agent names a phone (``st.context.headers``: the
server knows nothing of the viewport) until the sidebar toggle (session key ``compact``) says otherwise. Maps
print fewer, upright column labels, charts hide Plotly's toolbar (it covered their titles), Explore adds the
picked query token's row as bars and draws the heads of a layer a few to a row (large enough to tap).
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

import plotly.colors
import streamlit as st

from app.state import Look, choose, default_from

PHONE_WORDS = ("iphone", "android", "mobile", "ipod", "windows phone")  # User-Agents of phones (and small tablets)
DOWNLOAD_FORMATS = ("png", "svg")


def _scale(name: str) -> tuple[str, ...]:
    """A Plotly sequential scale's colours, read from the installed plotly (not copied here)."""
    return tuple(getattr(plotly.colors.sequential, name))


@dataclass(frozen=True)
class Theme:
    """Every look-and-feel number a figure builder needs.

    Attributes:
        name: "default" or "presenter".
        text: colour of tick labels, titles and legends (contrast with ``paper`` ≥ 4.5:1).
        paper: figure background (written into the layout so the contrast is known, not inherited).
        tick_px, axis_title_px, title_px, legend_px: font sizes in CSS pixels.
        colorscale: Plotly name of the sequential scale of attention maps.
        colors: that scale's colour stops (the log scale re-spaces them).
        overlay_opacity: how opaque the ViT attention overlay is over the picture.
        label_px: pixels one tick label needs along an axis (how densely labels are thinned).
        stack: draw side-by-side charts one under the other.
        css: extra CSS for the page (presenter: larger type).
        compact: a phone's view (upright, thinned column labels; no toolbar; a few tiles to a row).
    """

    name: str
    text: str = "#1b2430"  # the app's textColor (.streamlit/config.toml): 15:1 on white
    paper: str = "#ffffff"
    tick_px: int = 13
    axis_title_px: int = 14
    title_px: int = 16
    legend_px: int = 13
    colorscale: str = "Blues"
    colors: tuple[str, ...] = field(default_factory=lambda: _scale("Blues"))
    overlay_opacity: float = 0.85
    label_px: int = 15
    stack: bool = False
    css: str = ""
    compact: bool = False


#: a tick label's average character width, in font sizes (Source Sans; measured ~0.5): what the margin
#: estimates (charts.top_labels_px, heatmap.label_margin) count per character of a label
CHAR_EM = 0.55

DEFAULT = Theme(name="default")
PRESENTER_CSS = """
<style>
/* presenter mode: everything Streamlit sizes in rem grows with the root font */
html { font-size: 20px; }
.stApp [data-testid="stCaptionContainer"], .stApp [data-testid="stCaptionContainer"] p { color: #1b2430; }
/* the header's strip is given to the page: its two buttons (sidebar, menu) stay, the page sits between them */
.stApp header[data-testid="stHeader"] { background: transparent; pointer-events: none; }
.stApp header[data-testid="stHeader"] button, .stApp header[data-testid="stHeader"] [data-testid="stToolbar"] {
  pointer-events: auto; }
.stApp [data-testid="stMainBlockContainer"] { max-width: 100%; padding: 0.75rem 3.5rem 2rem 3.5rem; }
.stApp [data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 0.6rem; }
</style>
"""
PRESENTER = Theme(
    name="presenter",
    text="#000000",
    tick_px=18,
    axis_title_px=20,
    title_px=26,
    legend_px=18,
    colorscale="Cividis",
    colors=_scale("Cividis"),
    overlay_opacity=0.9,
    label_px=24,
    stack=True,
    css=PRESENTER_CSS,
)
COMPACT = dataclasses.replace(DEFAULT, name="compact", compact=True)
PRESENTER_COMPACT = dataclasses.replace(PRESENTER, name="presenter-compact", compact=True)
#: presenter mode: the main map's height is the window's (CSS ``vh``) less the one row of controls above it
PRESENTER_MAP_VH = 100
PRESENTER_MAP_OFF_PX = 190
#: presenter mode: the Heads page's grid of every head sits below a row of controls and the tabs (about 250 px at 720)
PRESENTER_GRID_OFF_PX = 260
#: pixels the main map's row labels are thinned for in presenter mode (the server never knows the window): what a
#: 1280×720 projector leaves the rows once the controls, title, subtitle and column labels are placed
PRESENTER_MAP_ROWS_PX = 720 - PRESENTER_MAP_OFF_PX - 230


def _flag(value: Any) -> bool:
    """A query-parameter or session value read as a switch ("1", "true", "on", True)."""
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else ""
    return str(value).strip().lower() in {"1", "true", "yes", "on"}


def presenting_link() -> bool:
    """True when this run's URL asks for presenter mode (``?present=1``)."""
    return _flag(st.query_params.get(Look.present, ""))


def _session(key: str, default: Any) -> Any:
    """A value of this browser's look, ``default`` outside a script run (a notebook, a thread)."""
    try:
        return st.session_state.get(key, default)
    except Exception:  # noqa: BLE001 — outside a script run, whatever Streamlit raises: the default look
        return default


def presenting() -> bool:
    """True when presenter mode is on in this session."""
    return bool(_session(Look.present, False))


def is_phone(user_agent: str | None) -> bool:
    """True when a browser's User-Agent names a phone (what the server can know of the screen)."""
    agent = (user_agent or "").lower()
    return any(word in agent for word in PHONE_WORDS)


def compact() -> bool:
    """True when this session shows the compact (phone) view."""
    return bool(_session(Look.compact, False))


_FORCED: contextvars.ContextVar[Theme | None] = contextvars.ContextVar("ap_forced_theme", default=None)


@contextlib.contextmanager
def looking(look: Theme):
    """Figures built inside look ``look`` whatever this session's mode (the offline pack is read on a laptop, not
    on this projector or phone)."""
    token = _FORCED.set(look)
    try:
        yield
    finally:
        _FORCED.reset(token)


def current() -> Theme:
    """The theme of this session's run (or the one :func:`looking` sets)."""
    forced = _FORCED.get()
    if forced is not None:
        return forced
    if compact():
        return PRESENTER_COMPACT if presenting() else COMPACT
    return PRESENTER if presenting() else DEFAULT


def download_format() -> str:
    """ "png" or "svg": what a chart's download button saves (the sidebar setting)."""
    value = _session(Look.download, "png")
    return value if value in DOWNLOAD_FORMATS else "png"


def _merge(into: dict, new: dict) -> dict:
    """Merge ``new`` into ``into`` as Plotly's ``update`` does: nested dicts merge, other values replace."""
    for name, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(name), dict):
            _merge(into[name], value)
        else:
            into[name] = copy.deepcopy(value)
    return into


def style(spec: dict, theme: Theme | None = None) -> dict:
    """Write the theme's fonts and colours into a figure's JSON dict (``fig.to_dict()``), in place; return it.

    Only text, tick and background properties are touched; sizes a builder set on purpose (a smaller
    annotation) are kept unless presenter mode needs them larger. Plain dict merges, as Plotly's
    ``update_layout`` / ``update_xaxes`` / ``update_yaxes`` would write them (tests/app/test_charts.py
    holds the two side by side), without Plotly's per-property validation.
    """
    t = theme or current()
    tick = {"size": t.tick_px, "color": t.text}
    axis = {"tickfont": tick, "title": {"font": {"size": t.axis_title_px, "color": t.text}}, "color": t.text}
    layout = spec.setdefault("layout", {})
    _merge(
        layout,
        {
            "font": {"color": t.text, "size": t.tick_px},
            "paper_bgcolor": t.paper,
            "legend": {"font": {"size": t.legend_px, "color": t.text}},
            "hoverlabel": {"font": {"size": max(13, t.tick_px - 2)}},
        },
    )
    if isinstance(layout.get("title"), dict) and layout["title"].get("text"):
        _merge(layout, {"title": {"font": {"size": t.title_px, "color": t.text}}})
    for letter in "xy":  # every x and y axis; a figure without one gets the first (as update_xaxes does)
        names = [name for name in layout if re.fullmatch(letter + r"axis\d*", name)] or [letter + "axis"]
        for name in names:
            _merge(layout.setdefault(name, {}), axis)
    for trace in spec.get("data", ()):  # colour bars of heatmaps
        if trace.get("type") in {"heatmap", "histogram2d", "contour"} and trace.get("showscale") is not False:
            _merge(
                trace, {"colorbar": {"tickfont": tick, "title": {"font": {"size": t.axis_title_px, "color": t.text}}}}
            )
    if t.stack:  # bigger annotations (head names over thumbnails) and a margin for bigger ticks
        for note in layout.get("annotations", ()):
            size = (note.get("font") or {}).get("size") or 0
            _merge(note, {"font": {"size": max(t.tick_px, size), "color": t.text}})
    return spec


def _phone_browser() -> bool:
    """Whether this session's browser is a phone's (from its User-Agent)."""
    try:
        agent = st.context.headers.get("User-Agent")
    except Exception:  # noqa: BLE001 — Streamlit's context without a browser (AppTest): not a phone
        agent = None
    return is_phone(agent)


def init_presenter() -> bool:
    """Run by the entry point: presenter mode from ``?present=1`` on load, a sidebar toggle, and the
    chart-download setting. Returns whether presenter mode is on."""
    # drawn here on every page, so a page switch keeps them with no write-back (tests/e2e/test_page_switch_e2e.py)
    default_from(Look.present, presenting_link)  # the link decides on load; the toggle after that
    default_from(Look.compact, _phone_browser)  # a phone's browser decides on load; the toggle after that
    choose(Look.download, DOWNLOAD_FORMATS)  # new session, or the choice clicked off: PNG
    with st.sidebar:
        st.toggle(
            "Presenter mode",
            key=Look.present,
            help="For a projector: larger type, darker text, a colour-blind-safe colour scale, one chart "
            "at a time at full width, controls folded away. A link with ?present=1 opens in it.",
        )
        st.toggle(
            "Compact view",
            key=Look.compact,
            help="For a phone: fewer, upright labels, no chart toolbar, a query token's weights as bars, "
            "larger head tiles. On by itself in a phone's browser.",
        )
        st.segmented_control(
            "Chart downloads",
            DOWNLOAD_FORMATS,
            key=Look.download,
            format_func=str.upper,
            help="What the camera button above each chart saves: PNG (slides) or SVG (sharp at any size, editable).",
        )
    on = bool(st.session_state[Look.present])
    if on:
        st.html(PRESENTER_CSS)
    return on


def side_by_side(spec: int | list[float], **kwargs) -> list:
    """``st.columns(spec)`` normally; in presenter mode as many full-width containers, one under the other."""
    if current().stack:
        return [st.container() for _ in range(spec if isinstance(spec, int) else len(spec))]
    return list(st.columns(spec, **kwargs))


def map_css(key: str, off_px: int = PRESENTER_MAP_OFF_PX) -> str:
    """Presenter mode's CSS that gives the container ``key`` the window's height less ``off_px`` (one row of
    controls, by default); a chart in it drawn with ``height="stretch"`` and no height of its own fills it."""
    size = f"calc({PRESENTER_MAP_VH}vh - {off_px}px)"
    return f"<style>.st-key-{key} {{ flex: 0 0 {size} !important; height: {size} !important; }}</style>"


@contextlib.contextmanager
def tools(label: str = "Display options"):
    """A map's secondary controls (highlight a token, colour scale, zoom) in place; in presenter mode in a popover
    in the row above the map, so the map starts at the top of the screen."""
    if current().stack:
        with st.popover(label, icon=":material/tune:"):
            yield
    else:
        yield


@contextlib.contextmanager
def controls(label: str = "Controls"):
    """Page controls as they are; in presenter mode inside a collapsed expander (the chart gets the screen)."""
    if current().stack:
        with st.expander(label, icon=":material/tune:", expanded=False):
            yield
    else:
        yield
