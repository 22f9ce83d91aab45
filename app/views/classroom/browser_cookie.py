"""What the class's screens share: how a refused store call is shown (:func:`refused`), and what a browser keeps
between reloads, two first-party cookies of random values, written by a one-line ``document.cookie`` script (a page
run has no HTTP response) and read from ``st.context.cookies``: :data:`BROWSER_COOKIE` (the anonymous id a room
knows the browser by, no name) and :data:`TEACHER_COOKIE` (``CODE-TOKEN`` of the class it teaches).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import streamlit as st

from app.runtime.models import session_id
from app.state import default_from
from app.store import RoomError, StoreUnavailable
from app.ui.guard import Level, show_error
from app.views.classroom.keys import ROOM

BROWSER_COOKIE, TEACHER_COOKIE = "ap_browser", "ap_teacher"
BROWSER_ID_RE = re.compile(r"[0-9a-f]{32}")  # what runtime.models.session_id makes: uuid4().hex
BROWSER_COOKIE_S = 24 * 3600  # a day: longer than a class (4 h), short enough not to follow a laptop for weeks
SAFE = re.compile(r"[A-Za-z0-9_-]{1,200}")


def browser_id() -> str:
    """The anonymous id a room knows this browser by: read once per session from :data:`BROWSER_COOKIE` when it
    holds a well-formed id, else this session's own (the same after a reload once the cookie is written)."""

    def from_cookie() -> str:
        cookie = read_cookie(BROWSER_COOKIE)
        return cookie if cookie and BROWSER_ID_RE.fullmatch(cookie) else session_id()

    return default_from(ROOM.browser, from_cookie)


def browser_cookie_missing() -> bool:
    """True while the browser's cookie does not hold :func:`browser_id` yet (so the panel writes it)."""
    return st.context.cookies.get(BROWSER_COOKIE) != browser_id()


def write_cookie(name: str, value: str, max_age_s: int) -> None:
    """Ask the browser to keep ``name=value`` for ``max_age_s`` seconds on every path of the app (``""``, 0: forget
    it), unless it sent that value when this connection opened."""
    if not (SAFE.fullmatch(name) and (SAFE.fullmatch(value) or value == "")):
        raise ValueError(f"not a cookie this app writes: {name!r}")
    if (read_cookie(name) or "") != value:
        st.html(
            f"<script>document.cookie = '{name}={value}; Path=/; Max-Age={int(max_age_s)}; SameSite=Lax';</script>",
            unsafe_allow_javascript=True,
            width=1,
        )


def remember_browser() -> None:
    """Write this browser's anonymous id into its cookie, unless the browser already sent it."""
    write_cookie(BROWSER_COOKIE, browser_id(), BROWSER_COOKIE_S)


def read_cookie(name: str) -> str | None:
    """The cookie's value as the browser sent it when this connection opened, if well formed."""
    value = st.context.cookies.get(name)
    return value if isinstance(value, str) and SAFE.fullmatch(value) else None


@contextlib.contextmanager
def refused(keep: str | None = None, *more: type[Exception], level: Level | None = None) -> Iterator[None]:
    """Run store calls; a refusal or an unreachable store (or one of ``more``) ends the block with its message shown
    (at ``level``), or kept under ``keep`` for the page to show (a button's callback draws nothing)."""
    try:
        yield
    except (RoomError, StoreUnavailable, *more) as exc:
        if keep:
            st.session_state[keep] = str(exc)
        else:
            show_error(str(exc), level=level)
