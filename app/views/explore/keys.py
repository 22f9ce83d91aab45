"""The explore page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from typing import Any

from app.url_params import Param, as_text, block, boolean, choice, integer, number, shown_view
from engine.generation import MAX_NEW_TOKENS


class Explore:
    """The Explore page's keys and its panels' (write more, next token, ablation); ``tab``, ``block``, ``decode``
    and ``write_request`` are also URL parameters."""

    tab, block = "explore_tab", "explore_block"
    view = "explore_layer_view"  # the layer's heads, drawn in the browser
    csv, why = "explore_csv", "explore_why"  # a download and a link the view holds until the server has its head
    repeat = "explore_jobs_repeat"  # "Is each head doing its job?": the one-click edit
    query_bars, mask = "query_row_bars", "mask_"  # charts; ``mask`` + the causal flag
    decode = "explore_decode"  # (model, text, token limit, decoding settings) of an encoder-decoder
    decode_form, decode_prefix = "decode_form", "decode"  # its "Decode again" form; prefix of that form's widgets
    write_request = "write_request"  # Write more: the settings asked, with the text and model they were for
    write_form, write_prefix, write_chart = "write_form", "write", "write_chart"
    long_example = "long_example"  # the "Try a long text" button
    temperature, next_chart = "next_token_temperature", "next_token_chart"  # the next-token panel
    ablation_block, ablation_heads = "ablation_block", "ablation_heads"
    ablation_layers, ablation_keep = "ablation_layers", "ablation_keep_only"
    ablation_chart, ablation_csv = "ablation_next_token", "ablation_csv"


TABS = {
    "jobs": "Is each head doing its job?",
    "mask": "Causal mask off vs on",
    "next": "What comes next?",
    "write": "Write more",
}


def read_decoding(raw: str) -> tuple:
    """``"20,0"`` (greedy) or ``"20,1,0.8,5,0.9,11"`` (sampled: temperature, top-k, top-p, seed) → the request
    Explore keeps in session state: (model, text, token limit, settings in ``DecodeSettings`` order)."""
    parts = raw.split(",")
    if len(parts) not in (2, 6):
        raise ValueError(f"{raw!r}: tokens,sampled[,temperature,top_k,top_p,seed]")
    n_new, sampled = integer(1, MAX_NEW_TOKENS)(parts[0]), boolean(parts[1])
    if not sampled:
        settings = (n_new, False, 1.0, 0, 1.0, 0)  # greedy ignores the rest (as the form returns it)
    elif len(parts) == 6:
        temperature, top_k = number(0.1, 2.0)(parts[2]), integer(0, 1000)(parts[3])
        settings = (n_new, True, temperature, top_k, number(0.05, 1.0)(parts[4]), integer(0, 2**32 - 1)(parts[5]))
    else:
        raise ValueError(f"{raw!r}: sampling needs temperature, top_k, top_p and seed")
    return (*shown_view(), settings)


def show_decoding(request: Any) -> str | None:
    """The link's string of a decoding request, or None once the sentence, model or limit changed."""
    try:
        n_new, sampled, temperature, top_k, top_p, seed = request[3]
        if tuple(request[:3]) != shown_view():
            return None
    except (TypeError, ValueError):
        return None
    if not sampled:
        return f"{int(n_new)},0"
    return ",".join(as_text(v) for v in (int(n_new), True, float(temperature), int(top_k), float(top_p), int(seed)))


PAGE = frozenset({"explore"})
#: a decoding request is read after the sentence and the model (the shared parameters come first)
PARAMS = (
    block(Explore.block, PAGE),
    # none open at first; "heads", the grid's old tab (now the view), reads as none: an old link is left as it came
    Param(Explore.tab, choice({**TABS, "heads": None}), None, PAGE, {v: k for k, v in TABS.items()}, "tabs"),
    Param(Explore.decode, read_decoding, None, PAGE, show=show_decoding),  # an encoder-decoder's decoding
    Param(Explore.write_request, read_decoding, None, PAGE, show=show_decoding),  # a decoder's "Write more"
)
