"""The Bahdanau page's engine calls: the RNN translators' (additive / dot) and tiny-translator's traces, attention
parameters, per-step breakdowns and agreement with the grammar's gold alignment, each shared under the request."""

from __future__ import annotations

import streamlit as st

from app.runtime.caches import shared_map
from app.runtime.models import get_model, model_pass
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace, request_key
from engine.analysis.bahdanau_steps import attention_parameters, find_disagreement, step_breakdown, trace_agreement

BAHDANAU_MODELS = {"additive": "bahdanau-translator", "dot": "luong-translator"}
TRANSFORMER_TRANSLATOR = "tiny-translator"
BAHDANAU_MAX_TOKENS = 32  # the RNN translators read at most 32 source tokens


def bahdanau_request(model_id: str, text: str) -> TraceRequest:
    """The page's one request: the translators read at most ``BAHDANAU_MAX_TOKENS`` source tokens."""
    return TraceRequest(model_id, text, None, BAHDANAU_MAX_TOKENS)


def bahdanau_trace(model_id: str, text: str):
    """The shared trace of an RNN translator (``AlignmentTrace``) or of tiny-translator (``Seq2SeqTrace``)."""
    return get_trace(bahdanau_request(model_id, text))


def bahdanau_parameters(model_id: str):
    """The attention weights (W, U, v or W_h) of an RNN translator, as numpy (shared, read-only)."""
    key = ("bahdanau_parameters",) + request_key(bahdanau_request(model_id, ""))
    return shared_map(key, lambda: attention_parameters(get_model(model_id)))


def bahdanau_step(model_id: str, text: str, step: int):
    """Every number of one decoding step (``StepBreakdown``), recomputed in numpy from the model's weights."""
    request = bahdanau_request(model_id, text)
    return shared_map(
        ("bahdanau_step", request_key(request), int(step)),
        lambda: step_breakdown(bahdanau_parameters(model_id), get_trace(request), step),
    )


def bahdanau_agreement(model_id: str, text: str):
    """``(Agreement | None, why not)``: attention argmax vs the grammar's gold alignment for this sentence."""
    request = bahdanau_request(model_id, text)
    return shared_map(("bahdanau_agreement", request_key(request)), lambda: trace_agreement(get_trace(request)))


@st.cache_data(show_spinner=False, max_entries=4)
def bahdanau_disagreement(model_id: str):
    """A grammar sentence where the model's attention and the gold alignment differ (searched once), or None."""
    model = get_model(model_id)
    with model_pass():
        return find_disagreement(model)
