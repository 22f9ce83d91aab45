"""Explore's "Write more" tab: a decoder writes after the user's text, and its attention over the result.

``get_generation`` wraps ``engine.generate`` in the per-process trace cache (``core.TRACES``), keyed by
plain values (the settings as a tuple), so the same request from any session is computed once and a
rerun of the tab (a new layer or head) runs no model. ``generation_view`` draws one head of that trace
as the figure layer's :class:`MapData` (cached per head; small).
"""

from __future__ import annotations

import streamlit as st

import engine
from app.components.map_data import MapData, head_map
from app.services.core import TRACES, _jobs, get_model
from engine.decoding import generated_text
from engine.generation import DecodeSettings

#: DecodeSettings as plain values, in field order: (max_new_tokens, sample, temperature, top_k, top_p, seed)
SettingsTuple = tuple[int, bool, float, int, float, int]


def get_generation(model_id: str, text: str, max_tokens: int, settings: SettingsTuple
                   ) -> tuple[engine.AttentionTrace, str, str]:  # fmt: skip
    """``(trace of prompt + generated tokens, prompt text, generated text)``; shared, read-only.

    Raises:
        EngineError: a setting out of range (checked by ``DecodeSettings``), not a decoder, empty text.
    """
    decode = DecodeSettings(*settings)  # validates before anything is loaded or cached
    model = get_model(model_id)
    key = ("generate", model_id, text, int(max_tokens), settings)

    def compute():
        with _jobs:
            trace = engine.generate(model, text, decode, max_tokens=max_tokens)
        return (trace, *generated_text(model, trace))

    return TRACES.get(key, compute)


@st.cache_data(show_spinner=False, max_entries=128, ttl=3600)
def generation_view(model_id: str, text: str, max_tokens: int, settings: SettingsTuple, layer: int, head: int
                    ) -> MapData:  # fmt: skip
    """One head of the generated trace (exact cells; block maxima past 256 tokens)."""
    trace, _prompt, _rest = get_generation(model_id, text, max_tokens, settings)
    return head_map(trace, layer, head)
