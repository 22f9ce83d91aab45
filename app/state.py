"""Session-state keys shared by the pages, their defaults, and their URL binding.

Widgets are created with ``key=K.*``, ``persist_state="session"`` (a value survives a page
switch) and, for the ones worth sharing in a link, ``bind="query-params"`` (the URL carries it).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."
DEFAULT_MODEL = "minilm"


class K:
    """Session-state keys (also the URL query-parameter names where bound)."""

    text = "text"
    model = "model"
    hub_id = "hub_id"
    layer = "layer"
    head = "head"
    causal = "causal"
    max_tokens = "max_tokens"


DEFAULTS: dict[str, Any] = {
    K.text: DEFAULT_TEXT,
    K.model: DEFAULT_MODEL,
    K.hub_id: "",
    K.layer: 0,
    K.head: 0,
    K.max_tokens: 128,
}

#: keyword arguments every shared widget gets
PERSIST: dict[str, Any] = {"persist_state": "session"}
SHARE: dict[str, Any] = {"persist_state": "session", "bind": "query-params"}


def init() -> None:
    """Give every key its default once per session (never overwriting what the user chose)."""
    for key, value in DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = value


def bounded(value: Any, low: int, high: int) -> int:
    """``value`` as an int inside ``[low, high]`` (server-side check; widget bounds are not trusted)."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return low
    return min(max(number, low), high)


def clamp(key: str, low: int, high: int) -> int:
    """Keep a setting inside ``[low, high]`` before its widget is drawn (e.g. a layer after a model switch)."""
    value = bounded(st.session_state.get(key, low), low, high)
    if st.session_state.get(key) != value:
        st.session_state[key] = value
    return value
