"""HTML/figure builders that turn engine traces into views (no streamlit here); ``show(trace)`` draws the
in-browser layer view in a notebook."""

from engine.views.layer_view import show

__all__ = ["show"]
