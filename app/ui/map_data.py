"""What one attention map shows: exact cells for short inputs, pooled blocks of the exact pattern for long ones.

``head_map`` turns a trace's head and a :class:`MapView` into a :class:`MapData` of at most ``size`` × ``size``
cells: the exact weights when the region fits, otherwise block maxima computed by the engine from Q and K
(``AttentionTrace.overview``: never the n×n matrix). Hidden columns (marker tokens and the first token, the usual
attention sinks; never [UNK]) are dropped before pooling, without renormalising: every weight shown is the
model's own. Pure numpy, no Streamlit: the cached wrapper is ``app.runtime.maps``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace

import numpy as np

from engine import AttentionTrace
from engine.analysis.metrics import sink_positions
from engine.traces.overview import overview_edges

OVERVIEW_SIZE = 256  # cells per side sent to the browser: 256² float32 ≈ 350 kB of base64
#: what a cell holds under each weighting but plain weights: "contribution" is Kobayashi et al.'s ‖α·f(x)‖
#: (the value carried through the head's block of the output projection), "value" the weight times the
#: value's length only
WEIGHTED = {"contribution": "‖α·f(x)‖", "value": "α·‖v‖"}


@dataclass(frozen=True)
class MapView:
    """What one head's map shows: the head, the region and how it is coloured (hashable: part of cache keys).

    Attributes:
        layer, head: which head.
        q_range, k_range: ``(start, stop)`` token positions in view (None: all).
        hide_sinks: drop the sink columns, :func:`hidden_keys` (weights are not renormalised).
        scale: the colour scale, ``"linear"``, ``"log"`` or ``"row"`` (each row divided by its largest shown value:
            the one scale that changes the numbers).
        weighting: ``"attention"`` (the weights α), ``"contribution"`` (α_ij·‖v_j W_O^h‖, the length of what key j
            adds to query i's output through this head, Kobayashi et al. 2020) or ``"value"`` (α_ij·‖v_j‖).
        size: the most cells per side.
    """

    layer: int
    head: int
    q_range: tuple[int, int] | None = None
    k_range: tuple[int, int] | None = None
    hide_sinks: bool = False
    scale: str = "linear"
    weighting: str = "attention"
    size: int = OVERVIEW_SIZE

    @property
    def numbers(self) -> MapView:
        """The view of the numbers alone (linear and log colour the same values): a map cache's key."""
        return replace(self, scale="linear") if self.scale == "log" else self


@dataclass(frozen=True, eq=False)
class MapData:
    """A map ready to draw.

    Attributes:
        values: ``[rows, cols]`` float32; NaN where attention is blocked (mask or padding).
        q_labels, k_labels: one display label per row / column ("3 cat", or "64–127" for a block).
        q_edges: ``[rows + 1]`` query positions bounding each row block.
        k_pos: the key positions in view (after hiding), ascending.
        k_edges: ``[cols + 1]`` indices into ``k_pos`` bounding each column block.
        pooled: True when some cell stands for more than one query or key.
        reduce: how a block is summarised ("max" or "mean"); "" for exact cells.
        value_name: what a value is ("weight", "share of row max", "‖α·f(x)‖", "α·‖v‖", "share of row max of
            ‖α·f(x)‖", …).
    """

    values: np.ndarray
    q_labels: tuple[str, ...]
    k_labels: tuple[str, ...]
    q_edges: np.ndarray
    k_pos: np.ndarray
    k_edges: np.ndarray
    pooled: bool = False
    reduce: str = ""
    value_name: str = "weight"

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)


def exact_map(
    values: np.ndarray,
    q_tokens: list[str],
    k_tokens: list[str],
    *,
    blocked: np.ndarray | None = None,
    value_name: str = "weight",
) -> MapData:
    """A small matrix drawn cell for cell (labels "position token")."""
    n_q, n_k = values.shape
    if (len(q_tokens), len(k_tokens)) != (n_q, n_k):
        raise ValueError(f"pattern is {n_q}×{n_k} but there are {len(q_tokens)} query and {len(k_tokens)} key tokens")
    v = np.asarray(values, dtype=np.float32)
    if blocked is not None:
        v = np.where(blocked, np.float32(np.nan), v)
    return MapData(
        values=v,
        q_labels=tuple(q_tokens),
        k_labels=tuple(k_tokens),
        q_edges=np.arange(n_q + 1),
        k_pos=np.arange(n_k),
        k_edges=np.arange(n_k + 1),
        value_name=value_name,
    )


def hidden_keys(att: AttentionTrace) -> np.ndarray:
    """Key positions a "hide sinks" switch removes: the head metrics' sinks (marker tokens and the first
    token; never an unknown-word [UNK], which stands for the user's text)."""
    return np.asarray(sink_positions(att.key_tokens.special), dtype=np.int64)


def _block_labels(labels: list[str], positions: np.ndarray, edges: np.ndarray) -> tuple[str, ...]:
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        first, last = int(positions[a]), int(positions[b - 1])
        out.append(labels[first] if b - a == 1 else f"{first}–{last}")
    return tuple(out)


def _blocked_cells(
    att: AttentionTrace, layer: int, q_edges: np.ndarray, k_pos: np.ndarray, k_edges: np.ndarray
) -> np.ndarray:
    """True where every (query, key) pair of a cell is blocked by the causal mask, the layer's sliding
    window, or padding (one rule for the whole cell: exact for unpooled maps)."""
    offset = att.n_keys - att.n_queries
    q_last = q_edges[1:] - 1  # the latest query of each row block sees the most keys
    k_first = k_pos[k_edges[:-1]]
    blocked = np.zeros((len(q_last), len(k_first)), dtype=bool)
    if att.causal:
        blocked |= k_first[None, :] > (q_last[:, None] + offset)
    window = att.window_of(layer)
    if window is not None:  # causal: key j seen when i + offset − j < w; without: when |i + offset − j| <= w
        nearest = q_edges[:-1][:, None] + offset - k_pos[k_edges[1:] - 1][None, :]  # smallest i + offset − j
        blocked |= nearest >= window if att.causal else nearest > window
        if not att.causal:
            blocked |= (q_last[:, None] + offset - k_first[None, :]) < -window
    if att.key_padding is not None:
        pad = att.key_padding[k_pos].astype(np.int64)
        blocked |= (np.add.reduceat(pad, k_edges[:-1]) == np.diff(k_edges))[None, :]
    return blocked


def head_map(att: AttentionTrace, view: MapView) -> MapData:
    """One head of ``att`` as at most ``view.size`` × ``view.size`` cells: exact where the region fits, else block
    maxima, so that a sharp one-token pattern survives pooling."""
    q0, q1 = view.q_range or (0, att.n_queries)
    k0, k1 = view.k_range or (0, att.n_keys)
    k_pos = np.arange(k0, k1)
    if view.hide_sinks:
        k_pos = np.setdiff1d(k_pos, hidden_keys(att))
        if k_pos.size == 0:
            k_pos = np.arange(k0, k1)  # nothing but sinks in view: show them rather than nothing
    size, row_scale = view.size, view.scale == "row"
    values = att.overview(
        view.layer,
        view.head,
        size=size,
        reduce="max",
        q_range=(q0, q1),
        k_range=(k0, k1),
        keys=k_pos,
        row_scale=row_scale,
        weighting=view.weighting,
    )
    q_edges = q0 + overview_edges(q1 - q0, size)
    k_edges = overview_edges(k_pos.size, size)
    pooled = values.shape != (q1 - q0, k_pos.size)
    blocked = _blocked_cells(att, view.layer, q_edges, k_pos, k_edges)
    return MapData(
        values=np.where(blocked, np.float32(np.nan), values).astype(np.float32),
        q_labels=_block_labels(att.tokens.labels(), np.arange(att.n_queries), q_edges),
        k_labels=_block_labels(att.key_tokens.labels(), k_pos, k_edges),
        q_edges=q_edges,
        k_pos=k_pos,
        k_edges=k_edges,
        pooled=pooled,
        reduce="max" if pooled else "",
        value_name=_value_name(row_scale, view.weighting),
    )


def _value_name(row_scale: bool, weighting: str) -> str:
    what = WEIGHTED.get(weighting, "weight")
    if not row_scale:
        return what
    return "share of row max" + (f" of {what}" if weighting in WEIGHTED else "")


def layer_tiles(att: AttentionTrace, layer: int, cells: int) -> np.ndarray:
    """Every head of ``layer`` pooled to at most ``cells`` per side (block maxima): ``[head, s, t]``.

    An input that fits in ``cells`` is the layer's exact pattern, computed for all heads at once (blocks
    of one cell: the same numbers, tested, ~10× faster than one overview per head)."""
    if att.n_queries <= cells and att.n_keys <= cells:
        return np.asarray(att.pattern(layer), dtype=np.float32)
    return np.stack([att.overview(layer, h, size=cells, reduce="max") for h in range(att.n_heads)])


CSV_MAX_SIDE = 1024  # a CSV of exact weights covers at most 1,024 × 1,024 tokens (~9 MB)


def csv_region(
    att: AttentionTrace, q_range: tuple[int, int] | None, k_range: tuple[int, int] | None
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The region a CSV download covers (the zoom region), or None when it is too large to download."""
    q0, q1 = q_range or (0, att.n_queries)
    k0, k1 = k_range or (0, att.n_keys)
    return ((q0, q1), (k0, k1)) if max(q1 - q0, k1 - k0) <= CSV_MAX_SIDE else None


def head_csv(
    att: AttentionTrace,
    layer: int,
    head: int,
    q_range: tuple[int, int] | None = None,
    k_range: tuple[int, int] | None = None,
    block_rows: int = 256,
) -> bytes:
    """One head's exact weights as CSV (a row per query token, a column per key token), for a region.

    Built a block of rows at a time (``AttentionTrace.pattern_rows``), never the whole n×n matrix; pages
    pass this to ``st.download_button`` as a callable, so it runs only when the button is clicked.
    """

    def cell(text: str) -> str:
        return '"' + text.replace('"', '""') + '"'

    q0, q1 = q_range or (0, att.n_queries)
    k0, k1 = k_range or (0, att.n_keys)
    q_labels, k_labels = att.tokens.labels(), att.key_tokens.labels()
    buf = io.StringIO()
    buf.write("query \\ key," + ",".join(cell(t) for t in k_labels[k0:k1]) + "\n")
    for start in range(q0, q1, block_rows):
        rows = att.pattern_rows(layer, head, start, min(q1, start + block_rows))[:, k0:k1]
        for i, row in enumerate(rows):
            buf.write(cell(q_labels[start + i]) + "," + ",".join(f"{w:.6f}" for w in row) + "\n")
    return buf.getvalue().encode("utf-8")
