"""What an offline lesson pack shows for each link: the first chart of the view it opens, or a :class:`NoChart`.

:func:`pack_view` reads a link's parameters as the page would (a value its reader refuses falls back to the default)
and traces through the shared caches: a text page's head as Explore's map of at most :data:`PACK_CELLS`² cells
(pooled into block maxima), the Bahdanau page's alignment map, the other pages in ``offline_pages.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.runtime.heads import attention_block, model_view_tiles
from app.runtime.maps import head_view
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.state import K
from app.ui.charts import ready, source_line, with_source
from app.ui.head_views import model_view_spec
from app.ui.heatmap import map_spec
from app.ui.map_data import MapData, MapView
from app.url_params import TEXT_PAGES
from app.url_state import BY_NAME
from app.views.bahdanau.data import BAHDANAU_MODELS, bahdanau_agreement, bahdanau_trace
from app.views.bahdanau.figures import alignment_map
from app.views.bahdanau.keys import Bahdanau
from app.views.heads.keys import Heads
from app.views.lessons.offline_pages import PAGE_DATA, Drawn, Figures, Unchartable
from app.views.step_by_step.keys import Step
from engine import EngineError
from engine.text import error_message

PACK_CELLS = 256  # a map's cells per side at most in a pack (the app's own overview size)
PACK_MAX_TOKENS = 2_048  # a link's token limit in a pack at most: one click traces every link of a lesson (40 × 4)
BAHDANAU_CHARS = 200  # the Bahdanau page translates at most this many characters
BLOCK_PARAM = {"explore": "explore_block", "heads": Heads.block, "step_by_step": Step.block}
VARIANT_LABELS = {"additive": "Additive (Bahdanau)", "dot": "Dot / general (Luong)"}
ROWS_SAY = (
    "Each row is a token asking where to look (the query), each column a token it can look at (the key); darker "
    "= more weight. Grey cells are blocked by the mask."
)
PAGE_SAYS = {  # what the pack draws of a text page other than Explore (which draws this head first)
    "step_by_step": "The head this link opens on Step by step, as Explore draws it (the page itself takes one query "
    "through every step of the calculation). ",
    "bertviz_views": "The head this link names, as Explore draws it (the page itself draws bertviz's interactive "
    "views). ",
    "heads": "The head chosen on the Heads page, drawn large under its model view. ",
}
#: pages that are live by nature: why the pack has no chart for them, and what to do
LIVE_PAGES = {
    "train": "Train live trains a model while you watch (a live training run): open the link in the app to train it.",
    "classroom": "The Class page is a live room (students joining, polls, the lesson run): open the link in the app "
    "during the class.",
    "lessons": "This link opens a lesson on the Lessons page: open the link in the app, or save that lesson's own "
    "offline pack there.",
}


@dataclass(frozen=True, eq=False)
class HeadMap:
    """One head of a text model as a text page draws it first (``cut``: the text was cut at :data:`PACK_MAX_TOKENS`
    tokens; ``tiles``: the Heads page's model view, every head ``[layer, head, s, t]``, else None)."""

    data: MapData
    request: TraceRequest
    layer: int
    head: int
    title: str
    n_tokens: tuple[int, int]
    page: str = "explore"
    cut: bool = False
    tiles: np.ndarray | None = None

    def figures(self) -> Figures:
        source = source_line(self.request.model_id, self.request.text)
        out: Figures = []
        if self.tiles is not None:  # the Heads page's first chart: every head at once
            spec = model_view_spec(self.tiles, selected=(self.layer, self.head))
            spec["layout"]["title"] = {"text": "Every layer × head", "x": 0.0}
            says = (
                "All layers (rows) × heads (columns); each tile is one head's pattern coloured from 0 to its own "
                "maximum, so compare shapes. Red frame: the chosen head, drawn large below."
            )
            out.append((with_source(ready(spec), source), says))
        rows, cols = self.data.values.shape
        pooled = (
            f" Overview: {self.n_tokens[0]} × {self.n_tokens[1]} tokens drawn as {rows} × {cols} cells, each the "
            f"largest weight in its block (a pack holds at most {PACK_CELLS} × {PACK_CELLS} cells a map)."
            if self.data.pooled
            else ""
        )
        cut = (
            f" The pack reads at most the first {PACK_MAX_TOKENS:,} tokens of a text (the link asks for more; the app "
            "shows them)."
            if self.cut
            else ""
        )
        fig = with_source(ready(map_spec(self.data, title=self.title)), source)
        return [*out, (fig, f"{PAGE_SAYS.get(self.page, '')}{ROWS_SAY}{pooled}{cut}")]


@dataclass(frozen=True)
class NoChart:
    """Why a link's view has no chart in the pack (shown as a note in its place)."""

    reason: str

    def figures(self) -> Figures:
        return []


def read_params(page: str, params: dict[str, str]) -> dict[str, object]:
    """The link's values for ``page``: each of its parameters by its own reader, else its default (a callable
    default, the causal mask's, is None: the model's own)."""
    out: dict[str, object] = {}
    for name, param in BY_NAME.items():
        if param.pages is not None and page not in param.pages:
            continue
        default = None if callable(param.default) else param.default
        raw = params.get(name)
        try:
            out[name] = default if raw is None else param.read(raw)
        except ValueError:  # a value its reader refuses is ignored, as in a browser (app.url_state.restore)
            out[name] = default
    return out


def pack_view(page: str, params: dict[str, str], size: int = PACK_CELLS):
    """The first chart ``page`` (a page stem) draws for ``params``, or :class:`NoChart` with the reason."""
    page = page.removesuffix(".py")
    try:
        if page in TEXT_PAGES:
            return _head_map(page, read_params(page, params), size)
        if page == "bahdanau":
            return _alignment(read_params(page, params))
        if page in PAGE_DATA:
            return PAGE_DATA[page](read_params(page, params))
    except Unchartable as why:
        return NoChart(f"No chart in the offline pack: {why}")
    except Exception as err:  # noqa: BLE001 — every failure becomes the note's reason
        return NoChart(f"This view could not be drawn for the pack: {error_message(err)}")
    return NoChart(f"No chart in the offline pack: {LIVE_PAGES.get(page, 'open the link in the app.')}")


def _head_map(page: str, values: dict[str, object], size: int) -> HeadMap:
    model_id = str(values.get(K.hub_id) or "").strip() or str(values[K.model])
    text = str(values[K.text])
    if not text.strip():
        raise EngineError("The link has no text to read.")
    request = TraceRequest(model_id, text, values.get(K.causal), min(int(values[K.max_tokens]), PACK_MAX_TOKENS))
    trace = get_trace(request)
    blocks = list(trace.attention_blocks())
    wanted = values.get(BLOCK_PARAM.get(page, ""), "")
    block = wanted if wanted in blocks else (blocks[0] if blocks else "self")
    request = request.with_block(block)
    att = attention_block(trace, block)
    layer = min(max(int(values[K.layer]), 0), att.n_layers - 1)
    head = min(max(int(values[K.head]), 0), att.n_heads - 1)
    window = att.window_of(layer)
    title = (
        f"Layer {layer}, head {head}"
        + (f" · {block}" if len(blocks) > 1 else "")
        + (" · causal mask on" if att.causal else "")
        + (f" · sliding window {window}" if window else "")
    )
    tiles = model_view_tiles(request)[0] if page == "heads" else None
    cut = int(values[K.max_tokens]) > PACK_MAX_TOKENS and att.n_keys >= PACK_MAX_TOKENS
    data = head_view(request, MapView(layer, head, size=size))
    return HeadMap(data, request, layer, head, title, (att.n_queries, att.n_keys), page, cut, tiles)


def _alignment(values: dict[str, object]) -> Drawn:
    text = str(values[Bahdanau.text])[:BAHDANAU_CHARS]
    if not text.strip():
        raise EngineError("The link has no sentence to translate.")
    variant = str(values[Bahdanau.variant])
    model_id = BAHDANAU_MODELS.get(variant, BAHDANAU_MODELS["additive"])
    trace = bahdanau_trace(model_id, text)
    agreement, _ = bahdanau_agreement(model_id, text)
    gold = [(r.gold_index, r.target_index) for r in agreement.rows] if agreement else None
    title = f"Alignment map α(i, j), {VARIANT_LABELS.get(variant, variant)}"
    fig = alignment_map(
        np.asarray(trace.alignment),
        list(trace.target.strings),
        list(trace.source.strings),
        gold=gold or None,
        title=title,
        meta="offline_alignment",
    )
    says = (
        "Each row is a French word being written, each column an English word; a white cell: the decoder looked "
        "almost only at that word. Orange squares: the grammar's gold word links."
    )
    return Drawn([(with_source(ready(fig), source_line(model_id, text)), says)])
