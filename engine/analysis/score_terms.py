"""One attention score taken apart: ``score_terms(trace, layer, head, query, key, by=...)``.

Three splits, each an ordered ``{readable name: float}``:

- ``"sources"``: where the query and the key come from; the raw score ``q·k`` as a sum over (query source, key
  source) pairs of the residual stream, LayerNorm's scale frozen (:mod:`engine.analysis.score_sources`; needs the
  model). The terms add up to ``trace.scores(layer, head, stage="raw")[query, key]``.
- ``"rope_bands"``: RoPE models; ``q·k`` of the rotated query and key as a sum over the ``d_head/2`` rotation
  bands, band ``i`` the pair of coordinates turned by the angle ``θ_i = base^(−2i/d_head)`` per token (band 0
  turns fastest). Our models rotate interleaved pairs ``(2i, 2i+1)``; Hugging Face rotary decoders rotate halves
  ``(i, i + d/2)`` over their first ``rotary`` coordinates (the rest: one ``"not rotated"`` term). The terms add
  up to the raw score.
- ``"alibi"``: ALiBi models; the score the softmax reads at an allowed pair, ``q·k·scale − m_h·|i − j|``, as its
  content term and its distance penalty. ALiBi adds its penalty after scaling, so these two terms add up to
  ``trace.scores(layer, head, stage="masked")`` (before the mask), not to the raw score.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from engine.analysis.score_sources import source_terms
from engine.records import EngineError
from engine.traces.attention import AttentionTrace

Split = Literal["sources", "rope_bands", "alibi"]
SPLITS: tuple[str, ...] = get_args(Split)
CONTENT = "content q·k·scale"
DISTANCE = "distance −m·|i−j|"


def _index(value: int, size: int, what: str) -> int:
    if not -size <= int(value) < size:
        raise IndexError(f"{what} {value} out of range: there are {size} ({what}s 0–{size - 1})")
    return int(value) % size


def rope_pairs(model) -> tuple[str, int | None]:
    """How ``model`` pairs the coordinates it rotates: ``("interleaved", None)`` for ours (and when no model is
    given), ``("halves", rotary)`` for a Hugging Face rotary model rotating its first ``rotary`` coordinates."""
    config = getattr(getattr(model, "module", None), "config", None)
    if config is None:
        return "interleaved", None
    d_head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    rope = getattr(config, "rope_parameters", None) or {}
    factor = rope.get("partial_rotary_factor", getattr(config, "partial_rotary_factor", None))
    factor = getattr(config, "rotary_pct", None) if factor is None else factor
    return "halves", int(d_head * (1.0 if factor is None else factor))


def rope_band_rows(trace: AttentionTrace, layer: int, head: int, query: int, model=None) -> dict[str, np.ndarray]:
    """Every band's term of query ``query``'s raw scores against every key: ``{band name: [k_pos]}``.

    ``model``: the loaded model, when it is not one of ours (it says how the coordinates are paired).

    Raises:
        EngineError: the model does not use rotary positions.
    """
    if trace.pos_encoding_kind != "rope":
        raise EngineError(
            f"The rotation-band split needs a RoPE model; this one uses {trace.pos_encoding_kind} positions."
        )
    head = _index(head, trace.n_heads, "head")
    q = trace.q(layer)[head, _index(query, trace.n_queries, "query")].astype(np.float64)  # [d_head]
    k = trace.k(layer)[head].astype(np.float64)  # [k_pos, d_head]
    products = k * q  # [k_pos, d_head]
    kind, rotary = rope_pairs(model)
    d = trace.d_head
    if kind == "interleaved":
        bands = products[:, 0::2] + products[:, 1::2]  # [k_pos, d/2]
        rest = None
    else:
        half = rotary // 2
        bands = products[:, :half] + products[:, half:rotary]
        rest = products[:, rotary:].sum(-1) if rotary < d else None
    out = {f"band {i}": bands[:, i] for i in range(bands.shape[1])}
    if rest is not None:
        out["not rotated"] = rest
    return out


def rope_band_distances(
    trace: AttentionTrace, layer: int, head: int, model=None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each band's mean term over the query–key pairs at each distance ``i − j`` (query position minus key
    position; a causal trace's pairs with ``j ≤ i`` only): ``(distances, {band name: [distance]})``, the names
    and ``model`` as in :func:`rope_band_rows`. A band whose mean swings with the distance carries position; one
    that stays flat carries content.

    Raises:
        EngineError: the model does not use rotary positions.
    """
    n_k, offset = trace.n_keys, trace.n_keys - trace.n_queries  # queries aligned with the last keys
    low = 0 if trace.causal else 1 - n_k
    distances = np.arange(low, n_k)
    counts, sums = np.zeros(len(distances)), {}
    for query in range(trace.n_queries):
        at = query + offset - np.arange(n_k)  # [k_pos]
        keep = at >= low
        slot = at[keep] - low
        counts += np.bincount(slot, minlength=len(distances))
        for name, row in rope_band_rows(trace, layer, head, query, model).items():
            sums[name] = sums.get(name, 0.0) + np.bincount(slot, weights=row[keep], minlength=len(distances))
    seen = counts > 0
    return distances[seen], {name: total[seen] / counts[seen] for name, total in sums.items()}


def alibi_terms(trace: AttentionTrace, layer: int, head: int, query: int, key: int) -> dict[str, float]:
    """The content term ``q·k·scale`` and the ALiBi penalty ``−m_h·|i − j|`` of one score (module docstring).

    Raises:
        EngineError: the model has no ALiBi bias.
    """
    if trace.alibi_slopes is None:
        raise EngineError(f"The ALiBi split needs an ALiBi model; this one uses {trace.pos_encoding_kind} positions.")
    layer, h = _index(layer, trace.n_layers, "layer"), _index(head, trace.n_heads, "head")
    query, key = _index(query, trace.n_queries, "query"), _index(key, trace.n_keys, "key")
    raw = float(np.dot(trace.q(layer)[h, query].astype(np.float64), trace.k(layer)[h, key].astype(np.float64)))
    distance = abs(query + trace.n_keys - trace.n_queries - key)  # queries aligned with the last keys
    return {CONTENT: raw * trace.scales[layer], DISTANCE: -float(trace.alibi_slopes[h]) * distance}


def score_terms(
    trace: AttentionTrace, layer: int, head: int, query: int, key: int, by: Split = "sources", *, model=None
) -> dict[str, float]:
    """One score of ``trace`` split into named parts that add up to it (module docstring).

    Args:
        trace: a self-attention trace (``engine.trace``).
        layer, head, query, key: the cell (negative indices count from the end).
        by: ``"sources"`` (needs ``model``), ``"rope_bands"`` or ``"alibi"``.
        model: the loaded model the trace was made with (``engine.load``); ``"rope_bands"`` reads it to pair a
            Hugging Face model's coordinates.

    Returns:
        ``{name: term}`` in a fixed order: pairs query-source-major (``"head 0.3 · token"``), bands from the
        fastest, or content then distance.

    Raises:
        EngineError: a split that does not apply to the model (``rope_bands`` without RoPE, ``alibi`` without
            ALiBi, ``sources`` without the model or for a family it is not done for).
        IndexError: a layer, head, query or key out of range.
    """
    if by not in SPLITS:
        raise ValueError(f"by must be one of {SPLITS}, got {by!r}")
    layer = _index(layer, trace.n_layers, "layer")
    head = _index(head, trace.n_heads, "head")
    query = _index(query, trace.n_queries, "query")
    key = _index(key, trace.n_keys, "key")
    if by == "rope_bands":
        return {name: float(row[key]) for name, row in rope_band_rows(trace, layer, head, query, model).items()}
    if by == "alibi":
        return alibi_terms(trace, layer, head, query, key)
    if model is None:
        raise EngineError("Splitting a score into its sources needs the model: score_terms(..., model=model).")
    return source_terms(model, trace, layer, head, query, key)
