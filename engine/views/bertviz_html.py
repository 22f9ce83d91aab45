"""bertviz's head view, model view and neuron view built from our traces, ready to render offline.

bertviz draws attention as lines from each query token (left) to each key token (right), with
opacity = weight. Its payload is one contract for every view::

    {"attn": [layer][head][q_pos][k_pos], "left_text": [q tokens], "right_text": [k tokens]}

plus, for the neuron view, ``"queries": [layer][head][q_pos][d_head]`` and ``"keys"``. The head and
model views are made by ``bertviz.head_view`` / ``bertviz.model_view`` (``html_action="return"``),
which take torch tensors ``[1, head, q, k]`` per layer: that conversion lives here, so pages never
import torch. The neuron view's JS is read from the installed bertviz package and fed with a
payload built from ``AttentionTrace.q/k/pattern`` (bertviz's own neuron view needs its vendored
models). Every document is made offline by :mod:`engine.views.offline_js`.

Numbers are rounded before they are written (weights to 4 decimals, q/k to 3): the JSON is
bertviz's whole cost, and more digits change nothing on screen.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.records import EngineError
from engine.traces import Trace
from engine.traces.attention import AttentionTrace
from engine.traces.seq2seq import Seq2SeqTrace
from engine.views.offline_js import offline_document, script_safe

WEIGHT_DECIMALS = 4
VECTOR_DECIMALS = 3
#: beyond these token counts a view is not built: its page grows with layers · heads · n² and a browser on a
#: busy laptop takes seconds to draw it (docs/BENCHMARKS.md, "bertviz views: payload")
MAX_TOKENS = {"head": 64, "model": 48, "neuron": 64}
#: beyond this many numbers in a payload it is not built either (model/head view: layers·heads·n², so a
#: 12 × 12-head model stops at 41 tokens in the model view and 64 in the head view; neuron view: + q/k)
MAX_CELLS = {"head": 600_000, "model": 250_000, "neuron": 1_500_000}

#: bertviz draws the model view 970 px wide and the opened neuron view about 1,010 px wide, whatever the
#: window; in the app's iframe (~850 px at a 1280 px window) the model view lost heads 10–11 and the
#: neuron view its right-hand panel. This script gives each drawing a viewBox of its own extent and
#: lets it scale to the frame's width (never above its own size), each time bertviz draws one.
FIT_JS = """
(function () {
  function fit(svg) {
    var box = svg.getBBox();
    var w = svg.getAttribute("width") || "", h = svg.getAttribute("height") || "";
    var x0 = Math.min(0, box.x), y0 = Math.min(0, box.y);
    var right = Math.max(w.indexOf("%") < 0 ? parseFloat(w) || 0 : 0, box.x + box.width);
    var bottom = Math.max(h.indexOf("%") < 0 ? parseFloat(h) || 0 : 0, box.y + box.height);
    if (!(right - x0 > 0 && bottom - y0 > 0)) return;
    svg.setAttribute("viewBox", [x0, y0, right - x0, bottom - y0].join(" "));
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    svg.style.width = "100%";
    svg.style.maxWidth = (right - x0) + "px";
    svg.style.height = "auto";
    svg.setAttribute("data-fitted", "1");
  }
  function fitAll() {
    document.querySelectorAll("#vis > svg:not([data-fitted])").forEach(fit);
  }
  new MutationObserver(fitAll).observe(document.body, {childList: true, subtree: true});
  fitAll();
})();
"""


def _fit_script() -> str:
    return f"<script>{FIT_JS}</script>"


_PARAMS = re.compile(r"const params = (\{.*?\}); // HACK", re.DOTALL)
_NEURON_PARAMS = re.compile(r"window\.bertviz_params = (\{.*?\});\n", re.DOTALL)


@dataclass(frozen=True)
class AttentionPart:
    """One attention matrix family of a trace: bertviz's "Encoder", "Decoder", "Cross" or unnamed."""

    name: str | None
    trace: AttentionTrace


def attention_parts(trace) -> list[AttentionPart]:
    """The self/cross-attention blocks of any trace that has queries and keys.

    Args:
        trace: an AttentionTrace, Seq2SeqTrace or VisionTrace.

    Returns:
        One part for encoders, decoders and ViTs; encoder, decoder and cross parts for a seq2seq.

    Raises:
        EngineError: for an AlignmentTrace (an RNN's attention has no queries or keys).
    """
    blocks = trace.attention_blocks() if isinstance(trace, Trace) else None
    if blocks is None:
        raise EngineError(f"No bertviz view for a {type(trace).__name__}.")
    if not blocks:
        raise EngineError(
            "An RNN with Bahdanau/Luong attention has no queries or keys: its attention scores "
            "come from the decoder state and the encoder states directly."
        )
    if len(blocks) == 1:  # one block of heads: bertviz's plain attention= view, no part name
        return [AttentionPart(None, next(iter(blocks.values())))]
    return [AttentionPart(name.capitalize(), tr) for name, tr in blocks.items()]
    raise EngineError(f"No bertviz view for a {type(trace).__name__}.")


def n_tokens(trace) -> int:
    """The longest token side in ``trace`` (what bertviz draws one row per)."""
    if not trace.attention_blocks():  # RNN attention: one alignment map, no heads
        return max(len(trace.source), len(trace.target))
    return max(max(p.trace.n_queries, p.trace.n_keys) for p in attention_parts(trace))


def n_cells(trace, view: str) -> int:
    """How many numbers ``view`` would send for ``trace`` (all layers and heads of every part)."""
    if not trace.attention_blocks():  # RNN attention: one alignment map, no heads
        return int(trace.alignment.size)
    total = 0
    for part in attention_parts(trace):
        tr = part.trace
        total += tr.n_layers * tr.n_heads * tr.n_queries * tr.n_keys
        if view == "neuron":
            total += tr.n_layers * tr.n_heads * (tr.n_queries + tr.n_keys) * tr.d_head
    return total


def too_big(trace, view: str) -> str | None:
    """Why ``view`` is not drawn for ``trace`` (too many tokens or numbers), or None when it is fine."""
    n, cells = n_tokens(trace), n_cells(trace, view)
    if n > MAX_TOKENS[view]:
        return f"{n} tokens: above {MAX_TOKENS[view]}, bertviz's {view} view gets unreadable and slow to draw."
    if cells > MAX_CELLS[view]:
        return f"{cells:,} numbers to send: above {MAX_CELLS[view]:,}, the {view} view gets too heavy for a browser."
    return None


# ---------------------------------------------------------------- head view and model view


def _torch_layers(patterns: list[np.ndarray]):
    """``[head, q, k]`` numpy per layer → bertviz's input: a list of ``[1, head, q, k]`` float64 tensors."""
    import torch

    return [torch.from_numpy(np.round(p.astype(np.float64), WEIGHT_DECIMALS))[None] for p in patterns]


def _bertviz_kwargs(trace) -> dict:
    """bertviz's ``attention=``/``tokens=`` or encoder/decoder/cross arguments for ``trace``."""
    if not trace.attention_blocks():  # RNN attention: one alignment map, no heads
        return {
            "cross_attention": _torch_layers([trace.alignment[None]]),
            "encoder_tokens": list(trace.source.strings),
            "decoder_tokens": list(trace.target.strings),
        }
    parts = attention_parts(trace)
    layers = {p.name: _torch_layers([p.trace.pattern(i) for i in range(p.trace.n_layers)]) for p in parts}
    if len(parts) == 1:
        return {"attention": layers[None], "tokens": list(parts[0].trace.tokens.strings)}
    seq: Seq2SeqTrace = trace
    return {
        "encoder_attention": layers["Encoder"],
        "decoder_attention": layers["Decoder"],
        "cross_attention": layers["Cross"],
        "encoder_tokens": list(seq.source.strings),
        "decoder_tokens": list(seq.target.strings),
    }


def _check_size(trace, view: str) -> None:
    reason = too_big(trace, view)
    if reason:
        raise EngineError(reason)


def _offline(bertviz_html: str, title: str, extra_css: str = "") -> str:
    """bertviz's returned HTML with its inline script made safe for any token text, then offline."""
    head, sep, script = bertviz_html.partition('<script type="text/javascript">')
    body = head + sep + script_safe(script.rsplit("</script>", 1)[0]) + "</script>" if sep else bertviz_html
    return offline_document(body, title=title, extra_css=extra_css)


def head_view_html(trace, layer: int = 0, head: int | None = None, *, enforce_limits: bool = True) -> str:
    """bertviz's head view (one layer, every head in colour; hover a token to isolate its lines).

    Args:
        trace: any trace (an RNN's alignment shows as one "Cross" head).
        layer: the layer selected at first (clamped to the model's layers).
        head: the one head shown at first (its colour square shows the others); None, or none such: every head.
        enforce_limits: refuse inputs above :data:`MAX_TOKENS` / :data:`MAX_CELLS` (benchmarks turn it off).

    Returns:
        A complete offline HTML document.

    Raises:
        EngineError: too many tokens or numbers (:func:`too_big`).
    """
    from bertviz import head_view

    if enforce_limits:
        _check_size(trace, "head")
    kwargs = _bertviz_kwargs(trace)
    layers = next(v for k, v in kwargs.items() if k.endswith("attention"))
    heads = [int(head)] if head is not None and 0 <= int(head) < layers[0].shape[1] else None
    html_obj = head_view(**kwargs, layer=min(max(int(layer), 0), len(layers) - 1), heads=heads, html_action="return")
    return _offline(html_obj.data, "bertviz head view")


def model_view_html(trace, *, enforce_limits: bool = True) -> str:
    """bertviz's model view (a thumbnail per layer × head; click one to enlarge it).

    Raises:
        EngineError: too many tokens or numbers (:func:`too_big`).
    """
    from bertviz import model_view

    if enforce_limits:
        _check_size(trace, "model")
    html_obj = model_view(**_bertviz_kwargs(trace), display_mode="light", html_action="return")
    return _offline(_fit_script() + html_obj.data, "bertviz model view")


# ---------------------------------------------------------------- neuron view (queries and keys)


def _rounded(x: np.ndarray, decimals: int) -> list:
    return np.round(x.astype(np.float64), decimals).tolist()


def neuron_payload(trace, layer: int = 0, head: int = 0) -> dict:
    """The parameters bertviz's neuron-view JS reads (``window.bertviz_params``), from our trace.

    Args:
        trace: an AttentionTrace, Seq2SeqTrace or VisionTrace.
        layer, head: shown first (clamped).

    Returns:
        ``{"attention": {part: {attn, queries, keys, left_text, right_text}}, "default_filter",
        "bidirectional", "display_mode", "layer", "head", "root_div_id"}``; queries/keys as they
        enter the dot product (``trace.q``/``trace.k``), attention = ``trace.pattern``.
    """
    parts = attention_parts(trace)
    first = parts[0].trace
    parts = [p for p in parts if p.trace.n_layers == first.n_layers and p.trace.n_heads == first.n_heads]
    attention = {}
    for part in parts:
        tr = part.trace
        attention[(part.name or "all").lower()] = {
            "attn": [_rounded(tr.pattern(i), WEIGHT_DECIMALS) for i in range(tr.n_layers)],
            "queries": [_rounded(tr.q(i), VECTOR_DECIMALS) for i in range(tr.n_layers)],
            "keys": [_rounded(tr.k(i), VECTOR_DECIMALS) for i in range(tr.n_layers)],
            "left_text": list(tr.tokens.strings),
            "right_text": list(tr.key_tokens.strings),
        }
    return {
        "attention": attention,
        "default_filter": next(iter(attention)),
        "bidirectional": not first.causal,
        "display_mode": "light",
        "layer": min(max(int(layer), 0), first.n_layers - 1),
        "head": min(max(int(head), 0), first.n_heads - 1),
        "root_div_id": f"bertviz-{uuid.uuid4().hex}",
    }


def _bertviz_js(name: str) -> str:
    spec = importlib.util.find_spec("bertviz")
    if spec is None or not spec.submodule_search_locations:
        raise EngineError("bertviz is not installed: run `pip install -r requirements.txt`.")
    return Path(list(spec.submodule_search_locations)[0], name).read_text(encoding="utf-8")


def neuron_view_html(trace, layer: int = 0, head: int = 0, *, enforce_limits: bool = True) -> str:
    """bertviz's neuron view (query and key vectors, q×k, q·k, softmax) for one layer/head at a time.

    Raises:
        EngineError: no queries/keys (RNN), too many tokens or numbers.
    """
    if enforce_limits:
        _check_size(trace, "neuron")
    params = neuron_payload(trace, layer, head)
    root = params["root_div_id"]
    names = list(params["attention"])
    filter_html = ""
    if len(names) > 1:
        options = "".join(f'<option value="{n}">{html.escape(n.capitalize())}</option>' for n in names)
        filter_html = f'<span class="dropdown-label">Attention: </span><select id="filter">{options}</select>'
    controls = (
        f'<div id="{root}" style="padding:8px;"><span style="user-select:none">'
        '<span class="dropdown-label">Layer: </span><select id="layer"></select> '
        '<span class="dropdown-label">Head: </span><select id="att_head"></select> '
        f'{filter_html}</span><div id="vis"></div></div>'
    )
    payload = json.dumps(params, separators=(",", ":")).replace("<", "\\u003c").replace("&", "\\u0026")
    body = (
        _fit_script()
        + controls
        + f"<script>window.bertviz_params = {payload};\n</script>"
        + f"<script>{_bertviz_js('neuron_view.js')}</script>"
    )
    # rows beyond the first part's key count (cross-attention: more targets than sources) stay visible
    return offline_document(body, title="bertviz neuron view", extra_css="#vis svg{overflow:visible}")


# ---------------------------------------------------------------- reading a built page back (tests, benchmarks)


def read_payload(document: str) -> dict:
    """The JSON parameters inside a document built here (head/model view or neuron view)."""
    match = _NEURON_PARAMS.search(document) or _PARAMS.search(document)
    if match is None:
        raise ValueError("no bertviz parameters found in this document")
    return json.loads(match.group(1).replace("<\\!--", "<!--"))
