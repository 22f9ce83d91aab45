"""The Pretraining objectives page: fill-in-the-blank, the objectives' masks and examples, the cost table.

``get_fill_mask`` keeps its result in the per-process trace cache (shared, not copied); the
objectives' examples are pure numpy; ``measure_costs`` times attention, an RNN and a convolution on
this server under the bound on concurrent jobs (one measurement at a time per process), cached per size.
"""

from __future__ import annotations

import streamlit as st

from app.services.core import TRACES, _bound_threads, _jobs, get_model
from engine.analysis import cost, objectives

#: the own models each objective is shown with
MLM_MODEL = "tiny-bert-stories"
NEXT_TOKEN_MODEL = "tiny-gpt-stories"
SEQ2SEQ_MODEL = "tiny-translator"


def get_fill_mask(text: str, top_k: int = 10):
    """``engine.analysis.fill_mask`` of ``text`` on the masked-LM model (cached; shared, read-only)."""
    from engine.analysis.fill_mask import fill_mask

    model = get_model(MLM_MODEL)

    def compute():
        with _jobs:
            return fill_mask(model, text, top_k=top_k)

    return TRACES.get(("fill-mask", MLM_MODEL, text, int(top_k)), compute)


def blank_attention(text: str, position: int):
    """``[layer, head, key]`` attention of the blank at ``position`` (rows of the cached trace)."""
    from engine.analysis.fill_mask import attention_of

    return attention_of(get_fill_mask(text).trace, position)


def mlm_vocabulary() -> list[str]:
    """The masked-LM model's words (specials and <mask> left out), for random replacements and the UI."""
    tokens = get_model(MLM_MODEL).tokenizer.tokens
    return [t for t in tokens if not (t.startswith("<") and t.endswith(">"))]


def objective_examples(words: tuple[str, ...], seed: int = 0) -> dict:
    """The three objectives' training examples made from ``words``, and the encoder's and decoder's masks over
    them (see ``engine.analysis.objectives``)."""
    words = list(words)
    return {
        "bidirectional": objectives.bidirectional_mask(len(words)),
        "causal": objectives.causal_mask(len(words)),
        "masked": objectives.masked_example(words, mlm_vocabulary(), seed=seed),
        "next": objectives.next_token_examples(words),
        "span": objectives.span_example(words, seed=seed),
    }


def layer_costs(n: int, d: int):
    """Self-attention, RNN and convolution counts at (n, d) (``engine.analysis.cost.counts``)."""
    return cost.counts(int(n), int(d))


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def measure_costs(n: int, d: int) -> dict[str, float]:
    """Median seconds per call of the three layers at (n, d), measured here (one measurement at a time)."""
    with _jobs:
        _bound_threads()
        return cost.measure(int(n), int(d))


def finetune_steps(steps: int, lr: float):
    """Fine-tune a copy of the masked-LM encoder on the colour task (``engine.training.finetune``):
    yields progress, then the result (plain numbers). Holds one job slot for the whole run (bounded:
    at most ``MAX_STEPS`` steps, a few seconds); the shared model is only read, under its lock, while a
    private copy is made."""
    import copy

    from engine.training.finetune import finetune

    model = get_model(MLM_MODEL)
    with _jobs:
        _bound_threads()
        with model.lock:  # copied while no forward pass runs; other sessions are not held up after that
            encoder = copy.deepcopy(model.module)
        yield from finetune(encoder, model.tokenizer, steps=int(steps), lr=float(lr))
