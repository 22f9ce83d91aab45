"""What a browser keeps for the class between reloads: two first-party cookies, written by a tiny script.

Streamlit 1.67 reads cookies (``st.context.cookies``: those the browser sent when it opened the page's
websocket) but a page run has no HTTP response to set one on, so a cookie is written in the browser by
``st.html(..., unsafe_allow_javascript=True)`` with a one-line ``document.cookie`` script; the next
connection (a reload, a new tab, a reconnect to another worker of the classroom launch) sends it back.
Two cookies, both only for the class (issue 21), both holding random values and nothing about the person:

- ``BROWSER_COOKIE``: the anonymous browser id a room knows a student or teacher by (written once
  the browser joins or starts a class), so a reload is the same student: one member, the same answer, the
  same rate-limit counts, and the panel comes back without the join link.
- :data:`TEACHER_COOKIE`: ``CODE-TOKEN`` of the class this browser teaches (the control link's value), so
  the teacher's page survives a reload or a worker that dies; removed when the class ends.

Values are checked against :data:`SAFE` before they are put into the script (ids and tokens are hex or
URL-safe base64), so nothing typed by a user ever reaches it.
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
