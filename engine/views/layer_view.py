"""One layer's heads as bytes for the in-browser view (``layer_view.js``, ``layer_view.css``), and that view in a
notebook: ``show(trace)`` draws it offline, no server and no CDN. A cell travels as a uint16 count of
``step`` (0.001 for weights: the 3 decimals the pages print, exactly; smaller weights on a log scale, see
:func:`counts`; :data:`BLOCKED` where the mask blocks it),
deflated (zlib level 1: a MiniLM layer at 512 tokens, 12 heads of 256² block maxima, 1.58 MB → 0.37 MB): a 4-byte
little-endian length, a JSON header, padding to 8 bytes, then the cells."""

from __future__ import annotations

import base64
import json
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.traces.overview import overview_edges

HERE = Path(__file__).resolve().parent
JS = (HERE / "layer_view.js").read_text(encoding="utf-8")
CSS = (HERE / "layer_view.css").read_text(encoding="utf-8")
#: a notebook's view holds every layer while its cells fit this many bytes (then each head is pooled smaller)
NOTEBOOK_BYTES = 8 << 20
DIGITS = 3  # decimals a hover prints (fewer only when a weighting's values pass 65.534)
BLOCKED = 0xFFFF
TINY, TINY_PER_DECADE = 0xF000, 64  # codes from TINY: values under half a step, on a log scale (see counts)
#: the look where no theme is given (the app passes its own): Plotly's "Blues" stops, the app's text colour
LOOK = {
    "colors": ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"],
    "text_color": "#1b2430",
    "font_px": 13,
}


@dataclass(frozen=True)
class LayerData:
    """What the view draws: ``values`` ``[layers, heads, rows, cols]`` (NaN: blocked), the sent ``layers``' numbers
    and a label per row and column (``square``: one sequence on both axes, so a token can be highlighted); ``spans``:
    the first and last token position of each row and column (a block of an overview, a zoomed region; None: row
    and column i hold token i)."""

    values: np.ndarray
    layers: tuple[int, ...]
    q_labels: tuple[str, ...]
    k_labels: tuple[str, ...]
    square: bool = True
    value_name: str = "weight"
    log: bool = False  # coloured on a log scale (10⁻⁴ × a head's largest … its largest)
    spans: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None = None
    n_tokens: int | None = None  # the sequence's length (a highlight may lie outside a zoomed region)


@dataclass(frozen=True)
class Choice:
    """What the view opens on and says: the layer, head and highlighted token, the title's ``suffix``, its source line,
    a caption, the look and the URL parameters it keeps (None: it leaves the address bar alone, as in a notebook)."""

    layer: int = 0
    head: int = 0
    focus: int | None = None
    suffix: str = ""
    caption: str = ""
    source: str = ""  # the line under the title: the model and the sentence (plain text)
    look: dict = field(default_factory=lambda: LOOK)
    params: dict[str, str] | None = None
    id: str = ""  # the page's key for the view (its choice is kept across the server's reruns under it)
    grid: bool = False  # the model view: every sent layer × head as a grid of buttons (no layer bar)


def short(label: str) -> str:
    """A label as the canvas draws it (text, not HTML: nothing to escape), long tokens shortened."""
    return label if len(label) <= 24 else label[:23] + "…"


def encode(data: LayerData, choice: Choice) -> bytes:
    """The view's bytes."""
    _, n_heads, rows, cols = data.values.shape
    n_tokens = rows if data.n_tokens is None else data.n_tokens
    focus = choice.focus if data.square and choice.focus is not None and 0 <= choice.focus < n_tokens else None
    spans = data.spans or (tuple(range(rows)),) * 2 + (tuple(range(cols)),) * 2
    header = {
        **choice.look,
        "layers": list(data.layers),
        "n_heads": n_heads,
        "rows": rows,
        "cols": cols,
        "q": [short(t) for t in data.q_labels],
        "k": [short(t) for t in data.k_labels],
        "square": data.square,
        "n_tokens": n_tokens,
        **{name: [int(p) for p in span] for name, span in zip(("q_first", "q_last", "k_first", "k_last"), spans)},
        "value_name": data.value_name,
        "log": data.log,
        "layer": choice.layer if choice.layer in data.layers else data.layers[0],
        "head": min(max(choice.head, 0), n_heads - 1),
        "focus": focus,
        "suffix": choice.suffix,
        "caption": choice.caption,
        "source": choice.source,
        "params": choice.params,
        "id": choice.id,
        "grid": choice.grid,
    }
    cells, header["digits"], header["step"] = counts(data.values)
    header["deflate"] = True
    text = json.dumps(header).encode()
    pad = -(4 + len(text)) % 8
    return len(text).to_bytes(4, "little") + text + b"\0" * pad + zlib.compress(cells.astype("<u2").tobytes(), 1)


def decode(raw: bytes) -> tuple[dict, np.ndarray]:
    """:func:`encode`'s bytes back: the header and the cells as float weights ``[layers, heads, rows, cols]`` (NaN:
    blocked), rounded as the view shows them."""
    size = int.from_bytes(raw[:4], "little")
    header = json.loads(raw[4 : 4 + size])
    shape = (len(header["layers"]), header["n_heads"], header["rows"], header["cols"])
    cells = np.frombuffer(zlib.decompress(raw[4 + size + (-(4 + size) % 8) :]), dtype="<u2").reshape(shape)
    tiny = 10.0 ** -((cells.astype(np.float64) - TINY) / TINY_PER_DECADE)
    return header, np.where(cells == BLOCKED, np.nan, np.where(cells >= TINY, tiny, cells * header["step"]))


def counts(values: np.ndarray) -> tuple[np.ndarray, int, float]:
    """``values`` as uint16 counts of ``10**-digits`` below :data:`TINY`; a positive value under half a step as
    ``TINY + 64·(−log10 v)`` (a long input's weights, ~1/n, keep their colour on the log scale: 3.7 % steps);
    NaN or negative: :data:`BLOCKED`. Returns the cells, digits and step."""
    finite = np.isfinite(values) & (values >= 0)
    top = float(values[finite].max()) if finite.any() else 0.0
    digits = DIGITS
    while digits > -4 and top * 10**digits > TINY - 1:
        digits -= 1
    step = 10.0**-digits
    cells = np.full(values.shape, BLOCKED, dtype=np.uint16)
    cells[finite] = np.rint(values[finite].astype(np.float64) / step).astype(np.uint16)
    tiny = finite & (cells == 0) & (values > 0)
    decades = -np.log10(values[tiny].astype(np.float64))
    cells[tiny] = TINY + np.minimum(np.rint(decades * TINY_PER_DECADE), BLOCKED - TINY - 1).astype(np.uint16)
    return cells, max(digits, 0), step


def from_trace(trace, layers: tuple[int, ...] | None = None, budget: int = NOTEBOOK_BYTES) -> LayerData:
    """Every head of ``layers`` (default all) of an attention trace: exact where the cells fit ``budget`` bytes
    (blocked cells NaN), else each head pooled to block maxima (``trace.overview``), never the n×n matrix."""
    layers = tuple(range(trace.n_layers)) if layers is None else tuple(layers)
    heads, n_q, n_k = trace.n_heads, trace.n_queries, trace.n_keys
    square = n_q == n_k
    if len(layers) * heads * n_q * n_k * 2 <= budget:
        values = np.stack([np.where(np.isinf(trace.mask(layer)), np.nan, trace.pattern(layer)) for layer in layers])
        return LayerData(values, layers, tuple(trace.tokens.labels()), tuple(trace.key_tokens.labels()), square)
    side = max(8, int((budget / (2 * len(layers) * heads)) ** 0.5))  # cells a side that fit the budget
    values = np.stack([[trace.overview(layer, h, size=side) for h in range(heads)] for layer in layers])
    q_labels, q_first, q_last = pooled_labels(trace.tokens.labels(), values.shape[-2])
    k_labels, k_first, k_last = pooled_labels(trace.key_tokens.labels(), values.shape[-1])
    spans = (q_first, q_last, k_first, k_last)
    return LayerData(values.astype(np.float32), layers, q_labels, k_labels, square, spans=spans, n_tokens=n_q)


def pooled_labels(labels: list[str], cells: int) -> tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]:
    """Each block's label (its one token, or its first–last positions), first and last position."""
    edges = overview_edges(len(labels), cells)
    first, last = tuple(int(a) for a in edges[:-1]), tuple(int(b) - 1 for b in edges[1:])
    return tuple(labels[a] if a == b else f"{a}–{b}" for a, b in zip(first, last)), first, last


class NotebookView:
    """A view a notebook draws (its ``_repr_html_``): the module and the bytes inline, nothing fetched."""

    def __init__(self, data: LayerData, choice: Choice) -> None:
        self.data, self.choice = data, choice

    def _repr_html_(self) -> str:
        key = f"ap-lv-{uuid.uuid4().hex[:12]}"
        module = base64.b64encode(JS.encode()).decode()
        cells = base64.b64encode(encode(self.data, self.choice)).decode()
        return (
            f'<style>{CSS}</style><div id="{key}"></div><script type="module">\n'
            f"const bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));\n"
            f'const url = URL.createObjectURL(new Blob([bytes("{module}")], {{type: "text/javascript"}}));\n'
            "const view = await import(url);\n"
            f'const data = bytes("{cells}");\n'
            f'view.default({{data, key: "{key}", parentElement: document.getElementById("{key}")}});\n'
            "</script>"
        )


def show(trace, layer: int = 0, head: int = 0, focus: int | None = None) -> NotebookView:
    """The in-browser view of an attention trace in a notebook: every layer and head, switched in the browser."""
    return NotebookView(from_trace(trace), Choice(layer=layer, head=head, focus=focus))
