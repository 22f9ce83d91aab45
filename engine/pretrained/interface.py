"""One capture path for decoder families that call ``transformers.AttentionInterface``.

Llama, Mistral, Qwen2, Qwen3, GPT-NeoX, Phi-3, Gemma and Gemma 3 text (transformers 5.23) compute attention by calling
the function registered under ``config._attn_implementation`` with the projected, position-encoded
(RoPE applied) ``query`` ``[b, H, n, d]``, ``key`` / ``value`` ``[b, H_kv, n, d]`` (grouped-query
attention: fewer key/value heads), the mask, ``scaling`` and, where the layer has one,
``sliding_window``. These models are loaded with ``attn_implementation="ap_capture"``: the function
registered here records Q, K, V and those arguments when a trace asked for them (a context variable
the trace sets, so concurrent sessions never mix; the model's lock serialises forward passes) and
always hands the call to transformers' own SDPA function, so the model runs its fast path and no
n×n array is kept. The mask builder for ``ap_capture`` is transformers' SDPA one.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

#: the attention implementation name these families are loaded with
IMPL = "ap_capture"

_REGISTERED = threading.Lock()
_done = False


@dataclass
class LayerRecord:
    """What one layer's attention call received (numpy, float32, batch 0)."""

    query: np.ndarray  # [H, n, d]
    key: np.ndarray  # [H_kv, n, d]
    value: np.ndarray  # [H_kv, n, d]
    scaling: float | None
    sliding_window: int | None
    softcap: float | None
    masked: bool  # a mask tensor was passed (False: none, SDPA's is_causal path or no mask at all)


@dataclass
class Recorder:
    """Per-trace store: layer index → what that layer's attention call received."""

    layers: dict[int, LayerRecord] = field(default_factory=dict)


_RECORDER: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("ap_capture_recorder", default=None)


def _numpy(t) -> np.ndarray:
    return t[0].detach().float().cpu().numpy()


def _capture_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    recorder = _RECORDER.get()
    if recorder is not None:
        layer = getattr(module, "layer_idx", None)
        if layer is None:
            layer = len(recorder.layers)
        recorder.layers[int(layer)] = LayerRecord(
            query=_numpy(query),
            key=_numpy(key),
            value=_numpy(value),
            scaling=None if scaling is None else float(scaling),
            sliding_window=None if kwargs.get("sliding_window") is None else int(kwargs["sliding_window"]),
            softcap=None if kwargs.get("softcap") is None else float(kwargs["softcap"]),
            masked=attention_mask is not None,
        )
    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)


def register() -> str:
    """Register ``ap_capture`` with transformers' attention and mask interfaces (once per process)."""
    global _done
    with _REGISTERED:
        if not _done:
            from transformers import AttentionInterface
            from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

            AttentionInterface.register(IMPL, _capture_attention)
            AttentionMaskInterface.register(IMPL, sdpa_mask)
            _done = True
    return IMPL


@contextmanager
def recording() -> Iterator[Recorder]:
    """Record every ``ap_capture`` attention call made in this context (this thread / task only)."""
    recorder = Recorder()
    token = _RECORDER.set(recorder)
    try:
        yield recorder
    finally:
        _RECORDER.reset(token)
