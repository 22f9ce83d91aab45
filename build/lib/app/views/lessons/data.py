"""The Lessons page's calls into the engine (a check's row from the cached trace Explore draws, so a lesson shows
Explore's numbers), and the Examples picker's vocabulary of a closed-vocabulary model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.runtime.heads import attention_block
from app.runtime.models import early_answer, get_model
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.views.bahdanau.data import BAHDANAU_MODELS, bahdanau_trace
from app.views.lessons.lesson_file import Predict
from engine import AttentionTrace

LESSON_MAX_TOKENS = 128  # lesson sentences are one or two short sentences


@dataclass(frozen=True)
class QueryRow:
    """One query token's attention over the keys, as a knowledge check reveals it (``weights``: ``[n_keys]``)."""

    query: int
    query_label: str
    keys: tuple[str, ...]
    weights: np.ndarray

    @property
    def top(self) -> int:
        """The key with the largest weight."""
        return int(np.argmax(self.weights))


def find_token(strings, word: str, occurrence: int = 0) -> int:
    """Position of the ``occurrence``-th token equal to ``word`` (case-insensitive); ValueError if absent."""
    hits = [i for i, s in enumerate(strings) if s.strip().lower() == word.lower()]
    if len(hits) <= occurrence:
        raise ValueError(f"{word!r} is not among the tokens {list(strings)}")
    return hits[occurrence]


def lesson_attention(model_id: str, text: str, causal: bool | None) -> AttentionTrace:
    """The attention a predict check of a self-attention model reads (at most :data:`LESSON_MAX_TOKENS` tokens)."""
    return attention_block(get_trace(TraceRequest(model_id, text, causal, LESSON_MAX_TOKENS)))


def row_for(check: Predict) -> QueryRow:
    """The real row a predict check reveals: the translator's alignment row of its French word, or the word's row
    (its ``occurrence``-th appearance) of one head."""
    if check.model in BAHDANAU_MODELS.values():
        trace = bahdanau_trace(check.model, check.text)
        queries, keys = tuple(trace.target.strings), tuple(trace.source.strings)
        query = find_token(queries, check.word)
        weights = trace.alignment[query]
    else:
        attention = lesson_attention(check.model, check.text, check.causal)
        queries, keys = tuple(attention.tokens.strings), tuple(attention.key_tokens.strings)
        query = find_token(queries, check.word, check.occurrence)
        weights = attention.pattern(check.layer, check.head)[query]
    return QueryRow(query, queries[query], keys, np.asarray(weights, dtype=float))


def model_vocabulary(model_id: str) -> tuple[str, ...] | None:
    """The words a closed-vocabulary model knows (specials left out; any other is ``<unk>``), None for an open one."""
    early = early_answer(model_id)  # a cold start: the launcher's child read it already
    if early is not None:
        return early.vocabulary
    from engine.vocab import known_words

    return known_words(get_model(model_id).tokenizer)
