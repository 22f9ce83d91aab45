"""One capture path for every family that calls ``transformers.AttentionInterface``.

BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA, DistilBERT, GPT-2, ViT, DeiT, Swin, Llama, Mistral, Qwen2,
Qwen3, GPT-NeoX, Phi-3, Gemma, Gemma 2, Gemma 3 text and gpt-oss (transformers 5.23) compute attention by
calling the function registered under ``config._attn_implementation`` with the projected
(position-encoded, for RoPE) ``query`` ``[b, H, n, d]``, ``key`` / ``value`` ``[b, H_kv, n, d]`` (grouped-query
attention: fewer key/value heads), the mask, ``scaling`` and, where the layer has one,
``sliding_window``. These models are loaded with ``attn_implementation="ap_capture"``: the function
registered here records Q, K, V and those arguments when a trace asked for them (a context variable
the trace sets, so concurrent sessions never mix; the model's lock serialises forward passes; the tensors stay
on the model's device until :func:`engine.capture.transfer.to_host` brings a trace's back in one copy) and
always hands the call to transformers' own SDPA function, so the model runs its fast path and no
n×n array is kept. The mask builder for ``ap_capture`` is transformers' SDPA one. A softcapped call
(Gemma 2) or one with sink logits (gpt-oss's ``s_aux``), which SDPA cannot do, runs :func:`_written_out`
instead: a chunk of query rows at a time.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from engine.records import EngineError

#: the attention implementation name these families are loaded with
IMPL = "ap_capture"

NOT_CAPTURING = (
    "No attention call was recorded: this model was not loaded with the engine's capturing attention "
    "(attn_implementation='ap_capture'). Load it with engine.load."
)

#: a captured tensor while the forward pass runs, its numpy copy after
Array = np.ndarray | torch.Tensor

_REGISTERED = threading.Lock()
_done = False


@dataclass
class LayerRecord:
    """What one layer's attention call received (batch 0): tensors on the model's device as recorded, float32
    numpy arrays once :func:`engine.capture.transfer.to_host` has brought a trace's records back."""

    query: Array  # [H, n, d] (batch 0); [B, H, n, d] when the recorder keeps the whole batch
    key: Array  # [H_kv, n, d] (or [B, H_kv, n, d])
    value: Array  # [H_kv, n, d] (or [B, H_kv, n, d])
    scaling: float | None
    sliding_window: int | None
    softcap: float | None
    masked: bool  # a mask tensor was passed (False: none, SDPA's is_causal path or no mask at all)
    #: T5's relative position bias as ``[H, n_q + n_k − 1]`` (see ``AttentionTrace.relative_bias``), all zeros
    #: where the model's is; None when the call had none. Layers given the same tensor share one.
    relative_bias: Array | None = None
    #: ``[H]`` learned sink logits (gpt-oss's ``s_aux``): one more logit in every row's softmax; None: none
    sinks: Array | None = None
    #: ``[H, n_k]`` ‖v^h_j W_O^h‖ (``AttentionTrace.value_out_norms``), set by adapters that read the
    #: output projection from the calling module; None until then
    out_norms: Array | None = None

    @property
    def scale(self) -> float:
        """The factor on ``Q Kᵀ``: the call's ``scaling``, or ``1/√d_head`` when it passed none."""
        return self.scaling if self.scaling is not None else self.query.shape[-1] ** -0.5


@dataclass
class Recorder:
    """Per-trace store of what each attention call received: ``calls``, every call in order as
    ``(attention module, record)``; adapters map modules to their layer (and stack) by identity or name.
    """

    calls: list[tuple[object, LayerRecord]] = field(default_factory=list)
    #: keep every batch row of Q, K, V instead of batch 0 (Swin passes one row per window of the image)
    whole_batch: bool = False
    #: ids of the attention modules whose call is the last one a trace reads: once one of them is recorded the
    #: forward pass stops (:class:`ForwardStopped`); its attention output, the layers after it and any head are
    #: never computed (empty: the forward runs to its end)
    stop_after: frozenset[int] = frozenset()
    #: (address, shape) → (the tensor, kept alive so that no later tensor reuses its address; its vector)
    _biases: dict[tuple, tuple[object, torch.Tensor]] = field(default_factory=dict)

    def relative(self, position_bias) -> torch.Tensor | None:
        """``[1, H, n_q, n_k]`` relative bias → its ``[H, n_q + n_k − 1]`` diagonals (first column
        bottom-up, then the first row), once per tensor, on its device; None when there is none."""
        if position_bias is None:
            return None
        memo = (position_bias.data_ptr(), tuple(position_bias.shape))
        if memo not in self._biases:
            pb = position_bias[0].detach()  # [H, n_q, n_k]
            self._biases[memo] = (position_bias, torch.cat([pb[:, :, 0].flip(-1), pb[:, 0, 1:]], dim=1))
        return self._biases[memo][1]

    @property
    def layers(self) -> dict[int, LayerRecord]:
        """Layer index → record, read from the modules' ``layer_idx`` (call order where a module has none)."""
        return {
            int(getattr(module, "layer_idx", None) if getattr(module, "layer_idx", None) is not None else i): record
            for i, (module, record) in enumerate(self.calls)
        }


class ForwardStopped(Exception):
    """Raised by the capturing attention once the recorder holds the last call it needs
    (``Recorder.stop_after``); the caller that set it catches it (:func:`recording`)."""


_RECORDER: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("ap_capture_recorder", default=None)
#: a function ``(attention module, weights [b, H, n_q, n_k]) -> weights or None`` that replaces a call's attention
#: weights (:func:`overriding`); None: every call runs SDPA as usual
_OVERRIDE: contextvars.ContextVar = contextvars.ContextVar("ap_capture_override", default=None)


def _capture_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    recorder = _RECORDER.get()
    if recorder is not None:
        rows = slice(None) if recorder.whole_batch else 0  # kept on the device: no copy, no wait here
        record = LayerRecord(
            query=query[rows].detach(),
            key=key[rows].detach(),
            value=value[rows].detach(),
            scaling=None if scaling is None else float(scaling),
            sliding_window=None if kwargs.get("sliding_window") is None else int(kwargs["sliding_window"]),
            softcap=None if kwargs.get("softcap") is None else float(kwargs["softcap"]),
            masked=attention_mask is not None,
            relative_bias=recorder.relative(kwargs.get("position_bias")),
            sinks=None if kwargs.get("s_aux") is None else kwargs["s_aux"].detach(),
        )
        recorder.calls.append((module, record))
        if id(module) in recorder.stop_after:
            raise ForwardStopped
    override = _OVERRIDE.get()
    if override is not None:
        weights = eager_weights(module, query, key, attention_mask, scaling, kwargs)
        replaced = override(module, weights)
        if replaced is not None:
            return weighted_values(replaced, value), None
    softcap, sinks = kwargs.pop("softcap", None), kwargs.pop("s_aux", None)
    if softcap is not None or sinks is not None:  # Gemma 2, gpt-oss: SDPA cannot cap the scores nor add a sink
        return _written_out(module, query, key, value, attention_mask, scaling, softcap, sinks, kwargs.get("is_causal"))
    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)


#: scores a softcapped attention computes at once (floats): rows are done in chunks, never n×n
_SOFTCAP_CHUNK = 1 << 22


def _written_out(module, query, key, value, attention_mask, scaling, softcap, sinks, is_causal):
    """Attention written out, a chunk of query rows at a time: with a ``softcap`` (``scores = tanh(scores / cap) ·
    cap`` before the mask) and ``sinks`` (``[H]`` logits, one more in each row's softmax, then dropped: gpt-oss).

    ``attention_mask`` is what the SDPA mask builder gives: a bool ``[b, 1, n_q, n_k]`` (True where
    allowed), a float additive mask, or None (then causal unless ``is_causal`` is False, as SDPA).
    Returns ``([b, n_q, H, d], None)`` like transformers' attention functions.
    """
    n_rep = query.shape[1] // key.shape[1]
    if n_rep > 1:
        key, value = key.repeat_interleave(n_rep, dim=1), value.repeat_interleave(n_rep, dim=1)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    n_q, n_k = query.shape[2], key.shape[2]
    out = torch.empty(query.shape[:3] + (value.shape[-1],), dtype=query.dtype, device=query.device)
    rows = max(1, _SOFTCAP_CHUNK // max(1, query.shape[0] * query.shape[1] * n_k))
    for a in range(0, n_q, rows):
        b = min(n_q, a + rows)
        s = torch.matmul(query[:, :, a:b], key.transpose(-1, -2)) * scale
        if softcap is not None:
            s = torch.tanh(s / softcap) * softcap
        if attention_mask is not None:
            m = attention_mask[:, :, a:b, :n_k]
            s = s.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else s + m
        elif causal and n_q > 1:
            i = torch.arange(a, b, device=s.device)[:, None] + (n_k - n_q)
            s = s.masked_fill(torch.arange(n_k, device=s.device)[None, :] > i, float("-inf"))
        p = _softmax(s, sinks).nan_to_num(0.0).to(value.dtype)
        out[:, :, a:b] = torch.matmul(p, value)
    return out.transpose(1, 2).contiguous(), None


def eager_weights(module, query, key, attention_mask, scaling, kwargs: dict):
    """The call's attention weights ``[b, H, n_q, n_k]`` written out (what SDPA computes inside): scaled scores,
    T5's position bias, Gemma 2's softcap, gpt-oss's sinks, the mask (bool: True where allowed; float: added; None: causal when
    SDPA would be), softmax in float32 (float64 kept); a fully blocked row is all zeros. n×n: for short inputs only
    (:func:`overriding`). Gradients flow through it."""
    n_rep = query.shape[1] // key.shape[1]
    if n_rep > 1:  # grouped-query attention: head h reads key head h // n_rep (transformers' repeat_kv)
        key = key.repeat_interleave(n_rep, dim=1)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    s = torch.matmul(query, key.transpose(-1, -2)) * scale  # (b, H, n_q, n_k)
    if kwargs.get("softcap") is not None:
        s = torch.tanh(s / kwargs["softcap"]) * kwargs["softcap"]
    if kwargs.get("position_bias") is not None:
        s = s + kwargs["position_bias"]
    n_q, n_k = s.shape[-2:]
    if attention_mask is not None:
        m = attention_mask[:, :, :, :n_k]
        s = s.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else s + m
    else:
        causal = kwargs.get("is_causal")
        causal = getattr(module, "is_causal", True) if causal is None else causal
        if causal and n_q > 1:
            i = torch.arange(n_q, device=s.device)[:, None] + (n_k - n_q)
            s = s.masked_fill(torch.arange(n_k, device=s.device)[None, :] > i, float("-inf"))
    return _softmax(s, kwargs.get("s_aux")).nan_to_num(0.0)


def _softmax(scores, sinks):
    """Softmax over the keys (float32 unless float64), with a sink logit per head in each row when ``sinks`` (``[H]``)
    is given: the row keeps only the keys' part, so it sums to less than one."""
    scores = scores if scores.dtype == torch.float64 else scores.float()
    if sinks is None:
        return torch.softmax(scores, dim=-1)
    sink = sinks.to(scores.dtype).reshape(1, -1, 1, 1).expand(*scores.shape[:-1], 1)
    return torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]


def weighted_values(weights, value):
    """``weights [b, H, n_q, n_k]`` times the values → the attention output ``[b, n_q, H, d]`` transformers expects."""
    n_rep = weights.shape[1] // value.shape[1]
    if n_rep > 1:
        value = value.repeat_interleave(n_rep, dim=1)
    return torch.matmul(weights.to(value.dtype), value).transpose(1, 2).contiguous()  # (b, n_q, H, d)


@contextmanager
def overriding(replace) -> Iterator[None]:
    """Let ``replace(module, weights) -> weights | None`` change the attention weights of the ``ap_capture`` calls
    made in this context (this thread / task only): a call it answers runs written out, ``weights'`` times the
    values, instead of SDPA; None leaves the call as it is. Used by :mod:`engine.analysis.attention_swap`
    (Jain & Wallace's test). The caller holds the model's lock."""
    token = _OVERRIDE.set(replace)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


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
def recording(whole_batch: bool = False, stop_after: Iterable[object] = ()) -> Iterator[Recorder]:
    """Record every ``ap_capture`` attention call made in this context (this thread / task only); with
    ``whole_batch``, every batch row of Q, K and V (Swin: one per window), else batch 0.

    ``stop_after``: attention modules whose call is the last one wanted (a text trace: the last layer's);
    the forward pass ends right after that call is recorded (nothing after it is computed, and the
    model's output is never made) and the context exits normally, the recorder holding every call."""
    recorder = Recorder(whole_batch=whole_batch, stop_after=frozenset(id(m) for m in stop_after))
    token = _RECORDER.set(recorder)
    try:
        yield recorder
    except ForwardStopped:
        if not recorder.stop_after:
            raise
    finally:
        _RECORDER.reset(token)


def layer_records(calls: Sequence[tuple[object, object]], layers: Sequence[nn.Module]) -> list:
    """One recorded attention call per layer, matched by module identity.

    Args:
        calls: ``Recorder.calls``, ``(attention module, record)`` in call order.
        layers: the model's layers in order; a call belongs to the layer whose submodules hold its module.

    Raises:
        EngineError: nothing was recorded (the model does not run ``ap_capture``), a call outside
            every layer, a layer called twice, or a layer with no call.
    """
    if not calls:
        raise EngineError(NOT_CAPTURING)
    owner = {id(m): i for i, layer in enumerate(layers) for m in layer.modules()}
    found: list = [None] * len(layers)
    for module, record in calls:
        i = owner.get(id(module))
        if i is None:
            raise EngineError(f"an attention call from {type(module).__name__} lies outside the model's layers")
        if found[i] is not None:
            raise EngineError(f"layer {i} called attention twice; one self-attention per layer is expected")
        found[i] = record
    missing = [i for i, r in enumerate(found) if r is None]
    if missing:
        raise EngineError(f"no attention was recorded for layers {missing} of 0–{len(layers) - 1}")
    return found


def per_query_head(x: Array, n_heads: int) -> Array:
    """Grouped-query keys/values ``[..., H_kv, n, d]`` → ``[..., H, n, d]`` (numpy or torch): head ``h`` reads
    ``h // (H / H_kv)``, as transformers' ``repeat_kv``; returned as is when every query head has its own."""
    n_rep = n_heads // x.shape[-3]
    if n_rep == 1:
        return x
    return x.repeat_interleave(n_rep, dim=-3) if isinstance(x, torch.Tensor) else np.repeat(x, n_rep, axis=-3)
