"""Links that restore the view: the URL carries every control of the page (the table: ``app/url_params.py``).

Two calls, one mechanism (no widget uses Streamlit's ``bind="query-params"``, whose selectboxes wrote
their *labels* and whose bindings were dropped on page switches):

- :func:`restore`, run by the entry point before the page, copies into session state the URL values
  that came from outside: a fresh link or a reload (a new session), or ``st.page_link(...,
  query_params=...)`` inside a running session. "From outside" means: present in the URL and
  different from what this session last wrote there. Comparing with the *current* value instead would
  undo every change the user makes, since the URL still holds the old value when the widget reruns. A
  value equal to the write before that is taken for a late URL (a rerun asked before the browser got the
  last write), except when Back or Forward asked for the run: then it is where the browser went.
- :func:`sync`, run at the end of each page run and of each fragment (:func:`synced`), writes the
  current page's values (defaults left out) to ``st.query_params`` and redraws the sidebar's share
  box. A fragment rerun (Explore's ``sentence_panel``: a new sentence, layer or head) runs neither the entry point
  nor the page, so without its own ``sync`` the link would keep the old layer.

Values from a link are untrusted: each is read by its parameter's reader (type, bounds, options) and
ignored when it does not fit, with nothing shown but a log line (a bad link still opens the page).
``?hide=model,causal`` hides those controls (:func:`hidden`); the value still comes from the link.
:func:`from_link` tells a page which values this run took from the link. Session keys: ``app.state.Url``.
"""

from __future__ import annotations

import functools
import logging
import threading
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from app.state import K, Url
from app.url_params import BY_NAME, HIDE, HIDEABLE, PARAMS

log = logging.getLogger(__name__)


def page_name(page) -> str:
    """A page's folder name in app/views/ (the parameter table's page names). ``url_path`` alone is not enough:
    the default page's is ""."""
    source = getattr(page, "_page", None)  # st.Page keeps the path it was given: app/views/<page>/page.py
    if isinstance(source, (str, Path)):
        return Path(source).parent.name
    return page.url_path or "explore"


def _url() -> dict[str, str]:
    """The query parameters of the URL this run was asked with (the last value of a repeated one)."""
    return {name: st.query_params[name] for name in st.query_params}


def restore(page: str) -> None:
    """Apply the link's values that came from outside this session (see the module docstring).

    Args:
        page: the page about to run, as its file stem in app/views/ (``"explore"``, ``"heads"``, ...).
    """
    state = st.session_state
    state[Url.run] = state.get(Url.run, 0) + 1
    written: dict[str, str] | None = state.get(Url.written)
    same_page = state.get(Url.page) == page
    state[Url.page] = page
    # Back / Forward: the browser's address is the one it went back to, never a late one
    before = (state.get(Url.before) or {}) if same_page and not _history_navigation() else {}
    url = _url()
    applied: set[str] = set()
    for name in BY_NAME:  # the table's order: a decoding request is read after the sentence and model
        raw = url.get(name)
        if raw is None or (written is not None and raw == written.get(name)):
            continue  # absent, or our own value: the URL as this session left it
        if raw == before.get(name):
            continue  # a rerun asked before the browser got our last write: the URL is just late
        if _apply(name, raw):
            applied.add(name)
    if K.model in applied and K.hub_id not in url:
        state[K.hub_id] = ""  # a link that names a catalog model means that model, not a typed one
    if K.causal in applied:  # the toggle resets to the model's own setting when the model changes
        state[K.causal_for] = (state.get(K.hub_id) or "").strip() or state.get(K.model)
    state[Url.applied] = frozenset(applied)
    _share_slot()


def from_link(name: str) -> bool:
    """True when this run's :func:`restore` took ``name`` from the link (a link opened, Back or Forward), not
    from this session's own last write: e.g. a lesson's link opens the Lessons page on that lesson's tab."""
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
    except ValueError as err:  # every reader refuses a value with ValueError (app/url_params.py; a test pins it)
        log.info("ignored ?%s= from the link: %s", name, str(err)[:200])
        return False
    if st.session_state.get(name) != value:
        st.session_state[name] = value
    return True


def hidden(control: str) -> bool:
    """True when the link hides ``control`` (a name of ``url_params.HIDEABLE``: text, model, layer, ...)."""
    return control in (st.session_state.get(HIDE) or ())


def hidden_controls() -> tuple[str, ...]:
    return tuple(name for name in HIDEABLE if hidden(name))


def shown_page() -> str:
    """The page the last full run showed (a file stem of app/views/; "" before the first run)."""
    return st.session_state.get(Url.page, "")


@functools.lru_cache(maxsize=64)
def _params_of(page: str) -> tuple:
    """The parameters a link of ``page`` may carry (the table's order), worked out once per page."""
    return tuple(param for param in PARAMS if param.pages is None or page in param.pages)


def page_params(page: str | None = None) -> dict[str, str]:
    """The link's parameters for ``page`` (default: the page shown) from session state, defaults left out.

    Runs several times per rerun (the URL, the share box, "Add this view"): it reads only ``page``'s own
    parameters, each from session state once (a read there takes a lock)."""
    state = st.session_state
    page = page if page is not None else state.get(Url.page, "")
    out: dict[str, str] = {}
    missing = object()
    for param in _params_of(page):
        raw = state.get(param.name, missing)
        if raw is missing:
            continue
        value = param.write(raw)
        if value is not None:
            out[param.name] = value
    return out


def sync() -> None:
    """Write the page's values to the URL (only when they changed) and redraw the share box.

    Streamlit's frontend pushes a browser-history entry for every query string the app writes that differs
    from the address bar. A link the page was just opened with (a lesson's link, a shared link that names
    default values or spells ``causal=true``) already says what the page shows, only spelled otherwise:
    rewriting it into our spelling would push a second entry for the same view, and Back would need two
    presses. So a URL that means exactly ``ours`` is left as it is, and remembered as what this session
    wrote (so :func:`restore` does not take it for a new link on the next rerun).
    """
    state = st.session_state
    ours = page_params()
    current = _url()
    wanted = {k: v for k, v in current.items() if k not in BY_NAME} | ours  # others' params kept
    shown = ours
    if wanted != current and _means(current, ours):
        shown = {k: v for k, v in current.items() if k in BY_NAME}  # the link's own spelling
    elif wanted != current:
        try:
            st.query_params.from_dict(wanted)
        except Exception:  # noqa: BLE001 — StreamlitAPIException (a widget binds it) or any other: a link is a nicety
            log.exception("could not write the URL")
            return
    if state.get(Url.written) != shown:
        state[Url.before] = state.get(Url.written)
        state[Url.written] = shown
    _draw_share(wanted)  # the share box always offers our own spelling


def _means(url: dict[str, str], ours: dict[str, str]) -> bool:
    """True when the table's parameters in ``url`` say exactly what ``ours`` (:func:`page_params`) says: each
    is read by its parameter's reader and written back as this app writes it (a default leaves it out). A
    parameter this page does not carry, or a value its reader refuses, makes it False (then the URL is
    rewritten, and the bad value leaves the address bar)."""
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
        except ValueError:  # a value the reader refuses: not what the page shows
            return False
        if value is not None:
            spelled[name] = value
    return {k: v for k, v in spelled.items() if v} == ours


_nesting = threading.local()  # per script thread: how many synced fragments are running, one inside the other


def synced(fragment: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a fragment's function (under ``@st.fragment``) so that its reruns update the link too.

    Fragments nest (Explore: the sentence panel inside the model panel, the head panel inside that). In a
    fragment's rerun only the outermost one running writes the link, once, at its end (the inner ones' values are
    in it by then). In a full run every fragment writes it: a fragment keeps its right to write to the share box
    (made outside it) for its own reruns only by writing there in the last full run."""

    @functools.wraps(fragment)
    def run(*args, **kwargs):
        depth = getattr(_nesting, "depth", 0)
        _nesting.depth = depth + 1
        try:
            result = fragment(*args, **kwargs)
        finally:
            _nesting.depth = depth
        if depth == 0 or not fragment_rerun():
            sync()
        return result

    return run


# ---------------------------------------------------------------- the share box's place in the sidebar


def _share_slot() -> None:
    """The sidebar's "Share this view" expander and the placeholder :func:`sync` fills (made once per full run,
    before the page: a fragment may write to a container made outside it only if it wrote there in the last
    full run, which its ``sync`` does)."""
    from app.ui.share_box import share_expander

    st.session_state[Url.slot] = share_expander()


def _draw_share(params: dict[str, str]) -> None:
    """Fill the share box with the link of ``params``: always inside a fragment, else once per full run and
    link (the page's fragment usually drew the same link already)."""
    from app.links import current_link
    from app.ui.share_box import draw_share

    slot = st.session_state.get(Url.slot)
    if slot is None:
        return
    link = current_link(st.session_state.get(Url.page, ""), params)
    mark = (st.session_state.get(Url.run), link)
    if st.session_state.get(Url.drawn) == mark and not _in_fragment():
        return
    st.session_state[Url.drawn] = mark
    draw_share(slot, link, hidden_controls())


def fragment_rerun() -> bool:
    """True in a run of fragments alone (a widget inside one changed), False in a full run of the page."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(getattr(ctx, "fragment_ids_this_run", None)) if ctx is not None else False


def _in_fragment() -> bool:
    """True inside a fragment's function, in a full run too: a fragment must write to the slot on every full
    run to keep its place there for its own reruns (Streamlit refuses the write otherwise)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

        return ThreadState.get().fragment_id is not None
    except Exception:  # noqa: BLE001 — a private Streamlit module, whatever it raises: drawing once more is harmless
        return True
