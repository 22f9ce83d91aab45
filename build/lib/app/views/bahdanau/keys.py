"""The bahdanau page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from typing import Any

from app.url_params import Param, integer, one_of, text


class Bahdanau:
    """The Bahdanau page's keys; the four its links carry are the URL parameters of the same names."""

    text, variant, example, step = "bahdanau_text", "bahdanau_variant", "bahdanau_example", "bahdanau_step"
    tf_layer, tf_head = "bahdanau_tf_layer", "bahdanau_tf_head"  # the transformer's layer and head (-1: their average)
    differs = "bahdanau_differs"  # the "Try <the sentence where attention and gold links differ>" button
    # charts and downloads (element keys; ``cmp`` is a prefix: one chart per attention variant)
    map, map_csv, cmp, cmp_transformer = "bahdanau_map", "bahdanau_map_csv", "bahdanau_cmp_", "bahdanau_cmp_transformer"
    step_table, step_csv = "bahdanau_step_table", "bahdanau_step_csv"
    state, energies, context = "bahdanau_state", "bahdanau_energies", "bahdanau_context"

    DEFAULTS: dict[str, Any] = {text: "the red car is big", variant: "additive", tf_layer: 0, tf_head: -1}


PAGE = frozenset({"bahdanau"})
PARAMS = (
    Param(Bahdanau.text, text(200), Bahdanau.DEFAULTS[Bahdanau.text], PAGE),
    Param(Bahdanau.variant, one_of(("additive", "dot")), Bahdanau.DEFAULTS[Bahdanau.variant], PAGE),
    Param(Bahdanau.tf_layer, integer(0, 64), Bahdanau.DEFAULTS[Bahdanau.tf_layer], PAGE),
    Param(Bahdanau.tf_head, integer(-1, 64), Bahdanau.DEFAULTS[Bahdanau.tf_head], PAGE),
)
