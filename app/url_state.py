"""Links that restore the view: the URL carries every control of the page (the parameters: ``SHARED`` in
``app/url_params.py`` and each page's ``PARAMS`` in its ``keys.py``; why not ``bind="query-params"``: url_params).

- :func:`restore`, run by the entry point before the page, copies into session state the URL values that came from
  outside: a fresh link or a reload (a new session), or ``st.page_link(..., query_params=...)`` inside a running
  session. "From outside" means present in the URL and different from what this session last wrote there
  (comparing with the current value instead would undo every change, since the URL still holds the old value when
  the widget reruns). A value equal to the write before that is a late URL (a rerun asked before the browser got
  the last write), except when Back or Forward asked for the run: then it is where the browser went.
- :func:`write`, run at the end of each page run and of each synced fragment (``app.sidebar``), writes the page's
  values (defaults left out) to ``st.query_params``.

Values from a link are untrusted: each is read by its parameter's reader and ignored when it does not fit, with
nothing shown but a log line (a bad link still opens the page).
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import streamlit as st

from app.state import K, Url
from app.url_params import SHARED, Param
from app.views.bahdanau import keys as bahdanau
from app.views.bertviz_views import keys as bertviz_views
from app.views.captions import keys as captions
from app.views.explore import keys as explore
from app.views.heads import keys as heads
from app.views.lessons import keys as lessons
from app.views.positional import keys as positional
from app.views.pretraining import keys as pretraining
from app.views.step_by_step import keys as step_by_step
from app.views.train import keys as train
from app.views.vit import keys as vit

#: every parameter, in the order a link is read (a decoding request after the sentence and the model)
PARAMS: tuple[Param, ...] = (
    *SHARED,
    *explore.PARAMS,
    *heads.PARAMS,
    *step_by_step.PARAMS,
    *positional.PARAMS,
    *bertviz_views.PARAMS,
    *vit.PARAMS,
    *captions.PARAMS,
    *bahdanau.PARAMS,
    *train.PARAMS,
    *pretraining.PARAMS,
    *lessons.PARAMS,
)
BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}

log = logging.getLogger(__name__)


def page_name(page) -> str:
    """A page's folder name in app/views/ (the parameters' page names); the default page's ``url_path`` is ""."""
    source = getattr(page, "_page", None)  # st.Page keeps the path it was given: app/views/<page>/page.py
    return Path(source).parent.name if isinstance(source, (str, Path)) else page.url_path or "explore"


def _url() -> dict[str, str]:
    """The query parameters of the URL this run was asked with (the last value of a repeated one)."""
    return {name: st.query_params[name] for name in st.query_params}


def restore(page: str) -> None:
    """Apply the link's values that came from outside this session (see the module docstring) for ``page``."""
    state = st.session_state
    state[Url.run] = state.get(Url.run, 0) + 1
    written: dict[str, str] | None = state.get(Url.written)
    same_page = state.get(Url.page) == page
    state[Url.page] = page
    before = (state.get(Url.before) or {}) if same_page and not _history_navigation() else {}
    url = _url()
    applied: set[str] = set()
    for name in BY_NAME:
        raw = url.get(name)
        if raw is None or (written is not None and raw == written.get(name)) or raw == before.get(name):
            continue  # absent, our own value, or a URL that is just late
        if _apply(name, raw):
            applied.add(name)
    if K.model in applied and K.hub_id not in url:
        state[K.hub_id] = ""  # a link that names a catalog model means that model, not a typed one
    if K.causal in applied:  # the toggle resets to the model's own setting when the model changes
        state[K.causal_for] = (state.get(K.hub_id) or "").strip() or state.get(K.model)
    state[Url.applied] = frozenset(applied)


def from_link(name: str) -> bool:
    """True when this run's :func:`restore` took ``name`` from the link (a link opened, Back or Forward)."""
    return name in st.session_state.get(Url.applied, ())


def _history_navigation() -> bool:
    """True when the browser's Back or Forward asked for this run (Streamlit says so in the run's context)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        return bool(getattr(get_script_run_ctx(), "is_history_navigation", False))
    except Exception:  # noqa: BLE001 — a private Streamlit module, whatever it raises: an ordinary run
        return False


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
    state = st.session_state
    page = page if page is not None else state.get(Url.page, "")
    out: dict[str, str] = {}
    missing = object()
    for param in _params_of(page):
        raw = state.get(param.name, missing)
        value = None if raw is missing else param.write(raw)
        if value is not None:
            out[param.name] = value
    return out


def write() -> dict[str, str]:
    """Write the page's values to the URL (only when they changed) and return them, others' parameters kept.

    Streamlit's frontend pushes a history entry for every query string the app writes that differs from the
    address bar. A link the page was just opened with that says what the page shows, only spelled otherwise
    (``causal=true``, a default named), is left as it is and remembered as our write, so Back needs one press."""
    state = st.session_state
    ours = page_params()
    current = _url()
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
        state[Url.before] = state.get(Url.written)
        state[Url.written] = shown
    return wanted


def _means(url: dict[str, str], ours: dict[str, str]) -> bool:
    """True when the table's parameters in ``url`` say exactly what ``ours`` says (each read by its reader and written
    back as this app writes it). A parameter this page does not carry, or a value its reader refuses: False."""
    page = st.session_state.get(Url.page, "")
    spelled: dict[str, str] = {}
    for name, raw in url.items():
        param = BY_NAME.get(name)
        if param is None:
            continue  # not ours: kept as it is either way
        if param.pages is not None and page not in param.pages:
            return False
        try:
            value = param.write(param.read(raw))
        except ValueError:
            return False
        if value is not None:
            spelled[name] = value
    return {k: v for k, v in spelled.items() if v} == ours
