"""The Head finder's engine calls: a model's table of every head's metrics over a corpus
(``engine.analysis.head_finder``), shipped in ``assets/heads`` or measured on the long-work lane and shared by every
session, and the corpus texts of a head's top snippets traced as the table's script traced them."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from app.runtime.caches import shared_map
from app.runtime.long_work import HEAD_FINDER, submit_long
from app.runtime.models import get_model, session_id, trained_model
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace, request_key
from engine import DEFAULT_MAX_TOKENS
from engine.analysis import head_finder
from engine.cache import TraceCache
from engine.job_records import JobStatus, Step
from engine.jobs import checkpoint

#: tables measured on this server (plain dicts of a few hundred rows), one per model and trained copy
MEASURED = TraceCache(max_bytes=2**20, max_entries=16)
SECONDS_PER_TEXT = 0.05  # a forward pass of a small model on one corpus text or repeated run (one thread)


@dataclass(frozen=True)
class Snippet:
    """One of a head's top cells: corpus text ``text``, where query ``query`` put ``weight`` on key ``key``, with
    the tokens of both sides (the same sequence in self-attention)."""

    text: int
    query: int
    key: int
    weight: float
    queries: tuple[str, ...]
    keys: tuple[str, ...]


def shipped_models() -> tuple[str, ...]:
    """The models with a table in ``assets/heads``."""
    folder = head_finder.table_path("x").parent
    return tuple(sorted(path.stem.replace("--", "/") for path in folder.glob("*.json")))


@functools.lru_cache(maxsize=16)
def shipped(model_id: str) -> dict[str, Any] | None:
    """The shipped table of ``model_id`` (read once per process; shared, read-only), or None."""
    return head_finder.shipped_table(model_id)


def _key(model_id: str) -> tuple:
    """A measured table's key: the model, and this session for a model it trained (Train live)."""
    return model_id, session_id() if trained_model(model_id) is not None else None


def table(model_id: str) -> dict[str, Any] | None:
    """The table of ``model_id``: shipped, or measured on this server; None before it is measured."""
    found = shipped(model_id)
    if found is not None or _key(model_id) not in MEASURED:
        return found
    try:
        return MEASURED.get(_key(model_id), _not_measured)
    except LookupError:  # evicted between the two lines
        return None


def sentence_metrics(request: TraceRequest, layer: int) -> dict[str, Any]:
    """Every head of ``layer`` on the request's own sentence (``head_finder.sentence_metrics``), shared by sessions."""
    build = lambda: head_finder.sentence_metrics(get_trace(request), layer)  # noqa: E731
    return shared_map(("sentence_metrics", request_key(request), layer), build)


def _not_measured() -> dict[str, Any]:
    raise LookupError("not measured")


def measure_start(model_id: str) -> JobStatus:
    """Measure every head of ``model_id`` over its corpus (:func:`engine.analysis.head_finder.corpus_for`) as this
    session's long job, its progress a :class:`Step` per batch of texts; the table goes to :data:`MEASURED`."""
    model, key = get_model(model_id), _key(model_id)
    corpus = head_finder.corpus_for(model_id)

    def progress(fraction: float, what: str) -> None:
        checkpoint(Step(fraction, 1.0, f"Measuring every head: {what}"))

    def work() -> dict[str, Any]:
        return MEASURED.get(key, lambda: head_finder.finder_document(model, corpus, progress=progress))

    estimate = SECONDS_PER_TEXT * (len(corpus.texts) + head_finder.SEQUENCES)
    return submit_long(HEAD_FINDER, work, key=model_id, estimate_s=estimate)


def snippets(model_id: str, doc: dict[str, Any], row: dict[str, Any]) -> list[Snippet]:
    """Head ``row``'s top cells in ``doc``, each corpus text traced (shared trace cache) with the settings
    ``head_finder.head_table`` used: the model's own mask, ``engine.DEFAULT_MAX_TOKENS``."""
    out = []
    for t, q, k, weight in row["top"]:
        blocks = get_trace(
            TraceRequest(model_id, doc["corpus"]["texts"][t], None, DEFAULT_MAX_TOKENS)
        ).attention_blocks()
        att = blocks.get(row["block"]) or next(iter(blocks.values()))
        out.append(Snippet(t, q, k, weight, tuple(att.tokens.strings), tuple(att.key_tokens.strings)))
    return out
