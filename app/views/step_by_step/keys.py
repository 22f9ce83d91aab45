"""The step by step page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from app.url_params import Param, block, boolean, integer, one_of


class Step:
    """The Step by step page's keys; ``query``, ``block`` and the score section's ``parts`` (open), ``key`` and
    ``split`` are also its URL parameters."""

    query, block, json = "step_query", "step_block", "step_json"
    # the six steps' tables and chart (``step_tables.show_vectors`` adds ``_short`` / ``_full``)
    q, k, v, z = "step_q", "step_k", "step_v", "step_z"
    raw, scaled, masked, weights, bar = "step_raw", "step_scaled", "step_masked", "step_weights", "step_bar"
    # "What made this score?": the section, its key token and split, its charts, table and download
    parts, key, split = "step_parts", "step_key", "step_split"
    parts_chart, bands_chart, parts_table, parts_csv = "step_parts_chart", "step_bands", "step_parts_table", "step_csv"
    # the calculator: its size and mask, its result tables; ``calc`` prefixes each typed table
    # (``step_calc_q_3x2``: a new size starts from the example) and ``calc_scale`` the scale slider of each width
    calc_tokens, calc_width, calc_causal = "step_calc_tokens", "step_calc_width", "step_calc_causal"
    calc_raw, calc_scaled, calc_masked = "step_calc_raw", "step_calc_scaled", "step_calc_masked"
    calc_weights, calc_z = "step_calc_weights", "step_calc_z"
    calc, calc_scale = "step_calc_", "step_calc_scale_"


#: the splits of one score (``engine.analysis.score_terms``'s ``by``) → their labels
SPLITS = {
    "sources": "Where q and k come from",
    "rope_bands": "RoPE frequency bands",
    "alibi": "Content and ALiBi distance",
}
PAGE = frozenset({"step_by_step"})
PARAMS = (
    block(Step.block, PAGE),
    Param(Step.query, integer(0, 16_384), None, PAGE),
    Param(Step.parts, boolean, False, PAGE),
    Param(Step.key, integer(0, 16_384), None, PAGE),
    Param(Step.split, one_of(SPLITS), "sources", PAGE),
)
