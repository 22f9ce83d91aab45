"""Figures built once per server process for every session asking for the same view and theme: ``app.ui``'s
builders meet the runtime's figure cache here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go

from app.runtime.caches import shared_figure
from app.ui import theme
from app.ui.charts import ReadyFigure, content_key, ready


def shared_chart(view: tuple, build: Callable[[], go.Figure | dict]) -> ReadyFigure:
    """The read-only figure of ``view`` (naming everything it shows) in this session's theme, built once per process."""
    look = theme.current()
    return shared_figure(view + (look.name,), lambda: ready(build(), look))


def shared_build(build: Callable[..., go.Figure | dict], *args: Any, **kwargs: Any) -> ReadyFigure:
    """``build(*args, **kwargs)`` through :func:`shared_chart`, keyed by the builder and its arguments' content."""
    view = (build.__module__, build.__qualname__, content_key(args), content_key(tuple(sorted(kwargs.items()))))
    return shared_chart(view, lambda: build(*args, **kwargs))
