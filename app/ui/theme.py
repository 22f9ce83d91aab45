"""How charts look: font sizes, text colours, colour scales, presenter mode and the phone view.

Builders read :func:`current` for the scale and sizes; :func:`style` writes fonts and colours into a figure's layout.
Presenter mode (``?present=1`` on load, or the sidebar toggle) stacks charts, folds controls away and enlarges type.
Compact view (on when the User-Agent names a phone, until the toggle says otherwise) thins labels and hides toolbars.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import plotly.colors
import streamlit as st

from app.state import BOOLEAN_WORDS, Look, choose, default_from

PHONE_WORDS = ("iphone", "android", "mobile", "ipod", "windows phone")  # User-Agents of phones (and small tablets)
DOWNLOAD_FORMATS = ("png", "svg")


@dataclass(frozen=True)
class Theme:
    """Every look-and-feel number a figure builder needs (sizes in CSS pixels; ``label_px``: what one tick label
    needs along an axis; ``stack``: side-by-side charts one under the other; ``compact``: a phone's view)."""

    name: str
    text: str = "#1b2430"  # the app's textColor (.streamlit/config.toml): 15:1 on white
    paper: str = "#ffffff"
    tick_px: int = 13
    axis_title_px: int = 14
    title_px: int = 16
    legend_px: int = 13
    colorscale: str = "Blues"
    overlay_opacity: float = 0.85
    label_px: int = 15
    stack: bool = False
    css: str = ""
    compact: bool = False

    @property
    def colors(self) -> tuple[str, ...]:
        """The colour stops of ``colorscale``, read from the installed plotly."""
        return tuple(getattr(plotly.colors.sequential, self.colorscale))


#: a tick label's average character width, in font sizes (Source Sans): what margin estimates count per character
CHAR_EM = 0.55


def shown_chars(label: object) -> int:
    """Characters of a Plotly label as the browser shows it (a tag: none, an entity: one; zero-width spaces: none)."""
    return len(re.sub(r"<[^>]+>|&#?\w+;", "x", str(label)).replace("\u200b", ""))


DEFAULT = Theme(name="default")
#: every view: Streamlit fades a caption to 60 % of the text colour (4.2:1 on white, 4.1:1 on the sidebar's blue);
#: 70 % keeps captions quieter than body text and above WCAG AA's 4.5:1 on both (5.8:1, 5.5:1). A display formula
#: wider than a phone shrinks to the window instead of scrolling (a scrolling region needs a keyboard focus).
BASE_CSS = """
<style>
.stApp [data-testid="stCaptionContainer"] { opacity: 0.7; }
.stApp .katex-display > .katex { font-size: min(1.21em, 3.6vw); }
</style>
"""
PRESENTER_CSS = """
<style>
/* presenter mode: everything Streamlit sizes in rem grows with the root font */
html { font-size: 20px; }
.stApp [data-testid="stCaptionContainer"] { opacity: 1; }
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
    overlay_opacity=0.9,
    label_px=24,
    stack=True,
    css=PRESENTER_CSS,
)
COMPACT = dataclasses.replace(DEFAULT, name="compact", compact=True)
PRESENTER_COMPACT = dataclasses.replace(PRESENTER, name="presenter-compact", compact=True)
#: presenter mode: the main map's height is the window's less the one row of controls above it
PRESENTER_MAP_OFF_PX = 190
#: pixels the main map's rows get in presenter mode on a 1280×720 projector (the server never knows the window)
PRESENTER_MAP_ROWS_PX = 720 - PRESENTER_MAP_OFF_PX - 230


def presenting_link() -> bool:
    """True when this run's URL says ``?present=1``."""
    return BOOLEAN_WORDS.get(st.query_params.get(Look.present, "").strip().lower(), False)


def _session(key: str, default: Any) -> Any:
    try:
        return st.session_state.get(key, default)
    except Exception:  # noqa: BLE001 — outside a script run, whatever Streamlit raises: the default look
        return default


def presenting() -> bool:
    return bool(_session(Look.present, False))


def is_phone(user_agent: str | None) -> bool:
    agent = (user_agent or "").lower()
    return any(word in agent for word in PHONE_WORDS)


def compact() -> bool:
    return bool(_session(Look.compact, False))


_FORCED: contextvars.ContextVar[Theme | None] = contextvars.ContextVar("ap_forced_theme", default=None)


@contextlib.contextmanager
def looking(look: Theme):
    """Figures built inside look ``look`` whatever this session's mode (the offline pack)."""
    token = _FORCED.set(look)
    try:
        yield
    finally:
        _FORCED.reset(token)


def current() -> Theme:
    """The theme of this session's run (or the one :func:`looking` sets)."""
    if (forced := _FORCED.get()) is not None:
        return forced
    return ((DEFAULT, PRESENTER), (COMPACT, PRESENTER_COMPACT))[compact()][presenting()]


def download_format() -> str:
    """What a chart's download button saves ("png" or "svg")."""
    value = _session(Look.download, "png")
    return value if value in DOWNLOAD_FORMATS else "png"


def _merge(into: dict, new: dict) -> dict:
    """Merge ``new`` into ``into`` as Plotly's ``update`` does."""
    for name, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(name), dict):
            _merge(into[name], value)
        else:
            into[name] = copy.deepcopy(value)
    return into


def style(spec: dict, theme: Theme | None = None) -> dict:
    """Write the theme's fonts and colours into a figure's JSON dict, in place, as Plotly's ``update_layout`` /
    ``update_xaxes`` would (without their validation); return it."""
    t = theme or current()
    tick, title = {"size": t.tick_px, "color": t.text}, {"font": {"size": t.axis_title_px, "color": t.text}}
    axis = {"tickfont": tick, "title": title, "color": t.text}
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
            _merge(trace, {"colorbar": {"tickfont": tick, "title": title}})
    if t.stack:  # bigger annotations (head names over thumbnails) and a margin for bigger ticks
        for note in layout.get("annotations", ()):
            size = (note.get("font") or {}).get("size") or 0
            _merge(note, {"font": {"size": max(t.tick_px, size), "color": t.text}})
    return spec


def _phone_browser() -> bool:
    try:
        return is_phone(st.context.headers.get("User-Agent"))
    except Exception:  # noqa: BLE001 — Streamlit's context without a browser (AppTest): not a phone
        return False


def init_presenter() -> bool:
    """The entry point's sidebar toggles (presenter mode, compact view) and the chart-download setting, drawn on
    every page so a page switch keeps them; returns whether presenter mode is on."""
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
    st.html(BASE_CSS + (PRESENTER_CSS if on else ""))
    return on


def side_by_side(spec: int | list[float], **kwargs) -> list:
    """``st.columns(spec)`` normally; in presenter mode as many full-width containers, one under the other."""
    if current().stack:
        return [st.container() for _ in range(spec if isinstance(spec, int) else len(spec))]
    return list(st.columns(spec, **kwargs))


def tools(label: str = "Display options"):
    """A map's secondary controls in place; in presenter mode in a popover above the map."""
    return st.popover(label, icon=":material/tune:") if current().stack else contextlib.nullcontext()


def controls(label: str = "Controls"):
    """Page controls as they are; in presenter mode inside a collapsed expander."""
    return st.expander(label, icon=":material/tune:", expanded=False) if current().stack else contextlib.nullcontext()
