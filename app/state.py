"""Session-state keys and their defaults, declared once.

``K`` holds the keys the text pages share; a page moved to this rule has a class of its own (``Bahdanau``, ``Vit``, ``Positional``, ``Step``, ``Heads``)
that its page, its components and ``app/url_params.py`` all read, so a key or a link's default is spelled
in one place (``tests/unit/test_state_keys.py`` lists the moved files and fails on a key written in place).

Widgets are created with ``key=K.*`` and ``persist_state="session"`` (a value survives a page
switch). The URL carries them through ``app.url_state`` (the table of parameters: ``app/url_params.py``),
not through ``bind="query-params"``.

Writes that are not a user's action go through the helpers at the end of this module, one per idiom
(``tests/unit/test_state_keys.py`` fails on a default written in place elsewhere):

- :func:`default` / :func:`defaults`: the value a key starts a session with (set once, then left to the
  user, a link, a widget); :func:`default_from` when the value must be made (read from the link or the
  browser, a random id, a store lookup) and only once.
- :func:`choose`: a choice among fixed options; a value that is none of them (a forged link, an old session, a
  model that went away) becomes the first option or a given fallback.
- :func:`clamp`: a number inside ``[low, high]`` (a layer after a model switch), with the value a session
  starts with; :func:`bounded` is the same check on a value without writing it.
- :func:`settle`: put a computed value in before its widget is drawn, writing only a change.
- :func:`keep`: write a widget's value back to itself on every run, for the keys measured to need it.

What a page still writes itself is what a user did (a callback storing a click, a button's result, an error
to show once).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import streamlit as st

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."
DEFAULT_MODEL = "minilm"


class K:
    """Session-state keys (also the URL query-parameter names: ``app/url_params.py``)."""

    text = "text"
    model = "model"
    hub_id = "hub_id"
    layer = "layer"
    head = "head"
    causal = "causal"
    max_tokens = "max_tokens"
    session_id = "_session_id"  # this browser session's random id (services.session_id)
    causal_for = "_causal_for"  # the model the causal toggle's default was read for
    causal_default = "_causal_default"  # that default: a link names the mask only when it differs from it


class Look:
    """How every page looks in this browser (``app/ui/theme.py``), and the highlighted token
    (``app/ui/linked_tokens.py``); ``present``, ``hide`` and ``focus`` are also URL parameters."""

    present = "present"  # presenter mode
    hide = "hide"  # the controls a link hides (a frozenset of HIDEABLE names: hidden())
    compact = "compact"  # the phone layout
    download = "chart_download_format"  # PNG or SVG from every chart's camera button
    focus = "focus"  # the token highlighted on every text page
    source = "_chart_source"  # + a page's script hash: the model and sentence its charts show (charts.set_source)


#: what ``?hide=`` can hide (each URL parameter's ``hide`` is one of these)
HIDEABLE = ("text", "model", "layer", "head", "causal", "max_tokens", "block", "tabs")


def hidden(control: str) -> bool:
    """True when the link hides ``control`` (a name of :data:`HIDEABLE`); its value still comes from the link."""
    return control in (st.session_state.get(Look.hide) or ())


def hidden_controls() -> tuple[str, ...]:
    return tuple(name for name in HIDEABLE if hidden(name))


class Share:
    """The sidebar's "Share this view" box (``app/ui/share_box.py``): the teacher's choices for the link
    (not part of the link itself) and the full-screen QR code."""

    lock = "share_lock"  # the teacher's "lock in the link" choice
    present_link = "share_present"  # the teacher's "open in presenter mode" choice for the shared link
    qr_button = "share_qr_big"
    qr_big = "share_qr_full"  # the dialog's image container (its CSS fits the code to the window)
    link = "share_link"  # the link the box showed last (what the full-screen QR code encodes)
    open = "share_open"  # the box is open (its expander's state)


class Url:
    """``app/url_state.py``'s own keys (no widget, no link): what it last wrote to the URL and read from it."""

    page = "_url_page"  # the page the last full run showed (a file stem of app/views/)
    written = "_url_written"  # {name: value} this session last wrote to the URL (None: nothing yet)
    before = "_url_written_before"  # the write before that (see restore: a rerun that crossed our write)
    applied = "_url_applied"  # the names this run's restore took from the link (url_state.from_link)
    slot = "_url_share_slot"  # the sidebar placeholder the share box is drawn into
    run = "_url_run"  # full runs of this session (the share box is drawn once per run and link)
    drawn = "_url_drawn"  # (run, link) of the share box on screen


class Examples:
    """The Examples picker's keys (``app/ui/examples.py``)."""

    applied = "example_applied"  # (set name, index) of the example last put in the text box


#: The sentence is not here: its text box gets ``value=DEFAULT_TEXT`` instead. A default put in session
#: state was lost in the browser when a page opened without ``?text=`` in its URL (the bound widget
#: fell back to its own empty default); see ``current_text``.
DEFAULTS: dict[str, Any] = {
    K.model: DEFAULT_MODEL,
    K.hub_id: "",
    K.layer: 0,
    K.head: 0,
    K.max_tokens: 128,
}


def landing_request() -> tuple[str, str, int]:
    """``(model_id, text, max_tokens)`` of the landing page's first chart with no link: what the launcher's child
    process traces while the server starts (:mod:`engine.prefetch`; the mask is the model's own)."""
    return DEFAULTS[K.model], DEFAULT_TEXT, DEFAULTS[K.max_tokens]


#: keyword arguments every shared widget gets
PERSIST: dict[str, Any] = {"persist_state": "session"}
SHARE: dict[str, Any] = PERSIST  # formerly bound to the URL too; app.url_state now writes every link


def init() -> None:
    """Run by the entry point on every rerun: defaults once per session, and shared values kept alive.

    Streamlit drops a widget's value when the page that drew it is left (measured in the browser:
    the token limit fell to the widget's minimum and the sentence came up empty on the next page).
    Writing each shared key back to itself on every run keeps the user's choice for the next page.
    The widgets' ``persist_state="session"`` alone does not replace this: without the write-back, Chromium
    lost the layer picked on Explore and Explore's in-app link to Positional stopped writing the tab it
    opened (measured with ``tests/e2e/test_page_switch_e2e.py`` and ``test_share_link_e2e.py``, issue 20).
    """
    defaults(DEFAULTS)
    for key in (*DEFAULTS, K.text, K.causal):
        keep(key)


def default(key: str, value: Any) -> Any:
    """Give ``key`` the value a session starts with: written only while the session has no value for it, so a
    user's choice, a link's value or a widget's own value is never overwritten. Returns the session's value.

    Use it for a constant (or cheap) value; :func:`default_from` when making the value costs something or must
    happen once (a lookup, a random id); :func:`clamp` or :func:`choose` when the value must also stay inside
    bounds or options (they take the start value too).
    """
    if key not in st.session_state:
        st.session_state[key] = value
    return st.session_state[key]


def defaults(values: Mapping[str, Any]) -> None:
    """:func:`default` for each key of ``values`` (a page's ``DEFAULTS`` table)."""
    for key, value in values.items():
        default(key, value)


def default_from(key: str, make: Callable[[], Any]) -> Any:
    """:func:`default` with a value made by ``make()``, called only while the session has no value for ``key``
    (reading the link or the browser's cookie, a random id, the first query token of a sentence)."""
    if key not in st.session_state:
        st.session_state[key] = make()
    return st.session_state[key]


_FIRST = object()


def choose(key: str, options: Collection[Any], fallback: Any = _FIRST) -> Any:
    """Keep a choice among ``options`` before its widget is drawn: a value that is none of them (a forged link,
    an old session, a model or block this one does not have, nothing yet) becomes ``fallback``, by default the
    first option. Returns the session's value.

    Use it for radios, select boxes and segmented controls with fixed options; :func:`clamp` for a number in
    a range.
    """
    if st.session_state.get(key) not in options:
        st.session_state[key] = [*options][0] if fallback is _FIRST else fallback
    return st.session_state[key]


def keep(key: str, convert: Callable[[Any], Any] | None = None) -> None:
    """Write ``key``'s value back to itself (through ``convert``: ``bool``), when the session has one.

    Streamlit dropped some widgets' values when the page that drew them was left, even with
    ``persist_state="session"`` (see :func:`init`); this write keeps them. Use it only for a key measured to
    need it: every write re-sends the value to the browser (see :func:`settle`).
    """
    if key in st.session_state:
        value = st.session_state[key]
        st.session_state[key] = convert(value) if convert is not None else value


def bounded(value: Any, low: int, high: int) -> int:
    """``value`` as an int inside ``[low, high]`` (server-side check; widget bounds are not trusted)."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return low
    return min(max(number, low), high)


def settle(key: str, value: Any) -> Any:
    """Put ``value`` in session state before its widget is drawn, but only when it differs.

    Any write re-sends the value to the browser, which undoes a key press made there while the run
    was going (measured: the calculator's scale slider lost arrow presses); an unchanged value is left alone.
    """
    if st.session_state.get(key) != value:
        st.session_state[key] = value
    return value


def clamp(key: str, low: int, high: int, start: Any = None) -> int:
    """Keep a setting inside ``[low, high]`` before its widget is drawn (e.g. a layer after a model switch).

    ``start``: the value a session starts with (``low`` when None); a preset or stale value outside the bounds
    (an old session, a forged link) is clamped here, server-side, instead of failing in the widget.
    """
    return settle(key, bounded(st.session_state.get(key, low if start is None else start), low, high))


def current_text() -> str:
    """The shared sentence: what the user typed, or the default before any text box was drawn."""
    return st.session_state.get(K.text, DEFAULT_TEXT) or ""
