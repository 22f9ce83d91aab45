"""One forward pass of our own :class:`~engine.models.transformer.Transformer` as an ``AttentionTrace``.

Only Q, K and V are captured (O(layers · n · d)); the trace computes scores and patterns lazily, one
layer and head at a time. For RoPE models the rotated queries and keys (``hook_rot_q`` / ``hook_rot_k``)
are captured, since those are what enter the dot product; for ALiBi models the slopes are stored so
that ``AttentionTrace.bias`` rebuilds the model's bias exactly.
"""

from __future__ import annotations

import numpy as np
import torch

from engine.capture import capture
from engine.capture.contribution import attention_norms
from engine.models.transformer import Transformer
from engine.records import EmptyInputError, Tokens
from engine.traces.attention import AttentionTrace


def _heads_first(t: torch.Tensor) -> np.ndarray:
    """``(1, T, H, dh)`` captured activation -> float32 numpy ``[H, T, dh]`` on the CPU."""
    return np.ascontiguousarray(t[0].permute(1, 0, 2).to(device="cpu", dtype=torch.float32).numpy())


def trace_own(
    model: Transformer,
    token_ids: list[int],
    tokens: Tokens,
    *,
    model_id: str,
    causal: bool | None = None,
) -> AttentionTrace:
    """One no-grad forward pass of ``model`` on one sequence, captured as an :class:`AttentionTrace`.

    The model is only read: no ``.eval()``/``.to()``, no config change; the causal choice goes through
    the forward call. Hooks are attached for the duration of the call only; callers that share the
    model between threads hold its lock around this call. The forward pass runs on the device of the
    model's parameters and uses the fused ``sdpa`` attention (nothing O(n²) is kept).

    Args:
        model: the transformer.
        token_ids: the sequence, at most ``model.cfg.max_len`` ids.
        tokens: display tokens for the same sequence (one per id).
        model_id: the id to record in the trace.
        causal: apply the causal mask; None uses ``model.cfg.causal``.

    Returns:
        A trace with per-layer ``[head, pos, d_head]`` queries (post-rotary for RoPE), keys, values,
        scales ``1/√d_head``, ALiBi slopes (alibi only), the added position vectors ``[pos, d_model]``
        (learned / sinusoidal only), family ``"decoder"`` when causal else ``"encoder"``.

    Raises:
        EmptyInputError: no tokens.
        ValueError: ``tokens`` and ``token_ids`` differ in length, or the sequence is too long.
    """
    cfg = model.cfg
    if not token_ids:
        raise EmptyInputError("there is nothing to trace: the input has no tokens")
    if len(token_ids) != len(tokens):
        raise ValueError(f"{len(token_ids)} token ids but {len(tokens)} display tokens {list(tokens.strings)[:20]}")
    causal = cfg.causal if causal is None else causal
    q_name, k_name = ("hook_rot_q", "hook_rot_k") if cfg.pos_encoding == "rope" else ("hook_q", "hook_k")
    layers = range(cfg.n_layers)
    names = [f"blocks.{layer}.attn.{hook}" for layer in layers for hook in (q_name, k_name, "hook_v")]
    device = next(model.parameters()).device
    ids = torch.tensor([token_ids], dtype=torch.long, device=device)  # (1, T)
    with torch.no_grad(), capture(model, names=names) as acts:
        model(ids, causal=causal, attn_impl="sdpa")
        pos = model.position_vectors(len(token_ids))  # (T, D) or None
    slopes = model.alibi_slopes if cfg.pos_encoding == "alibi" else None  # (H,) or None
    values = tuple(_heads_first(acts[f"blocks.{layer}.attn.hook_v"]) for layer in layers)  # [H, T, dh] each
    return AttentionTrace(
        model_id=model_id,
        family="decoder" if causal else "encoder",
        tokens=tokens,
        key_tokens=tokens,
        queries=tuple(_heads_first(acts[f"blocks.{layer}.attn.{q_name}"]) for layer in layers),
        keys=tuple(_heads_first(acts[f"blocks.{layer}.attn.{k_name}"]) for layer in layers),
        values=values,
        # ‖v^h_j W_O^h‖ per head and key, through each block's w_o: what contributions() multiplies α by
        value_out_norms=tuple(attention_norms(block.attn, v) for block, v in zip(model.blocks, values)),
        scales=tuple(float(block.attn.scale) for block in model.blocks),
        causal=bool(causal),
        alibi_slopes=None if slopes is None else slopes.to("cpu", torch.float32).numpy().copy(),
        pos_encoding=None if pos is None else pos.detach().to("cpu", torch.float32).numpy().copy(),
        pos_encoding_kind=cfg.pos_encoding,
        n_input_tokens=len(token_ids),
        device=device.type,
    )
