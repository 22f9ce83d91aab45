"""The explain page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from typing import Any


class Explain:
    """The "Is attention the explanation?" page's keys. Prefixes: ``text`` + the model's index in ``EXPLAIN_MODELS``
    (each model keeps its own input), ``bars`` + a method id."""

    model, text, reference = "explain_model", "explain_text_", "explain_reference"
    steps, baseline, loo, special = "explain_steps", "explain_baseline", "explain_loo", "explain_special"
    layer, head, kind, runs = "explain_layer", "explain_head", "explain_kind", "explain_runs"
    heat, bars, rho, tau = "explain_heat", "explain_bars_", "explain_rho", "explain_tau"
    swap, csv = "explain_swap", "explain_csv"

    DEFAULTS: dict[str, Any] = {model: "tiny-gpt-stories", steps: 32, baseline: "zero", loo: "remove", special: False}
    DEFAULTS |= {kind: "permuted", runs: 20}
