"""What one attention map shows (pure numpy): exact cells for short inputs, block maxima of the exact pattern for
long ones (pooled by the engine from Q and K, never the n×n matrix); hidden sinks are not renormalised."""

from __future__ import annotations

import io
from dataclasses import dataclass, replace

import numpy as np

from engine import AttentionTrace
from engine.analysis.metrics import sink_positions
from engine.traces.overview import overview_edges

Range = tuple[int, int]  # positions from … to (the end excluded)
OVERVIEW_SIZE = 256  # cells per side sent to the browser: 256² float32 ≈ 350 kB of base64
#: what a cell holds under each weighting but plain weights
WEIGHTED = {"contribution": "‖α·f(x)‖", "value": "α·‖v‖"}


@dataclass(frozen=True)
class MapView:
    """What one head's map shows: the head, the region (``(start, stop)``, None: all), the hidden sinks, the colour
    scale (``"row"`` changes the numbers), the weighting (``"attention"``, ``"contribution"`` or ``"value"``) and the
    most cells per side. Hashable: part of cache keys."""

    layer: int
    head: int
    q_range: Range | None = None
    k_range: Range | None = None
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
    """A map ready to draw: ``values`` ``[rows, cols]`` (NaN blocked), a label per row and column, ``q_edges``
    (query positions bounding each row), ``k_pos`` (key positions in view) and ``k_edges`` (indices into ``k_pos``
    bounding each column)."""

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
    v = v if blocked is None else np.where(blocked, np.float32(np.nan), v)
    edges = dict(q_edges=np.arange(n_q + 1), k_pos=np.arange(n_k), k_edges=np.arange(n_k + 1))
    return MapData(v, tuple(q_tokens), tuple(k_tokens), **edges, value_name=value_name)


def hidden_keys(att: AttentionTrace) -> np.ndarray:
    """Key positions "hide sinks" removes: marker tokens and the first token (never [UNK])."""
    return np.asarray(sink_positions(att.key_tokens.special), dtype=np.int64)


def _block_labels(labels: list[str], positions: np.ndarray, edges: np.ndarray) -> tuple[str, ...]:
    """Each block's label: its token's when it holds one, else "first–last" positions."""
    spans = [(int(positions[a]), int(positions[b - 1])) for a, b in zip(edges[:-1], edges[1:])]
    return tuple(labels[first] if first == last else f"{first}–{last}" for first, last in spans)


def _blocked_cells(
    att: AttentionTrace, layer: int, q_edges: np.ndarray, k_pos: np.ndarray, k_edges: np.ndarray
) -> np.ndarray:
    """True where every (query, key) pair of a cell is blocked by the causal mask, the sliding window or padding."""
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
    """One head of ``att`` as at most ``view.size`` cells a side: exact where the region fits, else block maxima."""
    (q0, q1), (k0, k1) = region(att, view.q_range, view.k_range)
    k_pos = np.arange(k0, k1)
    if view.hide_sinks:
        k_pos = np.setdiff1d(k_pos, hidden_keys(att))
        if k_pos.size == 0:
            k_pos = np.arange(k0, k1)  # nothing but sinks in view: show them rather than nothing
    size, row_scale = view.size, view.scale == "row"
    region_of = dict(q_range=(q0, q1), k_range=(k0, k1), keys=k_pos, row_scale=row_scale, weighting=view.weighting)
    values = att.overview(view.layer, view.head, size=size, reduce="max", **region_of)
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
    """Every head of ``layer`` pooled to at most ``cells`` per side (block maxima; exact when it fits): ``[head, s, t]``."""
    if att.n_queries <= cells and att.n_keys <= cells:
        return np.asarray(att.pattern(layer), dtype=np.float32)
    return np.stack([att.overview(layer, h, size=cells, reduce="max") for h in range(att.n_heads)])


CSV_MAX_SIDE = 1024  # a CSV of exact weights covers at most 1,024 × 1,024 tokens (~9 MB)


def region(att: AttentionTrace, q_range: Range | None, k_range: Range | None) -> tuple[Range, Range]:
    """The query and key ranges of ``att`` that ``q_range`` and ``k_range`` name (None: all)."""
    return tuple(q_range or (0, att.n_queries)), tuple(k_range or (0, att.n_keys))


def csv_region(att: AttentionTrace, q_range: Range | None, k_range: Range | None) -> tuple[Range, Range] | None:
    """The region a CSV download covers, or None when it is too large."""
    (q0, q1), (k0, k1) = region(att, q_range, k_range)
    return ((q0, q1), (k0, k1)) if max(q1 - q0, k1 - k0) <= CSV_MAX_SIDE else None


def head_csv(
    att: AttentionTrace,
    layer: int,
    head: int,
    q_range: Range | None = None,
    k_range: Range | None = None,
    block_rows: int = 256,
) -> bytes:
    """One head's exact weights in a region as CSV, built a block of rows at a time (never the n×n matrix)."""

    def cell(text: str) -> str:
        return '"' + text.replace('"', '""') + '"'

    (q0, q1), (k0, k1) = region(att, q_range, k_range)
    q_labels, k_labels = att.tokens.labels(), att.key_tokens.labels()
    buf = io.StringIO()
    buf.write("query \\ key," + ",".join(cell(t) for t in k_labels[k0:k1]) + "\n")
    for start in range(q0, q1, block_rows):
        rows = att.pattern_rows(layer, head, start, min(q1, start + block_rows))[:, k0:k1]
        for i, row in enumerate(rows):
            buf.write(cell(q_labels[start + i]) + "," + ",".join(f"{w:.6f}" for w in row) + "\n")
    return buf.getvalue().encode("utf-8")
