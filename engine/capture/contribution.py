"""How much a key adds to a query's output, per head: Kobayashi et al.'s norm-based measure.

Kobayashi, Kuribayashi, Yokoi and Inui (2020), "Attention is Not Only a Weight: Analyzing Transformers
with Vector Norms", EMNLP. One attention layer's output for query ``i`` is a sum of one vector per head
and key, plus the output projection's bias::

    y_i = Σ_h Σ_j α^h_ij · f_h(x_j) + b_O          f_h(x) = (x W_V^h + b_V^h) W_O^h = v^h(x) W_O^h

``W_O^h`` (``[d_head, d_model]``) is the block of the output projection that head ``h``'s slice of the
concatenated head outputs feeds. The measure is the length of one term, ``‖α^h_ij f_h(x_j)‖ =
α^h_ij · ‖v^h_j W_O^h‖`` (α ≥ 0). ``b_O`` is added once to the sum of every head and key: it belongs
to no single head's term, so it is not part of the measure.

A trace keeps ``‖v^h_j W_O^h‖`` per layer as a ``[head, key]`` array (:func:`output_norms`), not W_O:
``AttentionTrace.contributions`` multiplies it by the weights. With grouped-query attention the value
vector is the shared key/value head's, ``W_O^h`` is the query head's own block.

The norms are computed from the ``d_head × d_head`` Gram matrix ``G_h = W_O^h W_O^hᵀ`` in float64:
``‖v W_O^h‖² = v G_h vᵀ``, O(n · d_head · d_model) per layer instead of building ``[n, d_model]``
vectors per head. ``G_h`` depends on the weights alone: :func:`projection_grams` keeps it per weight tensor
(and its version) on the weight's device, so a served model's traces compute it once per layer, not once
per trace, and never copy W_O or G_h to the host: a trace's norms are computed beside its values
(:func:`gram_norms`) and come back with them (:mod:`engine.capture.transfer`).
"""

from __future__ import annotations

import math
import threading
import weakref

import numpy as np
import torch

from engine.records import EngineError

#: query rows per step of :func:`output_norms` (bounds its float64 temporaries)
_ROWS = 4096


def head_blocks(weight: np.ndarray | torch.Tensor, n_heads: int, *, transposed: bool) -> np.ndarray | torch.Tensor:
    """The output projection as one ``W_O^h`` per head: ``[head, d_head, d_out]`` float64 (numpy or torch, as given).

    Args:
        weight: the projection's weight: ``nn.Linear`` stores ``[d_out, heads · d_head]``
            (``transposed=False``); GPT-2's ``Conv1D`` stores ``[heads · d_head, d_out]`` (``transposed=True``).
        n_heads: query heads; their outputs enter head-major (head 0's ``d_head`` inputs first).

    Raises:
        ValueError: the input side does not split into ``n_heads`` equal blocks.
    """
    w = weight.double() if isinstance(weight, torch.Tensor) else np.asarray(weight, dtype=np.float64)
    w = w if transposed else w.T  # [heads · d_head, d_out]
    if w.ndim != 2 or w.shape[0] % n_heads:
        raise ValueError(f"an output projection with {w.shape[0]} inputs does not split into {n_heads} heads")
    return w.reshape(n_heads, w.shape[0] // n_heads, w.shape[1])  # [H, d_head, d_out]


def _is_conv1d(proj) -> bool:
    return type(proj).__name__ == "Conv1D"  # GPT-2's projection: its weight is stored [d_in, d_out]


def module_blocks(proj, n_heads: int) -> np.ndarray:
    """:func:`head_blocks` of a torch output projection: an ``nn.Linear`` or GPT-2's ``Conv1D`` (``nf`` outputs)."""
    return head_blocks(proj.weight.detach().to("cpu").double().numpy(), n_heads, transposed=_is_conv1d(proj))


def grams(blocks: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """``G_h = W_O^h W_O^hᵀ`` for every head of ``blocks`` ``[head, d_head, d_out]``: ``[head, d_head, d_head]``."""
    return blocks @ blocks.swapaxes(1, 2)


#: id(weight) -> (a weak reference to it, its state, its read-only grams). Keyed by id, not a WeakKeyDictionary: a
#: tensor's ``==`` is elementwise, and that dictionary compares keys with it. The entry goes when the weight does.
_GRAMS: dict[int, tuple[weakref.ref, tuple, torch.Tensor]] = {}
_GRAMS_LOCK = threading.RLock()  # re-entrant: a weight collected while the lock is held forgets itself


def _forget(key: int) -> None:
    with _GRAMS_LOCK:
        _GRAMS.pop(key, None)


def _grams_on_device(proj, n_heads: int) -> torch.Tensor:
    with torch.inference_mode():
        return grams(head_blocks(proj.weight.detach(), n_heads, transposed=_is_conv1d(proj)))


def projection_grams(proj, n_heads: int) -> torch.Tensor:
    """:func:`grams` of the projection ``proj`` as a float64 tensor on its weight's device, computed there once per
    weight: kept while the weight tensor lives, for as long as it is unchanged (its version counter, storage, dtype
    and device; an optimizer's in-place step, a ``load_state_dict`` or a move to another device computes them
    again). Read-only (an inference tensor: writing to it outside ``torch.inference_mode`` raises): traces of every
    session share it. A weight that keeps no version (made under ``torch.inference_mode``) is never kept."""
    weight = proj.weight
    try:
        state = (n_heads, int(weight._version), weight.data_ptr(), str(weight.dtype), str(weight.device))
    except RuntimeError:  # an inference tensor: no version counter, so nothing says when it changed
        return _grams_on_device(proj, n_heads)
    key = id(weight)
    with _GRAMS_LOCK:
        kept = _GRAMS.get(key)
    if kept is not None and kept[0]() is weight and kept[1] == state:
        return kept[2]
    result = _grams_on_device(proj, n_heads)
    with _GRAMS_LOCK:
        _GRAMS[key] = (weakref.ref(weight, lambda _ref, key=key: _forget(key)), state, result)
    return result


def output_norms(values: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """``‖v^h_j W_O^h‖`` for every head and key: ``[head, key]`` float32.

    Args:
        values: ``[head, key, d_head]`` value vectors, one per query head (grouped-query attention:
            the shared key/value head's, repeated), value bias included.
        blocks: ``[head, d_head, d_out]`` from :func:`head_blocks`.

    Example:
        >>> norms = output_norms(trace.v(0), module_blocks(layer.attention.output.dense, 12))   # [12, n]
    """
    if values.ndim != 3 or blocks.ndim != 3 or values.shape[0] != blocks.shape[0] or values.shape[2] != blocks.shape[1]:
        raise ValueError(f"values {values.shape} and output blocks {blocks.shape} do not match (head, ·, d_head)")
    return gram_norms(values, grams(blocks))


def gram_norms(values: np.ndarray | torch.Tensor, gram: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """:func:`output_norms` from the heads' Gram matrices (:func:`grams`, :func:`projection_grams`), computed on the
    Gram matrices' device in float64: ``values`` ``[..., head, key, d_head]`` → ``[..., head, key]`` float32, a numpy
    array for numpy values, else a tensor left on that device."""
    if values.ndim < 3 or gram.ndim != 3 or values.shape[-3] != gram.shape[0] or values.shape[-1] != gram.shape[1]:
        raise ValueError(f"values {values.shape} and Gram matrices {gram.shape} do not match (head, ·, d_head)")
    gram = torch.as_tensor(gram, dtype=torch.float64)
    v = torch.as_tensor(values, device=gram.device)
    out = torch.empty(v.shape[:-1], dtype=torch.float32, device=gram.device)
    rows = max(16, _ROWS // max(1, math.prod(v.shape[:-2])))  # every head at once, in chunks of positions
    for a in range(0, v.shape[-2], rows):
        chunk = v[..., a : a + rows, :].double()  # [..., head, rows, d_head]
        squared = ((chunk @ gram) * chunk).sum(-1)
        out[..., a : a + rows] = squared.clamp_min(0.0).sqrt()
    return out.cpu().numpy() if isinstance(values, np.ndarray) else out


#: attribute names of the output projection on an attention module that owns it (ViT's and Llama's
#: ``o_proj``, BART's and Marian's ``out_proj``, T5's ``o``, ours ``w_o``)
OWN_PROJECTIONS = ("o_proj", "out_proj", "o", "w_o")


def attention_output(attention) -> object:
    """The output projection an attention module owns (:data:`OWN_PROJECTIONS`).

    Raises:
        EngineError: the module has none of them (BERT-likes and GPT-2 keep theirs elsewhere: their
            adapter names the path).
    """

    for name in OWN_PROJECTIONS:
        proj = getattr(attention, name, None)
        if proj is not None and hasattr(proj, "weight"):
            return proj
    raise EngineError(
        f"{type(attention).__name__} has no output projection the engine knows ({', '.join(OWN_PROJECTIONS)}), "
        "so the contribution ‖α·f(x)‖ of its heads cannot be computed."
    )


def attention_norms(attention, values: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """:func:`gram_norms` of ``values`` ``[..., head, key, d_head]`` through the projection ``attention`` owns."""
    return gram_norms(values, projection_grams(attention_output(attention), values.shape[-3]))
