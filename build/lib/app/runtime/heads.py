"""What is computed from one request's heads, shared in ``caches.MAPS`` under its request key: the whole-model
views (from the cached trace, per attention block), head ablation and the next token (the model run again)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from app.runtime.caches import shared_map
from app.runtime.models import get_model, model_pass
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace, request_key, trace_loader
from app.ui.map_data import layer_tiles
from engine import AttentionTrace, EngineError
from engine.traces import Trace

if TYPE_CHECKING:
    import pandas as pd  # imported where the table is built: pandas is slow to import


def get_ablation(request: TraceRequest, heads: tuple[tuple[str, int, int | None], ...], keep_only: bool = False):
    """``engine.analysis.ablation.ablate`` on the cached model, shared; ``heads``: a sorted tuple of ``(block, layer,
    head)`` (``head=None``: the whole layer)."""
    from engine.analysis.ablation import ablate

    def run(model, r: TraceRequest):
        return ablate(model, r.text, heads, causal=r.causal, max_tokens=r.max_tokens, keep_only=keep_only)

    return model_run(request, ("ablation", tuple(heads), bool(keep_only)), run)


def get_next_token(request: TraceRequest):
    """The last position's scores over the vocabulary (``next_token_logits``, shared; EngineError: not a decoder).
    The page applies the temperature itself, so moving it is a cache hit."""
    from engine.analysis.next_token import next_token_logits

    def run(model, r: TraceRequest):
        return next_token_logits(model, r.text, causal=r.causal, max_tokens=r.max_tokens)

    return model_run(request, ("next_token",), run)


def model_run(request: TraceRequest, what: tuple, run: Callable):
    """``run(model, request)`` in a forward-pass slot, shared under ``what`` and the request (any block)."""
    request = request.with_block("self")

    def compute():
        with model_pass():
            return run(get_model(request.model_id), request)

    return shared_map((*what, request_key(request)), compute)


#: attention blocks of an encoder-decoder trace; "self" is the only block of encoder/decoder traces
HEAD_BLOCKS: dict[str, str] = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder self-attention",
    "cross": "Cross-attention",
}
SIMILARITY_MAX_TOKENS = 64  # JS divergence on at most 64 query rows × 64 key bins
SIMILARITY_MAX_HEADS = 192  # e.g. 16 layers × 12 heads; larger models: the first layers
MODEL_VIEW_CELLS = 64  # thumbnails pooled to at most this many cells per side (32 above 36 heads)
#: the metric columns of :func:`head_metrics_table`, in order
METRIC_NAMES = ("entropy", "entropy_bits", "broad", "mean_distance", "sink", "previous", "self", "next", "alignment")


def block_loader(request: TraceRequest) -> Callable[[], AttentionTrace]:
    """``request``'s attention block, later (``trace_loader``): what a download holds instead of the trace."""
    load = trace_loader(request)
    return lambda: attention_block(load(), request.block)


def attention_block(trace: Trace, block: str = "self") -> AttentionTrace:
    """The AttentionTrace of ``block`` (``Trace.attention_blocks``): a trace with one block returns it whatever
    ``block`` says; cross-attention's rows are named by the token each decoder step wrote ("rouge ← red")."""
    blocks = trace.attention_blocks()
    if not blocks:
        raise EngineError("This model has no transformer attention heads to show here.")
    if len(blocks) == 1:
        return next(iter(blocks.values()))
    if block not in blocks:
        raise EngineError(f"Pick one of {', '.join(HEAD_BLOCKS.get(name, name) for name in blocks)}.")
    if block == "cross":  # rows named by the word each step wrote, not the one it read in
        return getattr(trace, "cross_by_output", blocks[block])
    return blocks[block]


def heads_attention(request: TraceRequest) -> AttentionTrace:
    """The cached trace's attention block ``request.block`` (no extra forward pass)."""
    return attention_block(get_trace(request), request.block)


def block_is_square(block: str) -> bool:
    """Self-attention (queries and keys are one sequence); False for cross-attention."""
    return block != "cross"


def head_metrics_table(request: TraceRequest) -> "pd.DataFrame":
    """One row per head: layer, head, label, score and every metric of ``engine.analysis.metrics`` (shared)."""

    def build() -> "pd.DataFrame":
        import pandas as pd

        from engine.analysis import metrics as M

        att, square = heads_attention(request), block_is_square(request.block)
        sinks = M.sink_positions(att.key_tokens.special)
        # one layer at a time (bounded memory on long inputs), each with its own mask (sliding windows may differ)
        per_layer = [
            M.head_metrics(att.pattern(layer), sinks, blocked=np.isneginf(att.mask(layer)), square=square)
            for layer in range(att.n_layers)
        ]
        values = {name: np.stack([m[name] for m in per_layer]) for name in per_layer[0]}
        labels, scores = M.label_heads(values)
        layers, heads = np.meshgrid(np.arange(att.n_layers), np.arange(att.n_heads), indexing="ij")
        columns = {"layer": layers, "head": heads, "pattern": labels.astype(str), "score": scores}
        columns |= {name: values[name] for name in METRIC_NAMES}
        frame = pd.DataFrame({name: column.ravel() for name, column in columns.items()})
        return frame.drop(columns=list(M.CROSS_ONLY if square else M.SQUARE_ONLY))  # n/a for this block

    return shared_map(("metrics", request_key(request)), build)


def model_view_tiles(request: TraceRequest) -> tuple[np.ndarray, bool]:
    """Every head pooled by the engine to block maxima ``[layer, head, s, t]``, and whether it was pooled (shared)."""

    def build() -> tuple[np.ndarray, bool]:
        att = heads_attention(request)
        cells = MODEL_VIEW_CELLS if att.n_layers * att.n_heads <= 36 else MODEL_VIEW_CELLS // 2
        tiles = np.stack([layer_tiles(att, layer, cells) for layer in range(att.n_layers)])
        return tiles.astype(np.float32), tiles.shape[-2:] != (att.n_queries, att.n_keys)

    return shared_map(("model_view", request_key(request)), build)


def head_similarity(request: TraceRequest) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """``(divergence [N, N], clustering order, coarsened, layers used)`` over heads flattened layer-major (shared),
    bounded by ``SIMILARITY_MAX_HEADS`` (whole layers from the first) and ``SIMILARITY_MAX_TOKENS``."""

    def build() -> tuple[np.ndarray, np.ndarray, bool, int]:
        from engine.analysis.similarity import cluster_order, coarsen, head_divergence

        att = heads_attention(request)
        n_layers = min(att.n_layers, max(1, SIMILARITY_MAX_HEADS // att.n_heads))
        pieces = [
            coarsen(att.pattern(layer), SIMILARITY_MAX_TOKENS, SIMILARITY_MAX_TOKENS) for layer in range(n_layers)
        ]
        divergence = head_divergence(np.concatenate([piece for piece, _ in pieces]))  # [n_layers · n_heads, ≤64, ≤64]
        return divergence, cluster_order(divergence), pieces[0][1], n_layers

    return shared_map(("similarity", request_key(request)), build)


def rollout_maps(
    request: TraceRequest, head_fusion: str, discard_ratio: float, discard_rule: str = "all-off-diagonal"
) -> tuple[np.ndarray, np.ndarray]:
    """``(rollout [layer, n, n], fused [layer, n, n])`` of a self-attention block (shared): the rollout through
    layers 0..l, and layer l's heads fused the same way (``discard_rule``: ``rollout.DISCARD_RULES``)."""

    def build() -> tuple[np.ndarray, np.ndarray]:
        from engine.analysis.rollout import fuse_heads, rollout

        if not block_is_square(request.block):
            raise EngineError("Rollout needs self-attention: cross-attention has no path from layer to layer.")
        att = heads_attention(request)
        layers = [att.pattern(layer) for layer in range(att.n_layers)]
        maps = rollout(layers, head_fusion=head_fusion, discard_ratio=float(discard_ratio), discard_rule=discard_rule)
        return maps, np.stack([fuse_heads(p, head_fusion) for p in layers]).astype(np.float32)

    return shared_map(("rollout", request_key(request), head_fusion, float(discard_ratio), discard_rule), build)
