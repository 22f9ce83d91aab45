"""Traces: ``engine.trace`` of a page's :class:`~app.runtime.request.TraceRequest` through the shared models,
kept in :data:`~app.runtime.caches.TRACES` (a hit touches neither the model cache nor the engine; a sentence several
sessions ask for at once is traced once). Short texts that wait for a busy model share its next forward pass
(:class:`engine.batching.BatchLane`: a class pressing Enter at once).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

import engine
from app.runtime import caches, models
from app.runtime.models import MAX_JOBS, model_key, model_pass, policy, trained_model
from app.runtime.request import TraceRequest
from engine import AttentionTrace, prefetch
from engine.batching import BatchLane
from engine.memory import release_memory_soon
from engine.policy import ServerPolicy

log = logging.getLogger(__name__)

QUICK_CHARS = 1_000  # a sentence or a paragraph: one of our offline models traces it in well under 0.1 s
PARALLEL_CHARS = 600  # about 128 tokens: below it a second thread costs more CPU than it saves time
TRIM_CHARS = 8_000  # a longer request asks for a trim of the heap soon (its maps and figures free hundreds of MB)


def request_key(request: TraceRequest) -> tuple:
    """The cache key of everything computed from ``request``: the request, the session's own trained model (a
    retrained model is a new object) and the server's rules (a model a changed policy refuses is never served)."""
    return (request, *model_key(request.model_id)[1:])


def _trace_key(request: TraceRequest) -> tuple:
    return (request.trace_key, *model_key(request.model_id)[1:])


def has_trace(request: TraceRequest) -> bool:
    """True when ``request``'s trace is in the cache (no forward pass to wait for)."""
    return _trace_key(request) in caches.TRACES


def trace_is_quick(request: TraceRequest) -> bool:
    """True when ``request``'s trace is cached, or is a short text for an offline model already loaded: a spinner
    would cost a thread and two messages per rerun and never be seen (Streamlit shows it after half a second)."""
    if has_trace(request):
        return True
    offline = {spec.id for spec in models.catalog() if spec.offline}
    return len(request.text) <= QUICK_CHARS and request.model_id in offline and models.model_loaded(request.model_id)


def get_trace(request: TraceRequest) -> AttentionTrace:
    """Trace the request's text through the cached model (same request → the same read-only trace object).

    ``request.decode``: an encoder-decoder's decoding settings (``DecodeSettings`` fields in order); None decodes
    greedily as ``engine.trace`` does."""
    return _trace(request, trained_model(request.model_id), policy())


def trace_loader(request: TraceRequest) -> Callable[[], AttentionTrace]:
    """``request``'s trace again, later (a download built on click): the callable holds the request and the rules,
    never the trace, so a button does not keep a trace alive after the shared cache dropped it."""
    trained, rules = trained_model(request.model_id), policy()
    return lambda: _trace(request, trained, rules)


#: at most MAX_JOBS shared passes, one per model and mask, up to 8 texts each
LANE = BatchLane(slots=MAX_JOBS, max_batch=8)


def _trace_together(model, causal: bool | None, items: list[tuple[str, int]]) -> list:
    """One forward pass over the texts of ``items`` (``(text, max_tokens)``): a trace or an error each."""
    with model_pass():
        return engine.trace_many(model, [text for text, _ in items], causal=causal, max_tokens=[m for _, m in items])


def _trace(request: TraceRequest, trained, rules: ServerPolicy) -> AttentionTrace:
    def compute() -> AttentionTrace:
        from engine.generation import DecodeSettings

        settings = None if request.decode is None else DecodeSettings(*request.decode)  # checked before anything runs
        early = models.early_answer(request.model_id, rules) if trained is None and settings is None else None
        if early is not None and early.key == request.trace_key:
            return early.trace  # a cold start: the launcher's child traced this request while the server started
        model = trained if trained is not None else models.served_model(request.model_id, rules)
        long_input = len(request.text) > PARALLEL_CHARS
        if settings is None and not long_input and getattr(model.adapter, "batches", False):
            return LANE.submit(
                (id(model), request.causal),  # the lane holds the model (in the call) while the key is in use
                (request.text, request.max_tokens),
                functools.partial(_trace_together, model, request.causal),
            )
        with model_pass(long_input=long_input):
            if settings is not None:
                return engine.generate(model, request.text, settings, max_tokens=request.max_tokens)
            return engine.trace(model, request.text, causal=request.causal, max_tokens=request.max_tokens)

    if len(request.text) > TRIM_CHARS:
        release_memory_soon()
    return caches.TRACES.get((request.trace_key, trained, rules), compute)


def warm_up(landing: bool = False) -> None:
    """Import torch and transformers in the background so the first trace does not wait for them; after a launch
    that started a prefetch (:mod:`engine.prefetch`), also load its model, which answers every later trace.

    ``landing``: the process's first page run is the landing page the prefetch traces: the imports here then start
    once the child has answered (two imports under one GIL delay its answer). Any other first page needs this
    process's own model, so they start at once."""

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
