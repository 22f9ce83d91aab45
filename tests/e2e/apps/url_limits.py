"""Two pages sharing a sentence, a layer, a toggle and a model picker, each bound to the URL by Streamlit
(``LIMIT_MODE=bind``) or kept with ``persist_state`` and seeded from the link by the app (``persist``), and a form;
``own``: as ``persist``, plus one bound widget on page a alone. Every full run ends with a ``PROBE {json}`` line
(tests/e2e/test_streamlit_url_limits_e2e.py)."""

import json
import os

import streamlit as st

MODE = os.environ.get("LIMIT_MODE", "bind")
BIND = MODE == "bind"
OPTS = {"bind": "query-params"} if BIND else {"persist_state": "session"}
KEYS = ("text", "layer", "present", "model", "tokens", "zoom")


def view() -> None:
    st.text_area("Text", "default text", key="text", **OPTS)
    st.number_input("Layer", 0, 11, 0, key="layer", **OPTS)
    st.toggle("Present", key="present", **OPTS)
    st.selectbox("Model", ["minilm", "gpt2"], format_func=str.upper, key="model", **OPTS)
    with st.form("decode"):
        st.slider("Tokens", 1, 50, 20, key="tokens", **OPTS)
        st.form_submit_button("Decode")
    st.button("noop")


def a() -> None:
    if MODE == "own":  # a control of page a's own, the only one bound
        st.number_input("Zoom", 0, 11, 0, key="zoom", bind="query-params")
    view()


def b() -> None:
    view()


nav = st.navigation([st.Page(a, title="a", default=True), st.Page(b, title="b")])
state = st.session_state
if not BIND and "_seeded" not in state:  # what an app's own link reader does on the first run
    state["_seeded"] = True
    state.update({k: int(v) if k == "layer" else v for k, v in st.query_params.items() if k in ("text", "layer")})
nav.run()
state["_runs"] = state.get("_runs", 0) + 1
st.text("PROBE " + json.dumps({"runs": state["_runs"], "page": nav.url_path, **{k: state.get(k) for k in KEYS}}))
