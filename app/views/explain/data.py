"""The "Is attention the explanation?" page: one prediction, six importances, their agreement, Jain & Wallace's test.

Everything is computed by ``engine.analysis.attribution`` / ``attention_swap`` / ``rank_agreement`` and kept in the
per-process ``caches.MAPS`` cache under the request's key (``ExplainRequest`` plus the session's own trained model
and the server's rules, as ``traces.request_key``): a class on one link computes each method once. The three
attention readings use the shared trace (``traces.get_trace``); the model runs hold the job bound (``models.model_pass``,
one torch thread each).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.runtime.caches import shared_map
from app.runtime.models import get_model, model_pass
from app.runtime.request import ExplainRequest
from app.runtime.traces import get_trace, request_key

#: the models the page explains → what is predicted (one of each kind of output)
EXPLAIN_MODELS: dict[str, str] = {
    "tiny-gpt-stories": "next word (our GPT)",
    "tiny-bert-stories": "masked word (our BERT)",
    "minilm": "sentence embedding (MiniLM)",
}
#: a first input per model (the stories models know only the words of simple stories)
EXPLAIN_EXAMPLES: dict[str, str] = {
    "tiny-gpt-stories": "tom had a big box and a small ball . he gave the",
    "tiny-bert-stories": "lily found a red ball . she gave [MASK] to tom .",
    "minilm": "The animal didn't cross the street because it was too tired.",
}
EXPLAIN_REFERENCE = "The dog was too exhausted to walk any further."
EXPLAIN_MAX_TOKENS = 64
Progress = Callable[[float], None] | None


def _key(request: ExplainRequest, *parts) -> tuple:
    return ("explain", request.prediction_key, *parts, *request_key(request.trace_request())[1:])


def _run(work):
    with model_pass(long_input=False):
        return work()


def explain_methods() -> dict[str, str]:
    """Method id → label, in the page's order (``engine.analysis.attribution.METHODS``)."""
    from engine.analysis.attribution import METHODS

    return dict(METHODS)


def explain_prediction(request: ExplainRequest):
    """``engine.analysis.attribution.predict`` of the request (cached, shared, read-only)."""
    from engine.analysis.attribution import predict

    model = get_model(request.model_id)
    return shared_map(
        _key(request, "prediction"),
        lambda: _run(lambda: predict(model, request.text, reference=request.reference, max_tokens=request.max_tokens)),
    )


def _settings(request: ExplainRequest, method: str) -> tuple:
    """The settings one method's result depends on (its part of the cache key)."""
    return {"leave_one_out": (request.loo,), "integrated_gradients": (request.steps, request.baseline)}.get(method, ())


def explain_is_cached(request: ExplainRequest, method: str) -> bool:
    """True when ``method``'s importance for ``request`` is computed already."""
    from app.runtime.caches import has_map

    return has_map(_key(request, "importance", method, *_settings(request, method)))


def explain_importance(request: ExplainRequest, method: str, progress: Progress = None):
    """One method's ``Importance`` for the request's prediction (cached); ``progress``: called with the share done
    while integrated gradients runs."""
    from engine.analysis.attribution import FROM_TRACE, importance

    pred = explain_prediction(request)

    def compute():
        trace = get_trace(request.trace_request()) if method in FROM_TRACE else None
        model = get_model(request.model_id)
        return _run(
            lambda: importance(
                model,
                pred,
                method,
                trace=trace,
                steps=request.steps,
                baseline=request.baseline,
                loo=request.loo,
                progress=progress,
            )
        )

    return shared_map(_key(request, "importance", method, *_settings(request, method)), compute)


@dataclass(frozen=True, eq=False)
class Agreement:
    """Rank agreement of the methods over the tokens compared (plain data for the page)."""

    methods: tuple[str, ...]
    spearman: np.ndarray  # [m, m]
    kendall: np.ndarray  # [m, m]
    compared: tuple[int, ...]  # the token positions ranked


def explain_agreement(request: ExplainRequest, include_special: bool) -> Agreement:
    """Spearman and Kendall matrices of every method's ranking (sizes of signed scores), over the input's tokens
    (special tokens only when ``include_special``; the [MASK] being filled never)."""
    from engine.analysis.attribution import METHODS, ranked
    from engine.analysis.rank_agreement import agreement

    pred = explain_prediction(request)
    keep = np.array(
        [(include_special or not special) and i not in pred.excluded for i, special in enumerate(pred.tokens.special)]
    )
    scores = {m: ranked(explain_importance(request, m)) for m in METHODS}
    rho, tau = agreement(scores, keep)
    return Agreement(tuple(METHODS), rho, tau, tuple(int(i) for i in np.flatnonzero(keep)))


def explain_layout(model_id: str) -> tuple[int, int]:
    """``(layers, heads per layer)`` of a model the page explains."""
    from engine.analysis.ablation import head_layout

    return head_layout(get_model(model_id))["self"]


def explain_swap(
    request: ExplainRequest,
    layer: int,
    head: int | None,
    kind: str,
    runs: int = 20,
    seed: int = 0,
    progress: Progress = None,
):
    """Jain & Wallace's test (``engine.analysis.attention_swap.swap_test``) on one head (None: the whole layer)."""
    from engine.analysis.attention_swap import swap_test

    pred = explain_prediction(request)
    heads = None if head is None else (int(head),)
    key = _key(request, "swap", int(layer), heads, kind, int(runs), int(seed))
    model = get_model(request.model_id)
    return shared_map(
        key,
        lambda: _run(
            lambda: swap_test(model, pred, int(layer), heads, kind, runs=int(runs), seed=int(seed), progress=progress)
        ),
    )


def explain_has_swap(
    request: ExplainRequest, layer: int, head: int | None, kind: str, runs: int = 20, seed: int = 0
) -> bool:
    """True when that test's result is cached."""
    from app.runtime.caches import has_map

    heads = None if head is None else (int(head),)
    return has_map(_key(request, "swap", int(layer), heads, kind, int(runs), int(seed)))
