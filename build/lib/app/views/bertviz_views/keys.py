"""The bertviz views page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from app.url_params import Param, integer, one_of
from engine.samples import n_digits


class Bertviz:
    """The bertviz views page's keys (``app/views/bertviz_views/page.py``); ``view`` and ``digit`` are also its URL
    parameters. ``download`` prefixes each view's download button."""

    view, digit, download = "bertviz_view", "bertviz_digit", "bertviz_download_"


PAGE = frozenset({"bertviz_views"})
PARAMS = (
    Param(Bertviz.view, one_of(("head", "model", "neuron")), "head", PAGE),
    Param(Bertviz.digit, integer(0, lambda: n_digits() - 1), 0, PAGE),
)
