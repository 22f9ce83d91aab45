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
(and its version), so a served model's traces compute it once per layer, not once per trace (nor copy
W_O from a GPU every trace).
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from engine.records import EngineError

#: query rows per step of :func:`output_norms` (bounds its float64 temporaries)
_ROWS = 4096


def head_blocks(weight: np.ndarray, n_heads: int, *, transposed: bool) -> np.ndarray:
    """The output projection as one ``W_O^h`` per head: ``[head, d_head, d_out]`` float64.

    Args:
        weight: the projection's weight: ``nn.Linear`` stores ``[d_out, heads · d_head]``
            (``transposed=False``); GPT-2's ``Conv1D`` stores ``[heads · d_head, d_out]`` (``transposed=True``).
        n_heads: query heads; their outputs enter head-major (head 0's ``d_head`` inputs first).

    Raises:
        ValueError: the input side does not split into ``n_heads`` equal blocks.
    """
    w = np.asarray(weight, dtype=np.float64)
    w = w if transposed else w.T  # [heads · d_head, d_out]
    if w.ndim != 2 or w.shape[0] % n_heads:
        raise ValueError(f"an output projection with {w.shape[0]} inputs does not split into {n_heads} heads")
    return w.reshape(n_heads, w.shape[0] // n_heads, w.shape[1])  # [H, d_head, d_out]


def module_blocks(proj, n_heads: int) -> np.ndarray:
    """:func:`head_blocks` of a torch output projection: an ``nn.Linear`` or GPT-2's ``Conv1D`` (``nf`` outputs)."""
    weight = proj.weight.detach().to("cpu").double().numpy()
    return head_blocks(weight, n_heads, transposed=type(proj).__name__ == "Conv1D")


def grams(blocks: np.ndarray) -> np.ndarray:
    """``G_h = W_O^h W_O^hᵀ`` for every head of ``blocks`` ``[head, d_head, d_out]``: ``[head, d_head, d_head]``."""
    return np.matmul(blocks, blocks.transpose(0, 2, 1))


#: id(weight) -> (a weak reference to it, its state, its read-only grams). Keyed by id, not a WeakKeyDictionary: a
#: tensor's ``==`` is elementwise, and that dictionary compares keys with it. The entry goes when the weight does.
_GRAMS: dict[int, tuple[weakref.ref, tuple, np.ndarray]] = {}
_GRAMS_LOCK = threading.RLock()  # re-entrant: a weight collected while the lock is held forgets itself


def _forget(key: int) -> None:
    with _GRAMS_LOCK:
        _GRAMS.pop(key, None)


def projection_grams(proj, n_heads: int) -> np.ndarray:
    """:func:`grams` of the projection ``proj``, computed once per weight: kept while the weight tensor lives, for
    as long as it is unchanged (its version counter, storage, dtype and device; an optimizer's in-place step, a
    ``load_state_dict`` or a move to another device computes them again). Read-only: traces of every session
    share it. A weight that keeps no version (made under ``torch.inference_mode``) is never kept."""
    weight = proj.weight
    try:
        state = (n_heads, int(weight._version), weight.data_ptr(), str(weight.dtype), str(weight.device))
    except RuntimeError:  # an inference tensor: no version counter, so nothing says when it changed
        return grams(module_blocks(proj, n_heads))
    key = id(weight)
    with _GRAMS_LOCK:
        kept = _GRAMS.get(key)
    if kept is not None and kept[0]() is weight and kept[1] == state:
        return kept[2]
    result = grams(module_blocks(proj, n_heads))
    result.flags.writeable = False
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


def gram_norms(values: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """:func:`output_norms` from the heads' Gram matrices (:func:`grams`, :func:`projection_grams`)."""
    if values.ndim != 3 or gram.ndim != 3 or values.shape[0] != gram.shape[0] or values.shape[2] != gram.shape[1]:
        raise ValueError(f"values {values.shape} and Gram matrices {gram.shape} do not match (head, ·, d_head)")
    out = np.empty(values.shape[:2], dtype=np.float32)
    rows = max(16, _ROWS // values.shape[0])  # every head at once, in chunks of positions (one call per chunk)
    gram = np.asarray(gram, dtype=np.float64)
    for a in range(0, values.shape[1], rows):
        v = np.asarray(values[:, a : a + rows], dtype=np.float64)  # [head, rows, d_head]
        squared = np.einsum("hnd,hnd->hn", v @ gram, v)
        out[:, a : a + rows] = np.sqrt(np.maximum(squared, 0.0))
    return out


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


def attention_norms(attention, values: np.ndarray) -> np.ndarray:
    """:func:`output_norms` of ``values`` ``[head, key, d_head]`` through the projection ``attention`` owns."""
    return gram_norms(values, projection_grams(attention_output(attention), values.shape[0]))
