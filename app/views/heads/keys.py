"""The heads page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from app.url_params import block, tab_bar


class Heads:
    """The Heads page's keys; ``tab`` and ``block`` are also URL parameters. Prefixes: ``display`` (the display and
    zoom controls), ``cmp_a`` / ``cmp_b`` (Compare's head pickers), ``cmp`` and ``sent`` (a chart per head or sentence)."""

    tab, block, display = "heads_tab", "heads_block", "heads"
    view = "heads_layer_view"  # the model view: every layer × head and the chosen one large, drawn in the browser
    csv = "heads_csv"  # the chosen head's CSV (its JSON: "heads_json"); the view holds a click until the server has it
    metric, metric_map, metrics_table = "heads_metric", "heads_metric_map", "heads_metrics_table"
    similarity, pairs = "heads_similarity", "heads_pairs"
    cmp_a, cmp_b, cmp, cmp_metrics = "heads_cmp_a", "heads_cmp_b", "heads_cmp_", "heads_cmp_metrics"
    text_a, text_b, sent, diff = "heads_text_a", "heads_text_b", "heads_sent_", "heads_diff"
    sent_metrics = "heads_sent_metrics"
    fusion, discard, discard_rule = "heads_fusion", "heads_discard", "heads_discard_rule"
    raw, rollout = "heads_raw", "heads_rollout"


TABS = {
    "model": "Model view",
    "metrics": "Per-head metrics",
    "similarity": "Head similarity",
    "compare": "Compare",
    "rollout": "Rollout",
    "ablation": "Ablation",
}
PAGE = frozenset({"heads"})
PARAMS = (block(Heads.block, PAGE), tab_bar(Heads.tab, TABS, PAGE))
