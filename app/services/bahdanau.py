"""The Bahdanau attention page's caches.

The RNN translators (additive / dot attention) and the transformer translator, for app/views/bahdanau.py:
their traces, attention parameters, per-step breakdowns and the toy grammar's references.
"""

from __future__ import annotations

import streamlit as st

from app.services.core import _jobs, get_model, get_trace
from app.services.request import TraceRequest

BAHDANAU_MODELS = {"additive": "bahdanau-translator", "dot": "luong-translator"}
TRANSFORMER_TRANSLATOR = "tiny-translator"
BAHDANAU_MAX_TOKENS = 32  # the RNN translators read at most 32 source tokens


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def bahdanau_trace(model_id: str, text: str):
    """``engine.trace`` of an RNN translator (``AlignmentTrace``) or of tiny-translator (``Seq2SeqTrace``)."""
    return get_trace(TraceRequest(model_id, text, None, BAHDANAU_MAX_TOKENS))


@st.cache_data(show_spinner=False, max_entries=4)
def bahdanau_parameters(model_id: str):
    """The attention weights (W, U, v or W_h) of an RNN translator, as numpy."""
    from engine.analysis.bahdanau_steps import attention_parameters

    return attention_parameters(get_model(model_id))


@st.cache_data(show_spinner=False, max_entries=256, ttl=3600)
def bahdanau_step(model_id: str, text: str, step: int):
    """Every number of one decoding step (``StepBreakdown``), recomputed in numpy from the model's weights."""
    from engine.analysis.bahdanau_steps import step_breakdown

    return step_breakdown(bahdanau_parameters(model_id), bahdanau_trace(model_id, text), step)


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def bahdanau_agreement(model_id: str, text: str):
    """``(Agreement | None, why not)``: attention argmax vs the grammar's gold alignment for this sentence."""
    from engine.analysis.bahdanau_steps import trace_agreement

    return trace_agreement(bahdanau_trace(model_id, text))


@st.cache_data(show_spinner=False, max_entries=4)
def bahdanau_disagreement(model_id: str):
    """A grammar sentence where the model's attention and the gold alignment differ (searched once), or None."""
    from engine.analysis.bahdanau_steps import find_disagreement

    model = get_model(model_id)
    with _jobs:
        return find_disagreement(model)


@st.cache_data(show_spinner=False, max_entries=64)
def bahdanau_reference(text: str):
    """The toy grammar's reference (``Reference``) of a source sentence or date."""
    from engine.analysis.toy_grammar import reference

    return reference(text)


@st.cache_data(show_spinner=False)
def bahdanau_vocabulary() -> dict[str, list[str]]:
    """The translators' source words by kind, and the example sentences."""
    from engine.analysis.toy_grammar import EXAMPLES, vocabulary_by_kind

    return {"examples": list(EXAMPLES), **vocabulary_by_kind()}
