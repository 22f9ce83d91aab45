"""The one place a link to a view is made: the browser's address (``st.context.url``; relative outside a browser)
with the view's parameters as its query string. :func:`open_page` opens another page in this session."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from app.routes import page as view_page
from app.url_params import as_text
from app.url_state import page_params


def query(params: Mapping[str, object]) -> dict[str, str | list[str]]:
    """``params`` as URL values (:func:`app.url_params.as_text`), lists and tuples item by item, None left out."""
    return {
        name: [as_text(v) for v in value] if isinstance(value, (list, tuple)) else as_text(value)
        for name, value in params.items()
        if value is not None
    }


def page_link(base_url: str | None, params: Mapping[str, object], page_path: str = "") -> str:
    """``base_url`` (its query dropped; None: a relative link to ``page_path``) with ``params`` as its query."""
    if base_url:
        parts = urlsplit(base_url)
        base = urlunsplit((parts.scheme, parts.netloc, parts.path or "/", "", ""))
    else:
        base = f"/{page_path}"
    values = query(params)
    return f"{base}?{urlencode(values, doseq=True)}" if values else base


def browser_address() -> str | None:
    try:
        return st.context.url or None
    except Exception:  # noqa: BLE001 — Streamlit's context outside a script run, whatever it raises: none
        return None


def current_link(page_path: str, params: Mapping[str, object] | None = None) -> str:
    """:func:`page_link` of the view on screen (``params`` default: the page's own link parameters)."""
    return page_link(browser_address(), page_params() if params is None else params, page_path)


def app_link(page_path: str, params: Mapping[str, object]) -> str:
    """A link to another page of the app (``""``: the first) with ``params``; a server's path prefix is kept."""
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
