"""The session keys every page shares and the one way to write a value that is not a user's action.

A page's own keys are a class in its ``app/views/<page>/keys.py``; a key is never a string written in place
(``tests/unit/test_state_keys.py``). Shared widgets get ``key=K.*`` and ``PERSIST``; ``app.url_state`` puts them in
the URL. :func:`default`, :func:`defaults` and :func:`default_from` write a session's start value once;
:func:`choose`, :func:`clamp` and :func:`settle` keep a value valid before its widget is drawn, writing only when it
changed (every write re-sends the value to the browser, undoing a key press made there meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import streamlit as st

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."
DEFAULT_MODEL = "minilm"


class K:
    """The text pages' shared keys (also their URL parameters)."""

    text, model, hub_id, layer, head = "text", "model", "hub_id", "layer", "head"
    causal, max_tokens = "causal", "max_tokens"
    session_id = "_session_id"  # this browser session's random id (runtime.models.session_id)
    causal_for = "_causal_for"  # the model the causal toggle's default was read for
    causal_default = "_causal_default"  # that default: a link names the mask only when it differs from it


class Look:
    """How every page looks in this browser (``app/ui/theme.py``) and the highlighted token; ``present``, ``hide``
    and ``focus`` are also URL parameters."""

    present = "present"  # presenter mode
    hide = "hide"  # the controls a link hides (a frozenset of HIDEABLE names)
    compact = "compact"  # the phone layout
    download = "chart_download_format"  # PNG or SVG from every chart's camera button
    focus = "focus"  # the token highlighted on every text page
    source = "_chart_source"  # + a page's script hash: the model and sentence its charts show (charts.set_source)


class Url:
    """What ``app.url_state`` and ``app.sidebar`` remember of the URL (no widget, no link)."""

    page = "_url_page"  # the page the last full run showed (a folder of app/views/)
    written = "_url_written"  # {name: value} this session last wrote to the URL (None: nothing yet)
    before = "_url_written_before"  # the write before that (a rerun that crossed our write)
    applied = "_url_applied"  # the names this run's restore took from the link
    slot = "_url_share_slot"  # the sidebar placeholder the share box is drawn into
    run = "_url_run"  # full runs of this session (the share box is drawn once per run and link)
    drawn = "_url_drawn"  # (run, link) of the share box on screen


#: what ``?hide=`` can hide (each URL parameter's ``hide`` is one of these)
HIDEABLE = ("text", "model", "layer", "head", "causal", "max_tokens", "block", "tabs")
#: the shared widgets' start values (the sentence's is its box's ``value``: one put in session state was lost in the
#: browser when a page opened without ``?text=``)
DEFAULTS: dict[str, Any] = {K.model: DEFAULT_MODEL, K.hub_id: "", K.layer: 0, K.head: 0, K.max_tokens: 128}
PERSIST: dict[str, Any] = {"persist_state": "session"}  # keyword arguments every shared widget gets
#: the words a link may spell on and off with (any case)
BOOLEAN_WORDS = {**dict.fromkeys(("1", "true", "on", "yes"), True), **dict.fromkeys(("0", "false", "off", "no"), False)}


def hidden(control: str) -> bool:
    """True when the link hides ``control`` (a name of :data:`HIDEABLE`); its value still comes from the link."""
    return control in (st.session_state.get(Look.hide) or ())


def landing_request() -> tuple[str, str, int]:
    """``(model_id, text, max_tokens)`` of the landing page's first chart with no link, which the launcher's child
    traces while the server starts (:mod:`engine.prefetch`)."""
    return DEFAULTS[K.model], DEFAULT_TEXT, DEFAULTS[K.max_tokens]


def init() -> None:
    """Run by the entry point on every rerun: the shared defaults once, and each shared value written back to
    itself, since Streamlit 1.67 loses a link's values when the first click switches pages, ``persist_state`` or
    not (tests/e2e/test_streamlit_url_limits_e2e.py)."""
    defaults(DEFAULTS)
    for key in (*DEFAULTS, K.text, K.causal):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def default_from(key: str, make: Callable[[], Any]) -> Any:
    """``key``'s value, set to ``make()`` first when the session has none (a random id, a lookup)."""
    if key not in st.session_state:
        st.session_state[key] = make()
    return st.session_state[key]


def default(key: str, value: Any) -> Any:
    """``key``'s value, set to ``value`` first when the session has none (then left to the user, a link, a widget)."""
    return default_from(key, lambda: value)


def defaults(values: Mapping[str, Any]) -> None:
    """:func:`default` for each key of ``values`` (a page's ``DEFAULTS`` table)."""
    for key, value in values.items():
        default(key, value)


_FIRST = object()


def choose(key: str, options: Collection[Any], fallback: Any = _FIRST) -> Any:
    """Keep a choice among ``options``: any other value (a forged link, a model this server lacks) becomes
    ``fallback``, by default the first option."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = [*options][0] if fallback is _FIRST else fallback
    return st.session_state[key]


def bounded(value: Any, low: int, high: int) -> int:
    """``value`` as an int inside ``[low, high]`` (server-side check; widget bounds are not trusted)."""
    try:
        return min(max(int(value), low), high)
    except (TypeError, ValueError, OverflowError):
        return low


def settle(key: str, value: Any) -> Any:
    """Put ``value`` in session state before its widget is drawn, only when it differs."""
    if st.session_state.get(key) != value:
        st.session_state[key] = value
    return value


def clamp(key: str, low: int, high: int, start: Any = None) -> int:
    """Keep a number inside ``[low, high]`` (a layer after a model switch); ``start``: a new session's (``low``)."""
    return settle(key, bounded(st.session_state.get(key, low if start is None else start), low, high))


def current_text() -> str:
    """The shared sentence: what the user typed, or the default before any text box was drawn."""
    return st.session_state.get(K.text, DEFAULT_TEXT) or ""
