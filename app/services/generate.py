"""Explore's "Write more" tab: a decoder writes after the user's text, and its attention over the result.

The trace is ``core.get_trace`` with the decoding settings (``engine.generate`` behind the same per-process
cache as every trace, keyed by plain values), so a rerun of the tab (a new layer or head) runs no model and
one head of it is drawn by ``maps.head_view`` like any other. This module adds the text of the two parts.
"""

from __future__ import annotations

import engine
from app.services.core import get_model, get_trace
from engine.decoding import generated_text
from app.services.request import TraceRequest

#: DecodeSettings as plain values, in field order: (max_new_tokens, sample, temperature, top_k, top_p, seed)
SettingsTuple = tuple[int, bool, float, int, float, int]


def get_generation(model_id: str, text: str, max_tokens: int, settings: SettingsTuple
                   ) -> tuple[engine.AttentionTrace, str, str]:  # fmt: skip
    """``(trace of prompt + generated tokens, prompt text, generated text)``; the trace shared, read-only.

    Raises:
        EngineError: a setting out of range (checked by ``DecodeSettings``), not a decoder, empty text.
    """
    trace = get_trace(TraceRequest(model_id, text, None, max_tokens, tuple(settings)))
    return (trace, *generated_text(get_model(model_id), trace))
