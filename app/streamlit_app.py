"""Entry point: ``streamlit run app/streamlit_app.py`` from the repository root. ``streamlit run`` puts ``app/``
on ``sys.path``, not the root, so the root is added here (tested in tests/app): no PYTHONPATH, no install step."""

import os
import sys
from pathlib import Path

# Before torch loads: idle OpenMP threads sleep instead of spinning (spinning slows a shared 2-core server).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app import routes, sidebar, state, url_state  # noqa: E402
from app.runtime.traces import warm_up  # noqa: E402
from app.ui.brand import favicon  # noqa: E402
from app.ui.forged_values import guard_number_widgets  # noqa: E402
from app.ui.guard import calm_errors  # noqa: E402
from app.ui.theme import init_presenter, presenting, presenting_link  # noqa: E402
from app.views.classroom.room_panel import student_panel  # noqa: E402

guard_number_widgets()  # before any widget of the first run: a forged number falls back to the widget's default
# a projector link (?present=1) opens with the sidebar folded away: the chart gets the screen
st.set_page_config(
    page_title="Attention Playground",
    page_icon=favicon(),
    layout="wide",
    initial_sidebar_state="collapsed" if presenting_link() or presenting() else "auto",
)
# every page listed: past ten Streamlit folds the rest under "View N more"
navigation = st.navigation(routes.pages(), expanded=True)
# the landing page with no link's values is what the launcher's child traces: the server's own imports wait for it
warm_up(landing=navigation.url_path == "" and not st.query_params)
with st.sidebar:
    st.caption(
        "**Attention Playground** — see what attention does inside real transformers, layer by layer and head by head."
    )
with calm_errors(navigation.title):
    init_presenter()  # presenter mode (?present=1 or the sidebar toggle) and the chart-download format
    state.init()  # reads every shared widget value: a forged one raises here
    url_state.restore(routes.page_name(navigation))  # a link's values, before the page draws its widgets
    sidebar.share_slot()  # "Share this view", filled with the link once the page has run
    student_panel()  # a class's join link (?room=CODE) and the question on screen, above every page
    navigation.run()
    sidebar.sync()  # the link of what the page now shows (fragments write theirs: sidebar.synced)
