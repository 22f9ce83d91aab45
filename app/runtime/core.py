"""The shared part of the app's caches: the one model cache, traces, errors, warm-up and the job bound.

- ``get_model``: ``st.cache_resource`` around ``engine.load`` — one read-only model per id, shared
  by every session (never trained, moved or re-configured here).
- ``get_card``: the plain :class:`engine.types.ModelCard` pages receive instead of the model.
- ``get_trace``: ``engine.trace`` through ``TRACES``, one of three per-process caches of type
  :class:`engine.cache.TraceCache` (``TRACES`` the text traces, ``MAPS`` what pages draw from them,
  ``FIGURES`` figures ready to send; the ViT and Bahdanau traces and other page results are still
  ``st.cache_data`` in their page's module) — keyed by plain values, bounded in bytes
  (``AP_TRACE_CACHE_MB``, default 512), a hit returns the cached trace itself (read-only arrays, no
  pickling copy), and a sentence several sessions ask for at once is traced once.
- ``session_id``: this browser session's id (models a session trained are looked up by it).
- ``policy``: the server admin's rules for typed model ids (``engine.policy.ServerPolicy`` from the
  ``AP_*`` variables): every model the app loads goes through ``engine.load(..., policy=policy())``,
  so a typed folder or Hub id is checked before anything is read or downloaded.
- ``friendly_error``: an exception as plain text for the UI (no absolute paths, bounded length); pages show it through ``components.guard.show_error``, which escapes it.

Torch work is bounded for a shared 2-core classroom server: one intra-op thread per job and at
most ``MAX_JOBS`` forward passes at once; short texts that wait for a busy model share its next pass
(``_LANE``, :class:`engine.batching.BatchLane`). The page modules of ``app.services`` import from here.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

import engine
import engine.registry
from app.runtime.request import TraceRequest
from app.state import K, default_from
from engine import AttentionTrace, EngineError, ModelSpec, prefetch
from engine.batching import BatchLane
from engine.cache import TraceCache
from engine.memory import release_memory_soon
from engine.policy import ServerPolicy
from engine.records import ModelCard
from engine.registry import HUB_SUGGESTIONS
from engine.text import hide_paths, shorten

T = TypeVar("T")

log = logging.getLogger(__name__)

MAX_JOBS = 2
_jobs = threading.BoundedSemaphore(MAX_JOBS)
_threads_set = False
_passes = [0]  # forward passes running now (under _jobs)
_passes_lock = threading.Lock()


def _bound_threads() -> None:
    global _threads_set
    if not _threads_set:
        engine.set_threads(1)
        engine.limit_numpy_threads(1)  # numpy's BLAS pool competed with torch's threads (engine docstring)
        _threads_set = True


MAX_MESSAGE = 300  # characters of an error message a page shows


def policy() -> ServerPolicy:
    """The server admin's rules for models typed into a page (``AP_MODEL_DIRS``, ``AP_HUB``, ``AP_HUB_MAX_GB``)."""
    return ServerPolicy.from_env()


_CATALOG_TTL_S = 60.0  # the catalog lists Hub models found in the local cache: re-read now and then
_catalog_memo: list = [float("-inf"), ()]


def _catalog() -> tuple[ModelSpec, ...]:
    """``engine.list_models()``, re-read at most once a minute (a plain tuple shared read-only: no copy per call)."""
    now = time.monotonic()
    if now - _catalog_memo[0] > _CATALOG_TTL_S:
        _catalog_memo[1] = tuple(engine.list_models())
        _catalog_memo[0] = now
    return _catalog_memo[1]


def list_models() -> tuple[ModelSpec, ...]:
    """The model catalog (offline models first); without the Hub suggestions where the Hub is switched off."""
    if policy().hub:
        return _catalog()
    hub_ids = {s.id for s in HUB_SUGGESTIONS}
    return tuple(s for s in _catalog() if s.id not in hub_ids)


_loaded: set[tuple[str, ServerPolicy]] = set()  # (id, rules) already in _shared_model's cache (a hint only)


@st.cache_resource(show_spinner=False, max_entries=4)
def _shared_model(model_id: str, rules: ServerPolicy):
    # the policy is part of the key: a model is only ever served under the rules it was admitted by
    _bound_threads()
    model = engine.load(model_id, policy=rules)
    _loaded.add((model_id, rules))
    gc.freeze()  # the model and the libraries it imported are here for good: later collections skip them
    return model


def model_loaded(model_id: str) -> bool:
    """True when ``model_id`` is probably loaded already (then a page shows no spinner for it)."""
    return (model_id, policy()) in _loaded or _runtime_model(model_id) is not None


def has_trace(request: TraceRequest) -> bool:
    """True when ``request``'s trace is in the cache (no forward pass to wait for)."""
    return (request.trace_key, _runtime_model(request.model_id), policy()) in TRACES


QUICK_CHARS = 1_000  # a sentence or a paragraph: one of our offline models traces it in well under 0.1 s


def trace_is_quick(request: TraceRequest) -> bool:
    """True when ``request``'s trace is cached, or is a short text for an offline catalog model already
    loaded: Streamlit's spinner only shows after half a second, so for such work it would cost a thread
    and two messages per rerun and never be seen."""
    if has_trace(request):
        return True
    offline = {spec.id for spec in _catalog() if spec.offline}
    return len(request.text) <= QUICK_CHARS and request.model_id in offline and model_loaded(request.model_id)


def get_model(model_id: str):
    """Load a model once per server process; shared, read-only. A model this session trained on the
    Train page is returned from the runtime registry instead (never cached, never shared).

    Ids outside the catalog (a typed folder or Hub id) load only as the server's :func:`policy` allows."""
    trained = _runtime_model(model_id)
    return trained if trained is not None else _served_model(model_id, policy())


_model_refs: dict[tuple[str, ServerPolicy], weakref.ref] = {}  # (id, rules) -> the model _shared_model returned


def _served_model(model_id: str, rules: ServerPolicy):
    """:func:`_shared_model`'s model, looked up in a plain dict first: ``st.cache_resource`` hashes its arguments
    on every call (~0.25 ms here, two or three calls per rerun). The dict holds weak references only, so the
    cache's own eviction still frees a model (the next call loads it through the cache again)."""
    ref = _model_refs.get((model_id, rules))
    model = ref() if ref is not None else None
    if model is None:
        model = _shared_model(model_id, rules)
        with contextlib.suppress(TypeError):  # an object without weak references: always through the cache
            _model_refs[(model_id, rules)] = weakref.ref(model)
    return model


def get_card(model_id: str) -> ModelCard:
    """What pages may know about a model (:class:`engine.types.ModelCard`: its catalog entry, where its
    causal toggle starts, its longest input), loaded as :func:`get_model` does.

    Pages hold this plain record, never the torch-backed model shared by every session; a test
    (``tests/unit/test_layering.py``) checks that views and components never call ``get_model``."""
    early = early_answer(model_id)
    if early is not None:
        return early.card
    model = get_model(model_id)
    return ModelCard(spec=model.spec, default_causal=bool(model.default_causal), max_positions=int(model.max_positions))


def early_answer(model_id: str, rules: ServerPolicy | None = None) -> prefetch.Answer | None:
    """On a cold start, the launcher's child's answer about ``model_id`` (:mod:`engine.prefetch`: its card, the
    landing page's trace, its vocabulary), waiting for it, while this process has not loaded that model itself;
    else None. A session's own trained model is never answered from it."""
    if prefetch.asked() != model_id:  # the usual case, and every call after the warm-up loaded it here
        return None
    rules = policy() if rules is None else rules
    if (model_id, rules) in _loaded or _runtime_model(model_id) is not None:
        return None
    return prefetch.answer(model_id)


def _cache_budget_mb() -> int:
    """``AP_TRACE_CACHE_MB`` (the server admin's setting), default 512; unreadable values fall back to it."""
    try:
        return max(0, int(os.environ.get("AP_TRACE_CACHE_MB", "512")))
    except ValueError:
        log.warning("AP_TRACE_CACHE_MB=%r is not a whole number of MB; using 512", os.environ.get("AP_TRACE_CACHE_MB"))
        return 512


#: the traces of this server process (text, ViT, Bahdanau: shared by every session; hits are not copied); a large
#: one (a long input) allocated and freed far more than it keeps: the heap is trimmed soon after (engine.memory)
TRACES = TraceCache(max_bytes=_cache_budget_mb() * 2**20, on_large=release_memory_soon)
#: what pages draw from a trace (a head's map, a layer's thumbnails: small arrays), shared the same way
MAPS = TraceCache(max_bytes=64 * 2**20, max_entries=2048, on_large=release_memory_soon)


def _figure_bytes(fig: Any) -> int:
    """What a ready figure counts for in :data:`FIGURES`: a picture (a ``data:`` URL) its length, a Plotly figure
    its traces' JSON."""
    if isinstance(fig, str):
        return len(fig) + 256
    return _text_bytes(fig.to_dict().get("data")) + 4096


#: figures ready to send (themed JSON dicts, or pictures as ``data:`` URLs of PNGs): a class on one link builds each figure once
FIGURES = TraceCache(max_bytes=64 * 2**20, max_entries=1024, sizeof=_figure_bytes)


#: tables ready to send (``pyarrow.Table``, immutable): Streamlit turns a pandas frame into Arrow on every rerun
TABLES = TraceCache(max_bytes=32 * 2**20, max_entries=2048, sizeof=lambda table: table.nbytes + 1024)


def _text_bytes(obj: Any) -> int:
    """About the bytes a figure's traces take in JSON: their strings (labels, base64 arrays) plus 16 per other
    value (the layout is small, and its template is one object all figures share)."""
    if isinstance(obj, str):
        return len(obj)
    if isinstance(obj, dict):
        return sum(16 + _text_bytes(value) for value in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_text_bytes(value) for value in obj)
    return 16


def _runtime_model(model_id: str):
    """The model this session trained under ``model_id`` (Train page), else None."""
    return engine.registry.runtime_model(model_id, session_id())


PARALLEL_CHARS = 600  # about 128 tokens: below it a second thread costs more CPU than it saves time


@contextlib.contextmanager
def forward_threads(long_input: bool):
    """Torch threads for the forward pass this thread is about to run: every core for a long input while it
    is the only pass running (one student alone gets the answer sooner: MiniLM at 512 tokens 0.14 → 0.09 s
    on 2 cores), one otherwise: as soon as another pass or a background job runs (a class shares the
    cores; docs/DESIGN.md, "Threads"), and for short inputs, where two threads cost 30% more CPU for 13%
    less time (MiniLM, 30 tokens, measured here). Torch keeps the setting per thread, so other sessions'
    passes are not changed."""
    with _passes_lock:
        _passes[0] += 1
        alone = long_input and _passes[0] == 1 and not _long_work_running()
    engine.set_threads(CORES if alone else 1)
    try:
        yield
    finally:
        engine.set_threads(1)
        with _passes_lock:
            _passes[0] -= 1


CORES = max(1, os.cpu_count() or 1)
#: a request over more characters than this (~2,000 tokens) asks for a trim of the heap soon (engine.memory):
#: the overviews, tiles and figures of a long input free hundreds of MB that glibc would otherwise keep
TRIM_CHARS = 8_000


def _long_work_running() -> bool:
    """True while a Train live job or a long-work job (fine-tuning, writing, measuring) runs in this process
    (either keeps a core busy, at a lower priority)."""
    import sys

    lane = sys.modules.get("engine.jobs")  # not imported: no long job ever started here
    training = sys.modules.get("engine.training.jobs")
    return bool(
        (lane is not None and lane.get_queue().running_count()) or (training is not None and training.training_now())
    )


def request_key(request: TraceRequest) -> tuple:
    """The cache key of everything computed from ``request``: the request itself, the identity of a session's
    own trained model (a retrained model is a new object, so nothing stale is served) and the server's rules
    (a model a changed policy refuses is never served from the caches)."""
    return (request, _runtime_model(request.model_id), policy())


def get_trace(request: TraceRequest) -> AttentionTrace:
    """Trace the request's text through the cached model (same request → the same trace object, not a copy).

    ``request.decode``: an encoder-decoder's decoding settings as plain values (``DecodeSettings`` fields
    in order); None decodes greedily as ``engine.trace`` does. The returned trace is shared with other
    sessions: its arrays are read-only. A hit touches neither the model cache nor the engine.
    """
    return _trace(request, _runtime_model(request.model_id), policy())


def trace_loader(request: TraceRequest) -> Callable[[], AttentionTrace]:
    """``request``'s trace again, later: for a download built on click. The callable holds the request and the
    rules (and a session's own trained model), never the trace, so a page's download button does not keep a trace
    alive after the shared cache dropped it (a 9,000-token trace is ~60 MB, and every session held its own through
    its buttons); it reads no session state, so it works wherever Streamlit calls it."""
    trained, rules = _runtime_model(request.model_id), policy()
    return lambda: _trace(request, trained, rules)


#: short texts that wait for a busy model share its next forward pass (engine.batching; a class pressing Enter
#: at once): at most MAX_JOBS passes, one per model and mask, up to 8 texts each
_LANE = BatchLane(slots=MAX_JOBS, max_batch=8)


def _trace_together(model, causal: bool | None, items: list[tuple[str, int]]) -> list:
    """One forward pass over the texts of ``items`` (``(text, max_tokens)``): a trace or an error each."""
    with _jobs, forward_threads(long_input=False):
        return engine.trace_many(model, [text for text, _ in items], causal=causal, max_tokens=[m for _, m in items])


def _trace(request: TraceRequest, trained, rules: ServerPolicy) -> AttentionTrace:
    def compute() -> AttentionTrace:
        from engine.generation import DecodeSettings

        settings = None if request.decode is None else DecodeSettings(*request.decode)  # checked before anything runs
        early = early_answer(request.model_id, rules) if trained is None and settings is None else None
        if early is not None and early.key == request.trace_key:
            return early.trace  # a cold start: the launcher's child traced this request while the server started
        model = trained if trained is not None else _served_model(request.model_id, rules)
        long_input = len(request.text) > PARALLEL_CHARS
        if settings is None and not long_input and getattr(model.adapter, "batches", False):
            return _LANE.submit(
                (id(model), request.causal),  # the lane holds the model (in the call) while the key is in use
                (request.text, request.max_tokens),
                functools.partial(_trace_together, model, request.causal),
            )
        with _jobs, forward_threads(long_input=long_input):
            if settings is not None:
                return engine.generate(model, request.text, settings, max_tokens=request.max_tokens)
            return engine.trace(model, request.text, causal=request.causal, max_tokens=request.max_tokens)

    if len(request.text) > TRIM_CHARS:  # a page over a long input allocates and frees far more than it keeps
        release_memory_soon()
    # a session's own trained model is keyed by the object itself (a retrained model is a new one)
    return TRACES.get((request.trace_key, trained, rules), compute)


def has_map(key: tuple) -> bool:
    """True when :func:`shared_map` has ``key`` already."""
    return key in MAPS


def shared_map(key: tuple, build: Callable[[], T]) -> T:
    """What a page draws from a trace (``key`` starts with :func:`request_key`), built once per process and
    shared by every session without a copy (its arrays are read-only)."""
    return MAPS.get(key, build)


def shared_figure(key: tuple, build: Callable[[], T]) -> T:
    """A figure ready to send, built once per process for ``key`` (which names the view, its data and the
    theme) and shown as it is to every session that asks for the same view."""
    return FIGURES.get(key, build)


def shared_table(key: tuple, build: Callable[[], T]) -> T:
    """A table ready to send (a ``pyarrow.Table``), built once per process for ``key`` (which names its numbers
    and labels) and shown as it is to every session that asks for the same table."""
    return TABLES.get(key, build)


@functools.cache
def device_label() -> str:
    """Where forward passes run, for the pages (fixed for the process: a plain memo, no per-call hashing). On a
    cold start, the launcher's child says it (asking torch here would wait for this process's own import)."""
    return prefetch.device() or engine.device_name()


def friendly_error(err: BaseException) -> str:
    """A message for the UI as plain text: engine errors as written, anything else as one calm sentence.

    Either way with absolute paths cut to file names and at most ``MAX_MESSAGE`` characters: engine
    messages are written that way, and this is the last guard before a page shows one. Plain text, not
    markdown: engine messages may quote what the user typed, so ``components.guard.error_text`` (the one
    way a page shows it) escapes it with ``safe_text.md`` (services never import components).
    """
    if isinstance(err, EngineError):
        return shorten(hide_paths(str(err)), MAX_MESSAGE)
    log.exception("unexpected error", exc_info=err)
    return f"Something went wrong while computing this ({type(err).__name__}). Try a shorter text or another model."


def warm_up(landing: bool = False) -> None:
    """Import torch and transformers in the background so the first trace does not wait for them; after a launch
    that started a prefetch (:mod:`engine.prefetch`), also load its model, which answers every later trace.

    ``landing``: the process's first page run is the landing page the prefetch traces (no link's values): the
    imports here then start once the child has answered (two imports under one GIL delayed its answer by
    ~0.2–1 s). Any other first page (a deep link, a lesson) needs this process's own model, so they start at once.
    """

    def work() -> None:
        try:
            from engine.families.hf_api import hf

            if landing:
                prefetch.answered()  # the launcher's child first, if one runs (the first chart is its answer)
            hf()  # imports torch and transformers under the engine's import lock
            early = prefetch.asked()
            if early is not None:  # the launcher's child answers the first pages: load our own copy for the rest
                _served_model(early, policy())
        except Exception:  # noqa: BLE001 — best effort in its own thread: the first real use reports any error
            log.debug("warm-up import failed", exc_info=True)
        finally:
            prefetch.forget()  # its trace lives on in TRACES if a page asked for it

    if not getattr(warm_up, "_started", False):
        warm_up._started = True  # type: ignore[attr-defined]
        threading.Thread(target=work, name="warm-up", daemon=True).start()
        publish_cache_sizes()


class CacheSizes:
    """What each shared cache holds, as a metric of the server's own endpoint (``GET /_stcore/metrics``:
    ``playground_cache_bytes{cache="traces"}`` …, live; Streamlit's ``cache_memory_bytes`` next to it
    counts ``st.cache_data`` and session state, refreshed every 5 s): what a server keeps on purpose, for
    its admin and for the benchmarks that compare its memory before and after work."""

    stats_families = ("playground_cache_bytes",)
    caches = {"traces": TRACES, "maps": MAPS, "figures": FIGURES}

    def get_stats(self, family_names=None) -> dict[str, list]:
        from streamlit.runtime.stats import GaugeStat

        return {
            "playground_cache_bytes": [
                GaugeStat(
                    "playground_cache_bytes",
                    cache.bytes,
                    {"cache": name},
                    "bytes",
                    "Bytes held by the app's shared cache (traces, maps, figures), bounded by its budget",
                )
                for name, cache in self.caches.items()
            ]
        }


def publish_cache_sizes() -> bool:
    """Register :class:`CacheSizes` with the running Streamlit server (once; False without a server)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return False
    runtime = Runtime.instance()
    with _PUBLISHED_LOCK:
        if _PUBLISHED.get("runtime") is not runtime:
            runtime.stats_mgr.register_provider(CacheSizes())
            _PUBLISHED["runtime"] = runtime
    return True


_PUBLISHED: dict[str, Any] = {}
_PUBLISHED_LOCK = threading.Lock()


def session_id() -> str:
    """A random id for this browser session (kept in session state)."""
    import uuid

    return default_from(K.session_id, lambda: uuid.uuid4().hex)
