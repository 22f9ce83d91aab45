"""The Heads page's caches: head ablation (the ablation panel) and the whole-model views.

Ablation re-runs the cached model with heads switched off; the whole-model views (metrics table,
thumbnails, head similarity, rollout) are computed from one cached trace, per attention block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from app.services.core import _jobs, get_model, get_trace
from app.services.request import TraceRequest
from engine import AttentionTrace, EngineError
from engine.types import Trace

if TYPE_CHECKING:
    import pandas as pd  # imported where the table is built: pandas is slow to import

# ---------------------------------------------------------------- Heads: ablation panel


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)
def get_head_layout(model_id: str) -> dict[str, tuple[int, int]]:
    """``{block: (n_layers, n_heads)}`` of a model that head ablation supports.

    Raises:
        EngineError: the model family has no head ablation (RNN attention, ViT).
    """
    from engine.analysis.ablation import head_layout

    return head_layout(get_model(model_id))


@st.cache_data(show_spinner=False, max_entries=128, ttl=3600)
def get_ablation(
    model_id: str,
    text: str,
    heads: tuple[tuple[str, int, int | None], ...],
    causal: bool | None,
    max_tokens: int,
    keep_only: bool = False,
):
    """``engine.analysis.ablation.ablate`` on the cached model (an ``AblationResult``, plain data).

    Args:
        heads: a sorted tuple of ``(block, layer, head)`` (``head=None``: the whole layer), hashable
            so that the same selection hits the cache.
    """
    from engine.analysis.ablation import ablate

    model = get_model(model_id)
    with _jobs:
        return ablate(model, text, heads, causal=causal, max_tokens=max_tokens, keep_only=keep_only)


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def get_next_token(model_id: str, text: str, causal: bool | None, max_tokens: int):
    """``engine.analysis.next_token.next_token_logits`` on the cached model (plain data).

    The last position's float32 scores over the whole vocabulary, one forward pass per input; the page
    applies the temperature with ``next_token.probabilities``, so moving it is a cache hit.

    Raises:
        EngineError: not a decoder.
    """
    from engine.analysis.next_token import next_token_logits

    model = get_model(model_id)
    with _jobs:
        return next_token_logits(model, text, causal=causal, max_tokens=max_tokens)


# ---------------------------------------------------------------- Heads
# Whole-model views for the Heads page: every layer × head from one cached trace. Arguments are
# plain values (model_id, text, causal, max_tokens, block) so results are cached per view.

#: attention blocks of an encoder-decoder trace; "self" is the only block of encoder/decoder traces
HEAD_BLOCKS: dict[str, str] = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder self-attention",
    "cross": "Cross-attention",
}
SIMILARITY_MAX_TOKENS = 64  # JS divergence on at most 64 query rows × 64 key bins
SIMILARITY_MAX_HEADS = 192  # e.g. 16 layers × 12 heads; larger models: the first layers
MODEL_VIEW_CELLS = 64  # thumbnails pooled to at most this many cells per side (32 above 36 heads)


def attention_block(trace: Trace, block: str = "self") -> AttentionTrace:
    """The AttentionTrace of ``block`` (``"self"`` for encoder/decoder traces; encoder|decoder|cross for seq2seq).

    Asks the trace (``Trace.attention_blocks``) rather than testing its type: a trace with one block
    of heads returns it whatever ``block`` says (the Heads page keeps its block choice across models).
    Cross-attention comes with its rows named by the token each decoder step wrote
    (``Seq2SeqTrace.cross_by_output``), so a map reads "rouge ← red", not "voiture ← red".
    """
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


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def head_metrics_table(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str) -> "pd.DataFrame":
    """One row per head: layer, head, label, score and every metric of ``engine.analysis.metrics``."""
    import pandas as pd

    from engine.analysis import metrics as M

    att = heads_attention(TraceRequest(model_id, text, causal, max_tokens, block=block))
    square = block_is_square(block)
    sinks = M.sink_positions(att.key_tokens.special)
    # the mask per layer: a sliding window may differ between layers (Qwen2, Gemma 2/3)
    per_layer = [M.head_metrics(att.pattern(layer), sinks, blocked=np.isneginf(att.mask(layer)), square=square)
                 for layer in range(att.n_layers)]  # one layer at a time: bounded memory on long inputs
    values = {name: np.stack([m[name] for m in per_layer]) for name in per_layer[0]}
    labels, scores = M.label_heads(values)
    layers, heads = np.meshgrid(np.arange(att.n_layers), np.arange(att.n_heads), indexing="ij")
    frame = pd.DataFrame({
        "layer": layers.ravel(), "head": heads.ravel(),
        "pattern": labels.ravel().astype(str), "score": scores.ravel(),
    })
    for name in ("entropy", "entropy_bits", "broad", "mean_distance", "sink", "previous", "self", "next", "alignment"):
        frame[name] = values[name].ravel()
    frame = frame.drop(columns=list(M.CROSS_ONLY if square else M.SQUARE_ONLY))  # n/a for this block
    return frame


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def model_view_tiles(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str) -> tuple[np.ndarray, bool]:
    """Every head's pattern pooled to block maxima ``[layer, head, s, t]`` (s, t ≤ the cell cap) and whether it was pooled.

    Pooled by the engine from Q and K (``AttentionTrace.overview``): no head's n×n pattern is built.
    """
    from app.figure_data.attention_maps import layer_tiles

    att = heads_attention(TraceRequest(model_id, text, causal, max_tokens, block=block))
    cells = MODEL_VIEW_CELLS if att.n_layers * att.n_heads <= 36 else MODEL_VIEW_CELLS // 2
    tiles = np.stack([layer_tiles(att, layer, cells) for layer in range(att.n_layers)])
    return tiles.astype(np.float32), tiles.shape[-2:] != (att.n_queries, att.n_keys)


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def head_similarity(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str
                    ) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """``(divergence [N, N], clustering order, coarsened, layers used)`` over heads flattened layer-major.

    At most ``SIMILARITY_MAX_HEADS`` heads (whole layers from the first) and ``SIMILARITY_MAX_TOKENS``
    query rows × key bins enter the comparison.
    """
    from engine.analysis.similarity import cluster_order, coarsen, head_divergence

    att = heads_attention(TraceRequest(model_id, text, causal, max_tokens, block=block))
    n_layers = min(att.n_layers, max(1, SIMILARITY_MAX_HEADS // att.n_heads))
    pieces = [coarsen(att.pattern(layer), SIMILARITY_MAX_TOKENS, SIMILARITY_MAX_TOKENS) for layer in range(n_layers)]
    small = np.concatenate([piece for piece, _ in pieces])  # [n_layers · n_heads, ≤64, ≤64], layer-major
    coarsened = pieces[0][1]
    divergence = head_divergence(small)
    return divergence, cluster_order(divergence), coarsened, n_layers


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def rollout_maps(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str,
                 head_fusion: str, discard_ratio: float,
                 discard_rule: str = "all-off-diagonal") -> tuple[np.ndarray, np.ndarray]:
    """``(rollout [layer, n, n], fused [layer, n, n])`` of a self-attention block.

    ``rollout[l]`` is the rollout through layers 0..l (``discard_rule``: which weights the discard
    ratio may drop, ``engine.analysis.rollout.DISCARD_RULES``); ``fused[l]`` is layer l's raw attention
    with its heads fused the same way (no residual, nothing discarded).
    """
    from engine.analysis.rollout import fuse_heads, rollout

    if not block_is_square(block):
        raise EngineError("Rollout needs self-attention: cross-attention has no path from layer to layer.")
    att = heads_attention(TraceRequest(model_id, text, causal, max_tokens, block=block))
    layers = [att.pattern(layer) for layer in range(att.n_layers)]
    maps = rollout(layers, head_fusion=head_fusion, discard_ratio=float(discard_ratio), discard_rule=discard_rule)
    fused = np.stack([fuse_heads(p, head_fusion) for p in layers]).astype(np.float32)
    return maps, fused
