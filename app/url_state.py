"""Links that restore the view: the URL carries every control of the page (``SHARED`` in ``app/url_params.py``, a
page's ``PARAMS`` in its ``keys.py``; why not ``bind="query-params"``: url_params).

:func:`restore` (the entry point, before the page) copies into session state the URL values that came from outside:
a fresh link, a reload, or ``st.page_link(..., query_params=...)``. "From outside": present in the URL and not what
this session last wrote there (the URL still holds the old value when a widget reruns). A value equal to the write
before that is a late URL (a rerun asked before the browser got the last write), unless Back or Forward asked for
the run. :func:`write` (``app.sidebar``, after each page run and synced fragment) writes the page's values, defaults
left out. A value a reader refuses is ignored with a log line: a bad link still opens the page.
"""

from __future__ import annotations

import functools
import importlib
import logging

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from app.routes import PAGES
from app.state import K, Url
from app.url_params import SHARED, Param

#: every page's ``app/views/<page>/keys.py``, in the sidebar's order (a page without ``PARAMS`` carries none)
KEYS = tuple(importlib.import_module(f"app.views.{file.removesuffix('.py')}.keys") for file, _title, _icon in PAGES)
#: every parameter, in the order a link is read
PARAMS: tuple[Param, ...] = (*SHARED, *(param for keys in KEYS for param in getattr(keys, "PARAMS", ())))
BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}
log = logging.getLogger(__name__)


def _url() -> dict[str, str]:
    """The query parameters of the URL this run was asked with (the last value of a repeated one)."""
    return {name: st.query_params[name] for name in st.query_params}


def restore(page: str) -> None:
    """Apply the link's values that came from outside this session (see the module docstring) for ``page``."""
    state, url = st.session_state, _url()
    state[Url.run] = state.get(Url.run, 0) + 1
    written: dict[str, str] = state.get(Url.written) or {}
    back = getattr(get_script_run_ctx(), "is_history_navigation", False)  # Back or Forward asked for this run
    late = (state.get(Url.before) or {}) if state.get(Url.page) == page and not back else {}
    state[Url.page] = page
    applied = set()
    for name in BY_NAME:  # in the table's order: a decoding request is read after the sentence and the model
        raw = url.get(name)
        if raw is not None and raw not in (written.get(name), late.get(name)) and _apply(name, raw):
            applied.add(name)
    if K.model in applied and K.hub_id not in url:
        state[K.hub_id] = ""  # a link that names a catalog model means that model, not a typed one
    if K.causal in applied:  # the toggle resets to the model's own setting when the model changes
        state[K.causal_for] = (state.get(K.hub_id) or "").strip() or state.get(K.model)
    state[Url.applied] = frozenset(applied)


def from_link(name: str) -> bool:
    """True when this run's :func:`restore` took ``name`` from the link (a link opened, Back or Forward)."""
    return name in st.session_state.get(Url.applied, ())


def _apply(name: str, raw: str) -> bool:
    """Read one parameter into session state; False (and a log line, nothing on screen) when it does not fit."""
    try:
        value = BY_NAME[name].read(raw)
    except ValueError as err:  # every reader refuses a value with ValueError (a test pins it)
        log.info("ignored ?%s= from the link: %s", name, str(err)[:200])
        return False
    if st.session_state.get(name) != value:
        st.session_state[name] = value
    return True


def shown_page() -> str:
    """The page the last full run showed (a folder of app/views/; "" before the first run)."""
    return st.session_state.get(Url.page, "")


@functools.lru_cache(maxsize=64)
def _params_of(page: str) -> tuple[Param, ...]:
    return tuple(param for param in PARAMS if param.pages is None or page in param.pages)


def page_params(page: str | None = None) -> dict[str, str]:
    """The link's parameters for ``page`` (default: the page shown) from session state, defaults left out."""
    state, out = st.session_state, {}
    for param in _params_of(shown_page() if page is None else page):
        if param.name in state and (value := param.write(state[param.name])) is not None:
            out[param.name] = value
    return out


def write() -> dict[str, str]:
    """Write the page's values to the URL (only when they changed) and return them, others' parameters kept.

    Streamlit pushes a history entry for every query string the app writes that differs from the address bar: a
    link the page was just opened with that says what the page shows in other words (``causal=true``, a default
    named) is left as it is and remembered as our write, so Back needs one press."""
    state, ours, current = st.session_state, page_params(), _url()
    wanted = {k: v for k, v in current.items() if k not in BY_NAME} | ours
    shown = ours
    if wanted != current and _means(current, ours):
        shown = {k: v for k, v in current.items() if k in BY_NAME}  # the link's own spelling
    elif wanted != current:
        try:
            st.query_params.from_dict(wanted)
        except Exception:  # noqa: BLE001 — StreamlitAPIException or any other: a link is a nicety
            log.exception("could not write the URL")
            return wanted
    if state.get(Url.written) != shown:
        state[Url.before], state[Url.written] = state.get(Url.written), shown
    return wanted


def _means(url: dict[str, str], ours: dict[str, str]) -> bool:
    """True when the table's parameters in ``url``, each read and written back as this app writes it, say exactly
    ``ours``; False for a parameter this page does not carry or a value its reader refuses."""
    page, spelled = shown_page(), {}
    for name, raw in url.items():
        if (param := BY_NAME.get(name)) is None:
            continue  # not ours: kept as it is either way
        if param.pages is not None and page not in param.pages:
            return False
        try:
            spelled[name] = param.write(param.read(raw))
        except ValueError:
            return False
    return {k: v for k, v in spelled.items() if v} == ours
