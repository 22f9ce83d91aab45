"""The sidebar under every page: "Share this view" (filled by :func:`sync` at the end of each full run and of each
:func:`synced` fragment, whose rerun runs no entry point) and "Add this view to my lesson"."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import streamlit as st

from app import url_state
from app.links import current_link
from app.state import HIDEABLE, Look, Url, hidden
from app.ui.clicks import fragment_rerun, in_fragment
from app.ui.share_box import draw_share, share_options
from app.views.lessons.draft import add_view_box
from app.views.lessons.offline_pack import view_pack_buttons


def share_slot() -> None:
    """The "Share this view" box and "Add this view to my lesson" under it."""
    box = share_options()
    add_view_box()
    slot = None
    if box is not None:
        with box:
            page = url_state.shown_page() or "explore"
            view_pack_buttons(page, {k: v for k, v in url_state.page_params(page).items() if k != Look.present})
            slot = st.empty()
    st.session_state[Url.slot] = slot


def sync() -> None:
    """Write the page's values to the URL and fill the share box: in a fragment always, else once per run and link."""
    params = url_state.write()
    slot = st.session_state.get(Url.slot)
    if slot is None:
        return
    link = current_link(url_state.shown_page(), params)
    mark = (st.session_state.get(Url.run), link)
    if st.session_state.get(Url.drawn) == mark and not in_fragment():
        return
    st.session_state[Url.drawn] = mark
    draw_share(slot, link, tuple(name for name in HIDEABLE if hidden(name)))


_nesting = threading.local()  # per script thread: how many synced fragments are running, one inside the other


def synced(fragment: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a fragment's function so its reruns update the link too: in a fragment's rerun only the outermost one
    writes it; in a full run every fragment does (to keep its right to the box)."""

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
