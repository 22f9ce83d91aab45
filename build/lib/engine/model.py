"""The loaded-model handle that ``engine.load`` returns and ``engine.trace`` takes.

A ``Model`` may be shared by many threads (the app caches one per id for every session), so it
is treated as read-only: nothing here calls ``.train()``, ``.to()`` or edits a config after
loading. The forward pass with capture hooks attached is serialised by ``lock``, because hooks are
global state on the module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import nn

from engine.records import ModelSpec
from engine.traces import Trace


class Adapter(Protocol):
    """Knows how to tokenize for, run and capture one model family."""

    def trace(self, model: "Model", text: str, *, causal: bool | None, max_tokens: int) -> Trace: ...


def pick_device() -> torch.device:
    """CUDA when present, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass(eq=False)
class Model:
    """A loaded, read-only model.

    Attributes:
        spec: catalog entry (id, family, label).
        module: the torch module, in eval mode, gradients off.
        tokenizer: the tokenizer (a Hugging Face tokenizer or one of ours).
        adapter: the family adapter used by ``engine.trace``.
        device: where ``module`` lives.
        max_positions: the longest input the model accepts, in tokens.
        reload: builds the same module on another device (used for a CPU fallback after a GPU
            out-of-memory error, without touching the shared module).
        info: free-form facts for the UI (parameter count, source path).
        default_causal: whether the model masks future tokens by itself, i.e. what ``engine.trace``
            does with ``causal=None`` and where a page's causal toggle starts. The loader reads it from
            the model (a Hugging Face config's ``is_decoder`` / ``is_causal``, our config's ``causal``);
            None (not given) means "decoders do, everything else does not".
    """

    spec: ModelSpec
    module: nn.Module
    tokenizer: Any
    adapter: Adapter
    device: torch.device
    max_positions: int
    reload: Callable[[torch.device], nn.Module] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    default_causal: bool | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cpu_module: nn.Module | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.default_causal is None:
            self.default_causal = self.spec.family == "decoder"
        self.default_causal = bool(self.default_causal)

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.module.parameters())

    def run(self, fn: Callable[[nn.Module, torch.device], Any]) -> tuple[Any, torch.device, str | None]:
        """Call ``fn(module, device)`` under the lock; on a GPU out-of-memory error retry on the CPU.

        Returns:
            ``(result, device used, notice or None)``.
        """
        with self.lock, torch.inference_mode():
            try:
                return fn(self.module, self.device), self.device, None
            except torch.OutOfMemoryError:
                if self.device.type == "cpu" or self.reload is None:
                    raise
                if self.device.type == "cuda":
                    torch.cuda.empty_cache()
                if self._cpu_module is None:
                    self._cpu_module = self.reload(torch.device("cpu"))
                cpu = torch.device("cpu")
                notice = "The GPU ran out of memory for this input, so it ran on the CPU instead."
                return fn(self._cpu_module, cpu), cpu, notice


def freeze(module: nn.Module) -> nn.Module:
    """Eval mode, no gradients: the state every shared model is kept in."""
    module.eval()
    for p in module.parameters():
        p.requires_grad_(False)
    return module
