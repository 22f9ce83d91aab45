"""What a trace captured, brought to the host in one copy.

A forward pass on a GPU queues its kernels and returns; a ``.cpu()`` of one captured tensor waits for every
kernel queued before it, so one copy per layer's Q, K, V (and per W_O) made the host wait once per tensor.
Captures therefore stay on the model's device while the pass runs; :func:`to_host` then writes every tensor
of a trace into one float32 buffer on that device and copies it to the host once (on CUDA into pinned
memory, without blocking, then one synchronisation), and hands back numpy views of that buffer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch


def copy_to_host(tensors: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """Float32 numpy copies of ``tensors``, each in its own shape, through one buffer and one device-to-host copy.

    The buffer is made on the first tensor not on the CPU (the CPU when all are); the arrays are views of the
    buffer's host copy (C-contiguous, sharing nothing with the tensors). Exactly ``t.float().cpu().numpy()``.
    """
    device = next((t.device for t in tensors if t.device.type != "cpu"), torch.device("cpu"))
    sizes = [t.numel() for t in tensors]
    with torch.no_grad():
        flat = torch.empty(sum(sizes), dtype=torch.float32, device=device)
        for t, part in zip(tensors, flat.split(sizes)):
            part.view(t.shape).copy_(t.detach())  # converts the dtype and gathers strided views, no temporaries
        if device.type == "cuda":
            host = torch.empty(flat.shape, dtype=flat.dtype, pin_memory=True)
            host.copy_(flat, non_blocking=True)
            torch.cuda.current_stream(device).synchronize()  # the one wait: every kernel of the pass, then the copy
        else:
            host = flat.to("cpu")
    return [part.view(t.shape).numpy() for t, part in zip(tensors, host.split(sizes))]


def to_host(tree: Any) -> Any:
    """``tree`` with every tensor in it replaced by its float32 numpy copy, all made by one :func:`copy_to_host`.

    ``tree``: tensors, None and other values, nested in lists, tuples, dicts and dataclass instances (a
    recorder's ``LayerRecord``); one tensor met twice becomes one array.
    """
    found: dict[int, torch.Tensor] = {}
    for t in _tensors(tree):
        found.setdefault(id(t), t)
    arrays = dict(zip(found, copy_to_host(list(found.values()))))
    return _rebuilt(tree, arrays)


def _tensors(tree: Any) -> Iterator[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for x in tree:
            yield from _tensors(x)
    elif isinstance(tree, dict):
        for x in tree.values():
            yield from _tensors(x)
    elif dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        for f in dataclasses.fields(tree):
            yield from _tensors(getattr(tree, f.name))


def _rebuilt(tree: Any, arrays: dict[int, np.ndarray]) -> Any:
    if isinstance(tree, torch.Tensor):
        return arrays[id(tree)]
    if isinstance(tree, (list, tuple)):
        return type(tree)(_rebuilt(x, arrays) for x in tree)
    if isinstance(tree, dict):
        return {k: _rebuilt(x, arrays) for k, x in tree.items()}
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        return dataclasses.replace(
            tree, **{f.name: _rebuilt(getattr(tree, f.name), arrays) for f in dataclasses.fields(tree) if f.init}
        )
    return tree
