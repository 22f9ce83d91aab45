"""Activation capture: identity ``HookPoint`` modules and a context manager that always cleans up.

Own models place a ``HookPoint`` wherever an activation is worth looking at; its module path
(``blocks.0.attn.hook_q``) is its public name, following TransformerLens's vocabulary. Hugging Face
models' attention calls are recorded by :mod:`engine.capture.hf` (their position vectors through forward
hooks on their own submodules, with :func:`capture`).

Hooks are global state on a module that may be shared between threads (a model cached by the
app is shared by every session). ``capture`` therefore removes every hook it added in a
``finally`` block, and callers hold the model's lock while a capture is active.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import torch
from torch import nn

Transform = Callable[[torch.Tensor], torch.Tensor]


class HookPoint(nn.Module):
    """An identity module: ``forward(x) -> x``, a named place to read an activation."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def hook_point_names(model: nn.Module) -> list[str]:
    """Names of every ``HookPoint`` in ``model``, in module order (the public activation names)."""
    return [name for name, module in model.named_modules() if isinstance(module, HookPoint)]


@contextmanager
def capture(
    targets: Mapping[str, nn.Module] | nn.Module,
    names: list[str] | None = None,
    transform: Mapping[str, Transform] | None = None,
    inputs: bool = False,
) -> Iterator[dict[str, torch.Tensor]]:
    """Record module outputs during the forward passes run inside the ``with`` block.

    Args:
        targets: ``{name: module}`` to hook, or a model whose ``HookPoint``s are hooked by name.
        names: with a model, only these hook names (default: all).
        transform: optional ``{name: fn}`` applied to an output before it is stored (e.g. to split a
            fused QKV projection); stored tensors are always detached.
        inputs: record each module's first positional input instead of its output (a layer's residual
            stream in, an output projection's concatenated heads ``z``).

    Yields:
        A dict filled with ``{name: tensor}`` as the forward pass runs.

    Example:
        >>> with capture(model, names=["blocks.0.attn.hook_q"]) as acts:
        ...     model(tokens)
        >>> acts["blocks.0.attn.hook_q"].shape
    """
    if isinstance(targets, nn.Module):
        modules = dict(targets.named_modules())
        wanted = names if names is not None else hook_point_names(targets)
        missing = [n for n in wanted if n not in modules]
        if missing:
            raise KeyError(f"no hook point named {missing}")
        targets = {n: modules[n] for n in wanted}
    store: dict[str, torch.Tensor] = {}
    transform = transform or {}
    handles = []

    def make_hook(name: str):
        fn = transform.get(name)

        def hook(_module: nn.Module, args: tuple, output: torch.Tensor) -> None:
            out = args[0] if inputs else output
            out = out[0] if isinstance(out, tuple) else out
            out = out.detach()
            store[name] = fn(out) if fn is not None else out

        return hook

    try:
        for name, module in targets.items():
            handles.append(module.register_forward_hook(make_hook(name)))
        yield store
    finally:
        for handle in handles:
            handle.remove()
