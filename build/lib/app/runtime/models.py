"""The models the app serves: one read-only copy per id in ``st.cache_resource``, and the bound on forward passes.

Only the gateway (this package and the pages' data modules) holds a model (:func:`get_model`); pages get
:func:`get_card`'s plain ``ModelCard``. Every load goes through the admin's rules (:func:`policy`); every forward
pass runs inside :func:`model_pass` (one of :data:`MAX_JOBS` slots, one torch thread).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import sys
import threading
import time
import uuid
import weakref

import streamlit as st

import engine
import engine.registry
from app.state import K, default_from
from engine import ModelSpec, prefetch
from engine.policy import ServerPolicy
from engine.records import ModelCard
from engine.registry import HUB_SUGGESTIONS

MAX_JOBS = 2  # forward passes at once in one server process
CORES = max(1, os.cpu_count() or 1)
_slots = threading.BoundedSemaphore(MAX_JOBS)
_running = [0]  # forward passes running now
_running_lock = threading.Lock()


@functools.cache
def bound_threads() -> None:
    """One torch intra-op thread and one numpy BLAS thread for this process's work (once)."""
    engine.set_threads(1)
    engine.limit_numpy_threads(1)


@contextlib.contextmanager
def model_pass(long_input: bool = False):
    """At most :data:`MAX_JOBS` forward passes at once, torch at one thread, except a long input while it is the
    only pass and no long work runs (every core; torch keeps the setting per thread)."""
    bound_threads()
    with _slots:
        with _running_lock:
            _running[0] += 1
            alone = long_input and _running[0] == 1 and not long_work_running()
        engine.set_threads(CORES if alone else 1)
        try:
            yield
        finally:
            engine.set_threads(1)
            with _running_lock:
                _running[0] -= 1


def long_work_running() -> bool:
    """True while a long job (Train live included) runs in this process (it keeps a core busy)."""
    lane = sys.modules.get("engine.jobs")  # not imported: no long job ever started here
    return bool(lane is not None and lane.get_queue().running_count())


def policy() -> ServerPolicy:
    """The server admin's rules for models typed into a page (``AP_MODEL_DIRS``, ``AP_HUB``, ``AP_HUB_MAX_GB``)."""
    return ServerPolicy.from_env()


_CATALOG_TTL_S = 60.0  # the catalog lists Hub models found in the local cache: re-read now and then
_catalog_memo: list = [float("-inf"), ()]


def catalog() -> tuple[ModelSpec, ...]:
    """``engine.list_models()``, re-read at most once a minute (a plain tuple shared read-only)."""
    now = time.monotonic()
    if now - _catalog_memo[0] > _CATALOG_TTL_S:
        _catalog_memo[1] = tuple(engine.list_models())
        _catalog_memo[0] = now
    return _catalog_memo[1]


def list_models() -> tuple[ModelSpec, ...]:
    """The model catalog (offline models first), without the Hub suggestions where the Hub is switched off."""
    if policy().hub:
        return catalog()
    return tuple(s for s in catalog() if s.id not in {h.id for h in HUB_SUGGESTIONS})


def session_models() -> tuple[ModelSpec, ...]:
    """The models this session trained (Train live's "Open in Explore"), for the model pickers."""
    return engine.registry.runtime_specs(session_id())


_loaded: set[tuple[str, ServerPolicy]] = set()  # (id, rules) already in _shared_model's cache (a hint only)


@st.cache_resource(show_spinner=False, max_entries=4)
def _shared_model(model_id: str, rules: ServerPolicy):
    # the policy is part of the key: a model is only ever served under the rules it was admitted by
    bound_threads()
    model = engine.load(model_id, policy=rules)
    _loaded.add((model_id, rules))
    gc.freeze()  # the model and the libraries it imported are here for good: later collections skip them
    return model


_model_refs: dict[tuple[str, ServerPolicy], weakref.ref] = {}  # (id, rules) -> the model _shared_model returned


def served_model(model_id: str, rules: ServerPolicy):
    """The shared model of ``model_id`` under ``rules``, looked up in a dict of weak references first (cheaper than
    ``st.cache_resource``'s hashing; its eviction still frees a model)."""
    ref = _model_refs.get((model_id, rules))
    model = ref() if ref is not None else None
    if model is None:
        model = _shared_model(model_id, rules)
        with contextlib.suppress(TypeError):  # an object without weak references: always through the cache
            _model_refs[(model_id, rules)] = weakref.ref(model)
    return model


def trained_model(model_id: str):
    """The model this session trained under ``model_id`` (Train live), else None."""
    return engine.registry.runtime_model(model_id, session_id())


def get_model(model_id: str):
    """This session's trained model of ``model_id``, else the shared read-only copy (as :func:`policy` allows)."""
    trained = trained_model(model_id)
    return trained if trained is not None else served_model(model_id, policy())


def model_loaded(model_id: str) -> bool:
    """True when ``model_id`` is probably loaded already (then a page shows no spinner for it)."""
    return (model_id, policy()) in _loaded or trained_model(model_id) is not None


def get_card(model_id: str) -> ModelCard:
    """What pages may know about a model: its catalog entry, where its causal toggle starts, its longest input."""
    early = early_answer(model_id)
    if early is not None:
        return early.card
    model = get_model(model_id)
    return ModelCard(spec=model.spec, default_causal=bool(model.default_causal), max_positions=int(model.max_positions))


def early_answer(model_id: str, rules: ServerPolicy | None = None) -> prefetch.Answer | None:
    """On a cold start, the launcher's child's answer about ``model_id`` (:mod:`engine.prefetch`), waiting for it,
    while this process has not loaded that model itself (and it is no session's trained model); else None."""
    if prefetch.asked() != model_id:  # the usual case, and every call after the warm-up loaded it here
        return None
    rules = policy() if rules is None else rules
    if (model_id, rules) in _loaded or trained_model(model_id) is not None:
        return None
    return prefetch.answer(model_id)


@functools.cache
def device_label() -> str:
    """Where forward passes run (on a cold start the launcher's child says it: asking torch would wait)."""
    return prefetch.device() or engine.device_name()


def session_id() -> str:
    """A random id for this browser session (kept in session state)."""
    return default_from(K.session_id, lambda: uuid.uuid4().hex)
