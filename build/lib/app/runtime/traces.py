"""Traces: ``engine.trace`` of a :class:`~app.runtime.request.TraceRequest` through the shared models, kept in
:data:`~app.runtime.caches.TRACES`; short texts waiting for a busy model share its next pass (:class:`BatchLane`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable

import engine
from app.runtime import caches, models
from app.runtime.models import MAX_JOBS, model_pass, policy, trained_model
from app.runtime.request import TraceRequest
from engine import AttentionTrace, prefetch
from engine.batching import BatchLane
from engine.memory import release_memory_soon

log = logging.getLogger(__name__)

QUICK_CHARS = 1_000  # a sentence or a paragraph: one of our offline models traces it in well under 0.1 s
PARALLEL_CHARS = 600  # about 128 tokens: below it a second thread costs more CPU than it saves time
TRIM_CHARS = 8_000  # a longer request asks for a trim of the heap soon (its maps and figures free hundreds of MB)


def request_key(request: TraceRequest, answers: tuple | None = None) -> tuple:
    """The one cache key of everything computed from ``request``: the request, then who answers it (``answers``:
    the session's trained model or None, and the server's rules). A trace is kept under its ``"self"`` block."""
    return (request, *(answers or (trained_model(request.model_id), policy())))


def has_trace(request: TraceRequest) -> bool:
    """True when ``request``'s trace is in the cache (no forward pass to wait for)."""
    return request_key(request.with_block("self")) in caches.TRACES


def trace_is_quick(request: TraceRequest) -> bool:
    """True when ``request``'s trace is cached, or a short text for an offline model already loaded (no spinner)."""
    if has_trace(request):
        return True
    offline = {spec.id for spec in models.catalog() if spec.offline}
    return len(request.text) <= QUICK_CHARS and request.model_id in offline and models.model_loaded(request.model_id)


def get_trace(request: TraceRequest) -> AttentionTrace:
    """The request's read-only trace (with ``request.decode`` the model writes after the text)."""
    return trace_loader(request)()


def trace_loader(request: TraceRequest, long_work: bool = False) -> Callable[[], AttentionTrace]:
    """``request``'s trace, later or in another thread: the callable holds the request and who answers it, never
    the trace. ``long_work``: it runs on the long-work lane (no page's model slot)."""
    answers = (trained_model(request.model_id), policy())
    return lambda: _trace(request, answers, long_work)


#: at most MAX_JOBS shared passes, one per model and mask, up to 8 texts each
LANE = BatchLane(slots=MAX_JOBS, max_batch=8)


def _trace_together(model, causal: bool | None, items: list[tuple[str, int]]) -> list:
    """One forward pass over the texts of ``items`` (``(text, max_tokens)``): a trace or an error each."""
    with model_pass():
        return engine.trace_many(model, [text for text, _ in items], causal=causal, max_tokens=[m for _, m in items])


def _trace(request: TraceRequest, answers: tuple, long_work: bool) -> AttentionTrace:
    """The one code path that makes a trace (read, or written with ``request.decode``) and keeps it."""
    trained, rules = answers
    request = request.with_block("self")

    def compute() -> AttentionTrace:
        settings = request.decode
        early = models.early_answer(request.model_id, rules) if trained is None and settings is None else None
        if early is not None and TraceRequest(*early.key) == request:
            return early.trace  # a cold start: the launcher's child traced this request while the server started
        model = trained if trained is not None else models.served_model(request.model_id, rules)
        long_input = len(request.text) > PARALLEL_CHARS
        if settings is None and not long_input and getattr(model.adapter, "batches", False):
            return LANE.submit(
                (id(model), request.causal),  # the lane holds the model (in the call) while the key is in use
                (request.text, request.max_tokens),
                functools.partial(_trace_together, model, request.causal),
            )
        with contextlib.nullcontext() if long_work else model_pass(long_input=long_input):
            if settings is not None:
                return engine.generate(model, request.text, settings, max_tokens=request.max_tokens)
            return engine.trace(model, request.text, causal=request.causal, max_tokens=request.max_tokens)

    if len(request.text) > TRIM_CHARS:
        release_memory_soon()
    return caches.TRACES.get(request_key(request, answers), compute)


def warm_up(landing: bool = False) -> None:
    """Import torch and transformers in the background, then load the prefetched model (:mod:`engine.prefetch`).
    ``landing``: the first page is the one the launcher's child traces, so the imports wait for its answer."""

    def work() -> None:
        try:
            from engine.families.hf_api import hf

            if landing:
                prefetch.answered()  # the launcher's child first, if one runs (the first chart is its answer)
            hf()  # imports torch and transformers under the engine's import lock
            early = prefetch.asked()
            if early is not None:  # the launcher's child answers the first pages: load our own copy for the rest
                models.served_model(early, policy())
        except Exception:  # noqa: BLE001 — best effort in its own thread: the first real use reports any error
            log.debug("warm-up import failed", exc_info=True)
        finally:
            prefetch.forget()  # its trace lives on in caches.TRACES if a page asked for it

    with _warm_lock:
        if _warm[0]:
            return
        _warm[0] = True
    threading.Thread(target=work, name="warm-up", daemon=True).start()
    caches.publish_cache_sizes()


_warm = [False]
_warm_lock = threading.Lock()
