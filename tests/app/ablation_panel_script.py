"""A tiny Streamlit script that draws only the head-ablation panel (for AppTest).

Its inputs come from session_state (``t_model``, ``t_text``, ``t_causal``, ``t_max_tokens``,
``t_layers``, ``t_heads``, ``t_family``), so a test can preset them before the first run.
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app.runtime.request import TraceRequest  # noqa: E402
from app.views.heads.ablation import render_ablation  # noqa: E402

state = st.session_state
render_ablation(
    TraceRequest(
        state.get("t_model", "minilm"),
        state.get("t_text", "The animal didn't cross the street because it was too tired."),
        state.get("t_causal", False),
        state.get("t_max_tokens", 128),
    ),
    state.get("t_layers", 6),
    state.get("t_heads", 12),
    state.get("t_family", "encoder"),
)
