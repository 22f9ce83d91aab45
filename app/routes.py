"""The app's pages, in the sidebar's order: made once per server process (``st.Page`` resolves its file on disk),
shallow-copied for every run (``st.navigation`` marks the run's copies)."""

from __future__ import annotations

import copy
import threading
from pathlib import Path

import streamlit as st

# Not app/pages/: that would switch on Streamlit's automatic multipage discovery (tests/e2e/test_deep_links_e2e.py).
VIEWS = Path(__file__).resolve().parent / "views"

#: (page id: its folder in app/views + ".py", the URL path without it; title, icon); the first is the default page
PAGES: tuple[tuple[str, str, str], ...] = (
    ("explore.py", "Explore", ":material/grid_on:"),
    ("lessons.py", "Lessons", ":material/cast_for_education:"),
    ("step_by_step.py", "Step by step", ":material/calculate:"),
    ("heads.py", "Heads", ":material/view_module:"),
    ("head_finder.py", "Head finder", ":material/travel_explore:"),
    ("bertviz_views.py", "bertviz views", ":material/hub:"),
    ("positional.py", "Positional encodings", ":material/timeline:"),
    ("vit.py", "Vision Transformer", ":material/image:"),
    ("captions.py", "Captions", ":material/subtitles:"),
    ("bahdanau.py", "Bahdanau attention", ":material/translate:"),
    ("train.py", "Train live", ":material/model_training:"),
    ("pretraining.py", "Pretraining objectives", ":material/school:"),
    ("scaling.py", "Scaling", ":material/trending_down:"),
    ("explain.py", "Is attention the explanation?", ":material/fact_check:"),
    ("why.py", "Which heads carry the answer?", ":material/troubleshoot:"),
    ("classroom.py", "Class", ":material/groups:"),
)

_made: list[st.Page] = []
_lock = threading.Lock()


def _pages() -> list[st.Page]:
    with _lock:
        if not _made:
            _made.extend(
                st.Page(script(file), title=title, icon=icon, default=i == 0, url_path=file.removesuffix(".py"))
                for i, (file, title, icon) in enumerate(PAGES)
            )
    return _made


def script(file: str) -> Path:
    """The script of page ``file`` (``"explore.py"`` → ``app/views/explore/page.py``)."""
    return VIEWS / file.removesuffix(".py") / "page.py"


def page_name(page: st.Page) -> str:
    """A page's folder name in app/views/ (the URL parameters' page names)."""
    source = getattr(page, "_page", None)  # st.Page keeps the path it was given: app/views/<page>/page.py
    return Path(source).parent.name if isinstance(source, (str, Path)) else page.url_path or "explore"


def pages() -> list[st.Page]:
    """This run's ``st.Page`` objects (fresh copies of the ones made once per process)."""
    return [copy.copy(page) for page in _pages()]


def page(file: str) -> st.Page | None:
    """The page of ``file`` (``"explore.py"``) for ``st.page_link``, or None."""
    return dict(zip((name for name, _title, _icon in PAGES), _pages(), strict=True)).get(file)
