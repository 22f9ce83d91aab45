"""The one place a link to a view is made: the Share box, the JSON exports, presenter links and lessons.

A view's link is the page's address as the browser sees it (``st.context.url``: scheme, host, port and
page path, so it stays right behind a proxy) with the view's parameters (:mod:`app.url_params`) as its
query string. Values are written as the URL table writes them: ``True``/``False`` as ``1``/``0``, a
list as the parameter repeated, ``None`` left out. Outside a browser (AppTest, a bare run) the link is
relative: ``/page?…``.

A lesson's link opens another page *inside* the running session (Streamlit's ``st.page_link``, which
keeps session state), so :func:`open_page` draws it, with its parameters written by the same
:func:`query` rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from app.routes import page as view_page


def query(params: Mapping[str, object]) -> dict[str, str | list[str]]:
    """``params`` as URL values: booleans as ``"1"``/``"0"``, lists and tuples item by item, None left out."""

    def text(value: object) -> str:
        return "1" if value is True else "0" if value is False else str(value)

    return {
        name: [text(v) for v in value] if isinstance(value, (list, tuple)) else text(value)
        for name, value in params.items()
        if value is not None
    }


def page_link(base_url: str | None, params: Mapping[str, object], page_path: str = "") -> str:
    """The link that opens a view: ``base_url`` (any query string or fragment dropped) with ``params``.

    Args:
        base_url: the browser's address of the page (:func:`browser_address`), or a link made here
            earlier; None outside a browser: a relative link to ``page_path``.
        params: the view's parameters (see :func:`query` for how values are written).
        page_path: the page's URL path ("explore"), used when ``base_url`` is None.

    Example:
        ``page_link("http://host:8501/explore?x=1", {"layer": 2, "present": True})``
        → ``"http://host:8501/explore?layer=2&present=1"``
    """
    if base_url:
        parts = urlsplit(base_url)
        base = urlunsplit((parts.scheme, parts.netloc, parts.path or "/", "", ""))
    else:
        base = f"/{page_path}"
    values = query(params)
    return f"{base}?{urlencode(values, doseq=True)}" if values else base


def browser_address() -> str | None:
    """The page's address in the browser (``st.context.url``), None where there is none (AppTest, a bare run)."""
    try:
        return st.context.url or None
    except Exception:  # noqa: BLE001 — Streamlit's context outside a script run, whatever it raises: none
        return None


def current_link(page_path: str, params: Mapping[str, object] | None = None) -> str:
    """:func:`page_link` of the view on screen: the browser's address and ``params`` (default: the page's own
    link parameters, :func:`app.url_state.page_params`, the same link the Share box gives)."""
    if params is None:
        from app.url_state import page_params

        params = page_params()
    return page_link(browser_address(), params, page_path)


def app_link(page_path: str, params: Mapping[str, object]) -> str:
    """A link to another page of the app (``page_path`` as in its URL, ``""`` for the first page) with ``params``.

    Made from the browser's address of the page on screen with its last path part replaced (so a server
    under a path prefix keeps it); relative (``/page_path?…``) outside a browser. The Class page's join link
    (``app_link("", {"room": code})`` → ``http://host:8501/?room=CODE``) and its teacher link are made here.
    """
    here = browser_address()
    if not here:
        return page_link(None, params, page_path)
    parts = urlsplit(here)
    path = parts.path.rsplit("/", 1)[0] + "/" + page_path
    return page_link(urlunsplit((parts.scheme, parts.netloc, path, "", "")), params)


def open_page(page: str, label: str, params: Mapping[str, object] | None = None, icon: str | None = None) -> None:
    """A link to ``page`` (a file of ``app/views/``) that opens it in this session with ``params`` set."""
    st.page_link(
        view_page(page) or f"views/{page.removesuffix('.py')}/page.py",
        label=label,
        query_params=query(params or {}),
        icon=icon,
    )
