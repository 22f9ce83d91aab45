"""What the sidebar shows on every page after the page's own controls: "Share this view" (the link of the view on
screen, a copy button, a QR code, an offline copy) and "Add this view to my lesson".

:func:`share_slot` draws the box once per full run, before the page; :func:`sync`, at the end of each full run and
of each :func:`synced` fragment, writes the URL and fills the box with its link. A fragment's rerun (Explore's
sentence panel: a new sentence, layer or head) runs neither the entry point nor the page, so without its own
``sync`` the link would keep the old layer. A fragment may write to a container made outside it only if it wrote
there in the last full run, which its ``sync`` does.
"""

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
    """The "Share this view" box and "Add this view to my lesson" under it; the placeholder :func:`sync` fills."""
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
    """Write the page's values to the URL and fill the share box with its link: inside a fragment always, else once
    per full run and link (the page's fragment usually drew the same link already)."""
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
    """Decorate a fragment's function (under ``@st.fragment``) so that its reruns update the link too. Fragments nest
    (Explore: the sentence panel inside the model panel): in a fragment's rerun only the outermost one running
    writes the link, once, at its end; in a full run every fragment writes it (to keep its right to the box)."""

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
