"""The Lessons page's calls into the engine, and the Examples picker's vocabulary of a closed-vocabulary model.

A knowledge check reveals one query row of one head, read from the same cached trace Explore draws
(``traces.get_trace``), so the number a student sees in a lesson is the number Explore shows for that sentence,
layer and head; the Bahdanau check reads the RNN's alignment row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.runtime.models import early_answer, get_model
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.views.bahdanau.data import BAHDANAU_MODELS, bahdanau_trace
from app.views.lessons.lesson_file import Predict

LESSON_MAX_TOKENS = 128  # lesson sentences are one or two short sentences


@dataclass(frozen=True)
class QueryRow:
    """One query token's attention over the keys, as a knowledge check reveals it: the query's position and label,
    the keys' labels and the row's ``[n_keys]`` softmax weights."""

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


def lesson_row(
    model_id: str, text: str, causal: bool | None, layer: int, head: int, word: str, occurrence: int = 0
) -> QueryRow:
    """The row of ``word`` (its ``occurrence``-th appearance) in ``pattern(layer, head)`` of a self-attention
    model, traced as Explore traces it (``max_tokens`` = :data:`LESSON_MAX_TOKENS`)."""
    trace = get_trace(TraceRequest(model_id, text, causal, LESSON_MAX_TOKENS))
    strings = tuple(trace.tokens.strings)
    query = find_token(strings, word, occurrence)
    weights = np.asarray(trace.pattern(layer, head)[query], dtype=float)
    return QueryRow(query, strings[query], tuple(trace.key_tokens.strings), weights)


def alignment_row(model_id: str, text: str, word: str) -> QueryRow:
    """The Bahdanau/Luong translator's alignment row α(i, ·) of the target word ``word`` over the English."""
    trace = bahdanau_trace(model_id, text)
    targets = tuple(trace.target.strings)
    row = find_token(targets, word)
    return QueryRow(row, targets[row], tuple(trace.source.strings), np.asarray(trace.alignment[row], dtype=float))


def row_for(check: Predict) -> QueryRow:
    """The real row a predict check reveals: the translator's alignment, or one head of a self-attention trace."""
    if check.model in BAHDANAU_MODELS.values():
        return alignment_row(check.model, check.text, check.word)
    return lesson_row(check.model, check.text, check.causal, check.layer, check.head, check.word, check.occurrence)


def model_vocabulary(model_id: str) -> tuple[str, ...] | None:
    """The words a closed-vocabulary model knows (its specials left out), or None for an open tokenizer.

    Our own models (the stories GPT, the translators, models trained on the Train page) map every word
    outside this list to ``<unk>``; the pages show the list so a student can write sentences it reads.
    """
    early = early_answer(model_id)  # a cold start: the launcher's child read it already
    if early is not None:
        return early.vocabulary
    from engine.vocab import known_words

    return known_words(get_model(model_id).tokenizer)
