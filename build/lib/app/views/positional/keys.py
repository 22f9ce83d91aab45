"""The positional page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from app.url_params import tab_bar


class Positional:
    """The Positional page's keys, by tab; ``tab`` is also the URL parameter that opens a tab."""

    tab = "pos_tab"
    # Sinusoidal tab
    sin_len, sin_d, sin_k, sin_dims = "pos_sin_len", "pos_sin_d", "pos_sin_k", "pos_sin_dims"
    sin_angles, sin_curves, sin_heatmap, sin_sim = "pos_sin_angles", "pos_sin_curves", "pos_sin_heatmap", "pos_sin_sim"
    sin_csv, sin_shift_table = "pos_sin_csv", "pos_sin_shift_table"
    # Learned tab
    learned_n, learned_heatmap, learned_sim = "pos_learned_n", "pos_learned_heatmap", "pos_learned_sim"
    learned_vs_sin, learned_csv = "pos_learned_vs_sin", "pos_learned_csv"
    # RoPE tab
    rope_d, rope_n, rope_m, rope_k, rope_pair = "pos_rope_d", "pos_rope_n", "pos_rope_m", "pos_rope_k", "pos_rope_pair"
    rope_pair_fig, rope_table = "pos_rope_pair_fig", "pos_rope_table"
    # ALiBi tab
    alibi_len, alibi_heads, alibi_causal = "pos_alibi_len", "pos_alibi_heads", "pos_alibi_causal"
    alibi_show, alibi_slopes, alibi_grid = "pos_alibi_show", "pos_alibi_slopes", "pos_alibi_grid"
    # Order blindness tab
    blind_text, blind_seed, blind_layer = "pos_blind_text", "pos_blind_seed", "pos_blind_layer"
    blind_head, blind_setting, blind_orig = "pos_blind_head", "pos_blind_setting", "pos_blind_orig"
    blind_shuf, blind_perm, blind_errors = "pos_blind_shuf", "pos_blind_perm", "pos_blind_errors"


TABS = {"sinusoidal": "Sinusoidal", "learned": "Learned", "rope": "RoPE", "alibi": "ALiBi", "order": "Order blindness"}
PARAMS = (tab_bar(Positional.tab, TABS, frozenset({"positional"})),)
