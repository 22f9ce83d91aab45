"""A page with a fragment on a 20 ms timer and two buttons that count their presses: one whose callback is the
bare function, one wrapped in :func:`app.ui.clicks.once` (tests/e2e/test_clicks_e2e.py)."""

import streamlit as st

from app.ui.clicks import once

for name in ("plain", "once"):
    st.session_state.setdefault(name, 0)


def count(name: str) -> None:
    st.session_state[name] += 1


@st.fragment(run_every=0.02)
def ticking() -> None:
    st.session_state["ticks"] = st.session_state.get("ticks", 0) + 1
    st.caption(f"ticks: {st.session_state['ticks']}")


ticking()
st.button("Plain", key="b_plain", on_click=count, args=("plain",))
st.button("Once", key="b_once", on_click=once(count), args=("once",))
st.markdown(f"counts: plain={st.session_state['plain']} once={st.session_state['once']}")
