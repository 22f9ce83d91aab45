"""What a browser keeps for the class between reloads: two first-party cookies of random values, written by a
one-line ``document.cookie`` script (a page run has no HTTP response) and read from ``st.context.cookies``:
``BROWSER_COOKIE`` (the anonymous id) and :data:`TEACHER_COOKIE` (``CODE-TOKEN`` of the class it teaches).
"""

from __future__ import annotations

import re

import streamlit as st

from app.runtime.rooms import BROWSER_COOKIE, BROWSER_COOKIE_S, browser_cookie_missing, browser_id

TEACHER_COOKIE = "ap_teacher"
SAFE = re.compile(r"[A-Za-z0-9_-]{1,200}")


def write_cookie(name: str, value: str, max_age_s: int) -> None:
    """Ask the browser to keep ``name=value`` for ``max_age_s`` seconds on every path of the app (0: forget it)."""
    if not (SAFE.fullmatch(name) and (SAFE.fullmatch(value) or value == "")):
        raise ValueError(f"not a cookie this app writes: {name!r}")
    st.html(
        f"<script>document.cookie = '{name}={value}; Path=/; Max-Age={int(max_age_s)}; SameSite=Lax';</script>",
        unsafe_allow_javascript=True,
        width=1,
    )


def remember_browser() -> None:
    """Write this browser's anonymous id into its cookie, unless the browser already sent it (once per connection)."""
    if browser_cookie_missing():
        write_cookie(BROWSER_COOKIE, browser_id(), BROWSER_COOKIE_S)


def read_cookie(name: str) -> str | None:
    """The cookie's value as the browser sent it when this connection opened, if well formed."""
    value = st.context.cookies.get(name)
    return value if isinstance(value, str) and SAFE.fullmatch(value) else None
