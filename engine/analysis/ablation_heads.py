"""Which heads to switch off, and the hooks that switch them off.

A head's contribution to a layer's output is its slice of the concatenated head outputs ``z``
(the per-head context ``pattern · V``) times the matching rows of the output projection::

    out = concat_h(z_h) W_O = Σ_h z_h W_O[h·d_head : (h+1)·d_head, :]

So zeroing ``z_h`` just before ``W_O`` removes head ``h`` and nothing else: the other heads, the
residual stream, the MLPs and every later layer run as usual (they see the changed sum). It is done
with a forward *pre*-hook on the output projection module that returns ``z`` with those columns set
to 0; the weights are never edited. :func:`heads_off` removes its hooks in ``finally``. The same hook
with another run's ``z`` in place of 0 patches heads (:mod:`engine.analysis.patching`).

Heads are named ``(block, layer, head)``. Single-stack models (our decoder, BERT, GPT-2) have one
block, ``"self"``; the translator has ``"encoder"`` (self-attention), ``"decoder"`` (causal
self-attention) and ``"cross"`` (decoder → encoder).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager

import torch
from torch import nn

from engine.records import EngineError

HeadRef = tuple[str, int, int]  # (block, layer, head)
SELF = "self"
SEQ2SEQ_BLOCKS: tuple[str, ...] = ("encoder", "decoder", "cross")


def _index(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise EngineError(f"{what} must be a whole number, got {value!r}.")
    return int(value)


def normalise_heads(
    heads: Iterable, layout: Mapping[str, tuple[int, int]], *, keep_only: bool = False
) -> tuple[HeadRef, ...]:
    """Check and expand a head selection into a sorted tuple of ``(block, layer, head)``.

    Args:
        heads: items ``(layer, head)`` or ``(block, layer, head)``; ``head=None`` means every head of
            that layer. The 2-item form is allowed only when the model has a single block.
        layout: ``{block: (n_layers, n_heads)}`` of the model (:func:`engine.analysis.ablation.head_layout`).
        keep_only: return every head *except* the selected ones.

    Returns:
        The heads to switch off, sorted, without duplicates.

    Raises:
        EngineError: an unknown block, or a layer or head index out of range (readable message).
    """
    if heads is None:
        heads = ()
    if isinstance(heads, (str, bytes)):
        raise EngineError(f"Heads must be a list of (layer, head) pairs, got the text {heads!r}.")
    blocks = list(layout)
    chosen: set[HeadRef] = set()
    for item in heads:
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise EngineError(f"Each head must be (layer, head) or (block, layer, head), got {item!r}.")
        if len(item) == 2:
            if len(blocks) != 1:
                raise EngineError(
                    f"This model has several attention blocks ({', '.join(blocks)}): "
                    f"name the block, e.g. ('{blocks[0]}', 0, 1)."
                )
            block, layer, head = blocks[0], item[0], item[1]
        else:
            block, layer, head = item
        if block not in layout:
            raise EngineError(f"Unknown attention block {block!r}; this model has: {', '.join(blocks)}.")
        n_layers, n_heads = layout[block]
        layer = _index(layer, "A layer")
        if not 0 <= layer < n_layers:
            raise EngineError(f"Layer {layer} is out of range: this model has {n_layers} layers (0–{n_layers - 1}).")
        if head is None:
            chosen.update((block, layer, h) for h in range(n_heads))
            continue
        head = _index(head, "A head")
        if not 0 <= head < n_heads:
            raise EngineError(f"Head {head} is out of range: each layer has {n_heads} heads (0–{n_heads - 1}).")
        chosen.add((block, layer, head))
    if keep_only:
        every = {(b, layer, h) for b, (n_l, n_h) in layout.items() for layer in range(n_l) for h in range(n_h)}
        chosen = every - chosen
    order = {b: i for i, b in enumerate(blocks)}
    return tuple(sorted(chosen, key=lambda r: (order[r[0]], r[1], r[2])))


def replace_hook(chosen: torch.Tensor, source: torch.Tensor | None = None, n_heads: int | None = None):
    """A forward pre-hook that replaces its module's first input ``x`` where ``chosen`` is True.

    ``x`` becomes ``where(chosen, source, x)`` (``source`` None: 0); ``chosen`` and ``source`` broadcast against
    ``x``. With ``n_heads``, ``chosen`` is per head (``[..., n_heads]``) and ``x`` is an output projection's input
    ``z`` ``[..., n_heads · d_head]`` with the heads one after another (head-major), as every family here
    concatenates them: each head's flag covers its ``d_head`` columns.
    """

    def hook(_module: nn.Module, args: tuple) -> tuple:
        x = args[0]
        mask = chosen.to(x.device)
        if n_heads is not None:
            mask = mask.repeat_interleave(x.shape[-1] // n_heads, dim=-1)  # (..., H·dh)
        new = torch.zeros((), dtype=x.dtype, device=x.device) if source is None else source.to(x)
        return (torch.where(mask, new, x), *args[1:])

    return hook


def zero_heads_hook(heads: Iterable[int], n_heads: int):
    """A forward pre-hook that zeroes the given heads' slices of the projection's input ``z`` (:func:`replace_hook`)."""
    chosen = torch.zeros(n_heads, dtype=torch.bool)  # (H,)
    chosen[sorted(set(int(h) for h in heads))] = True
    return replace_hook(chosen, n_heads=n_heads)


@contextmanager
def hooked(
    pre: Iterable[tuple[nn.Module, object]] = (), post: Iterable[tuple[nn.Module, object]] = ()
) -> Iterator[None]:
    """Forward pre-hooks ``pre`` and forward hooks ``post`` (``(module, hook)`` pairs) during the ``with`` block.

    The caller holds the model's lock: hooks are global state on a shared module. Every hook added here is
    removed in ``finally``, also when the forward pass raises.
    """
    handles = []
    try:
        handles += [module.register_forward_pre_hook(fn) for module, fn in pre]
        handles += [module.register_forward_hook(fn) for module, fn in post]
        yield
    finally:
        for handle in handles:
            handle.remove()


def heads_off(
    projections: Mapping[tuple[str, int], nn.Module], heads: Iterable[HeadRef], n_heads: Mapping[str, int]
) -> AbstractContextManager[None]:
    """Switch off ``heads`` during the forward passes run inside the ``with`` block (:func:`hooked`).

    Args:
        projections: ``{(block, layer): output projection module}``.
        heads: ``(block, layer, head)`` to switch off (validated already).
        n_heads: heads per layer of each block.
    """
    by_layer: dict[tuple[str, int], list[int]] = {}
    for block, layer, head in heads:
        by_layer.setdefault((block, layer), []).append(head)
    for block, layer in by_layer.keys() - projections.keys():
        raise EngineError(f"Layer {layer} has no attention heads to switch off: it is a linear-attention layer.")
    return hooked(pre=[(projections[key], zero_heads_hook(hs, n_heads[key[0]])) for key, hs in by_layer.items()])
