"""The "Is attention the explanation?" page's engine calls: one prediction, six importances, their agreement and
Jain & Wallace's test, each shared under the request's key (a class on one link computes each method once)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.runtime.caches import shared_map
from app.runtime.models import get_model, model_pass
from app.runtime.request import ExplainRequest
from app.runtime.traces import get_trace, request_key
from engine.analysis.attention_swap import swap_test
from engine.analysis.attribution import FROM_TRACE, METHODS, importance, predict, ranked
from engine.analysis.rank_agreement import agreement

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
    """One result's key: the prediction, ``parts`` (what the result adds), a session's own model and the rules."""
    return ("explain", request.prediction_key, *parts, *request_key(request.trace_request())[1:])


def _run(work):
    with model_pass(long_input=False):
        return work()


def explain_methods() -> dict[str, str]:
    """Method id → label, in the page's order (``engine.analysis.attribution.METHODS``)."""
    return dict(METHODS)


def explain_prediction(request: ExplainRequest):
    """``engine.analysis.attribution.predict`` of the request (cached, shared, read-only)."""
    model, how = get_model(request.model_id), dict(reference=request.reference, max_tokens=request.max_tokens)
    return shared_map(_key(request, "prediction"), lambda: _run(lambda: predict(model, request.text, **how)))


def importance_key(request: ExplainRequest, method: str) -> tuple:
    """One method's key: the prediction and the settings that method's result depends on."""
    settings = {"leave_one_out": (request.loo,), "integrated_gradients": (request.steps, request.baseline)}
    return _key(request, "importance", method, *settings.get(method, ()))


def explain_importance(request: ExplainRequest, method: str, progress: Progress = None):
    """One method's ``Importance`` of the prediction (shared); ``progress`` gets integrated gradients' share done."""
    pred = explain_prediction(request)

    def compute():
        trace = get_trace(request.trace_request()) if method in FROM_TRACE else None
        model = get_model(request.model_id)
        how = dict(steps=request.steps, baseline=request.baseline, loo=request.loo, progress=progress)
        return _run(lambda: importance(model, pred, method, trace=trace, **how))

    return shared_map(importance_key(request, method), compute)


@dataclass(frozen=True, eq=False)
class Agreement:
    """Rank agreement of the methods over the tokens compared (plain data for the page)."""

    methods: tuple[str, ...]
    spearman: np.ndarray  # [m, m]
    kendall: np.ndarray  # [m, m]
    compared: tuple[int, ...]  # the token positions ranked


def explain_agreement(request: ExplainRequest, include_special: bool) -> Agreement:
    """Spearman and Kendall matrices of the methods' rankings (by size) over the input's tokens, special ones only
    when ``include_special``, the [MASK] being filled never."""
    pred = explain_prediction(request)
    keep = np.array(
        [(include_special or not special) and i not in pred.excluded for i, special in enumerate(pred.tokens.special)]
    )
    rho, tau = agreement({m: ranked(explain_importance(request, m)) for m in METHODS}, keep)
    return Agreement(tuple(METHODS), rho, tau, tuple(int(i) for i in np.flatnonzero(keep)))


def explain_layout(model_id: str) -> tuple[int, int]:
    """``(layers, heads per layer)`` of a model the page explains."""
    from engine.analysis.ablation import head_layout  # torch: kept out of this module's import

    return head_layout(get_model(model_id))["self"]


@dataclass(frozen=True)
class Swap:
    """Jain & Wallace's test on one ``layer``: its ``head`` (None: all), the ``kind`` of weights, ``runs`` from ``seed``."""

    layer: int
    head: int | None
    kind: str
    runs: int = 20
    seed: int = 0

    def key(self, request: ExplainRequest) -> tuple:
        return _key(request, "swap", self)


def explain_swap(request: ExplainRequest, test: Swap, progress: Progress = None):
    """``engine.analysis.attention_swap.swap_test`` of ``test`` (cached)."""
    pred, model = explain_prediction(request), get_model(request.model_id)
    heads = None if test.head is None else (test.head,)
    how = dict(heads=heads, kind=test.kind, runs=test.runs, seed=test.seed, progress=progress)
    return shared_map(test.key(request), lambda: _run(lambda: swap_test(model, pred, test.layer, **how)))
