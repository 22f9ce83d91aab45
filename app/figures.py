"""Figures built once per server process and sent to every session that asks for the same view and theme: the
builders and themes of ``app.ui`` (render-only) meet the runtime's figure cache (``caches.FIGURES``) here."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go

from app.runtime.caches import shared_figure
from app.ui import theme
from app.ui.charts import ReadyFigure, content_key, ready


def shared_chart(view: tuple, build: Callable[[], go.Figure | dict]) -> ReadyFigure:
    """The figure of ``view`` in this session's theme, built by ``build()`` once per server process: ``view`` must
    name everything the figure shows (the request key, the map's view, the title). Every session asking for the same
    view and theme gets this one read-only figure; per-session marks go on top (``charts.with_shapes``)."""
    look = theme.current()
    return shared_figure(view + (look.name,), lambda: ready(build(), look))


def shared_picture(view: tuple, build: Callable[[], bytes]) -> str:
    """The PNG ``build()`` returns as a ``data:`` URL, built once per process and theme as :func:`shared_chart`.
    ``st.image`` passes a ``data:`` URL on as it is (PNG bytes it would open, hash and store per session on every
    run), and an unchanged picture reaches the browser as a reference to its cached message."""

    def encoded() -> str:
        return "data:image/png;base64," + base64.b64encode(build()).decode("ascii")

    return shared_figure(view + ("png", theme.current().name), encoded)


def shared_build(build: Callable[..., go.Figure | dict], *args: Any, **kwargs: Any) -> ReadyFigure:
    """``build(*args, **kwargs)`` through :func:`shared_chart`, keyed by the builder and its arguments' content
    (``charts.content_key``): for figures of numbers a page computed. ``build`` must depend on its arguments and
    the theme only and return a figure nobody changes afterwards."""
    view = (build.__module__, build.__qualname__, content_key(args), content_key(tuple(sorted(kwargs.items()))))
    return shared_chart(view, lambda: build(*args, **kwargs))
