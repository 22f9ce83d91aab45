"""What our own families share: their configs' JSON round trip, a checkpoint loaded as a read-only
:class:`engine.model.Model`, and the per-layer heads a trace reads from their attention hooks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from engine.capture.contribution import attention_norms
from engine.checkpoint import load_checkpoint
from engine.model import Adapter, Model, freeze, pick_device
from engine.records import CheckpointError, ModelSpec

C = TypeVar("C", bound="JsonConfig")


class JsonConfig:
    """Mixin for frozen dataclass configs: ``to_dict()``, a strict ``from_dict()`` and the checks they share."""

    def positive_int_problems(self, names: Iterable[str]) -> list[str]:
        """A sentence for each named field that is not a positive integer (True and False are not)."""
        values = {name: getattr(self, name) for name in names}
        return [
            f"{name} must be a positive integer, got {value!r}"
            for name, value in values.items()
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0
        ]

    def raise_problems(self, problems: list[str]) -> None:
        """Raise one ``ValueError`` naming the config class and every problem; nothing when there is none."""
        if problems:
            raise ValueError(f"{type(self).__name__}: " + "; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        """The config as a JSON-ready dict (field name → value; tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[C], data: Mapping[str, Any]) -> C:
        """Build a validated config from a dict such as ``to_dict()`` wrote; missing keys take defaults.

        Raises:
            ValueError: a key that is not a field (the known ones are listed) or an invalid value.
        """
        known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown key(s) {unknown}; known keys are {known}")
        return cls(**data)


def checkpoint_model(
    spec: ModelSpec,
    folder: Path,
    device: torch.device | None,
    *,
    adapter: Adapter,
    architecture: str,
    max_positions: Callable[[nn.Module], int],
    tokenizer: Callable[[nn.Module, Any], Any] = lambda _module, vocab: vocab,
    validate: Callable[[nn.Module, Any], str | None] | None = None,
) -> Model:
    """Load ``folder/spec.id.*`` and wrap it.

    Args:
        spec: the catalog entry.
        folder: where the checkpoint files are.
        device: defaults to CUDA when present, else CPU.
        adapter: the family's tracing adapter.
        architecture: a short description for the UI.
        max_positions: the longest input the module accepts.
        tokenizer: what ``Model.tokenizer`` holds (default: the checkpoint's vocabulary).
        validate: ``(module, vocab) -> problem or None``, checks beyond the checkpoint loader's.

    Raises:
        CheckpointError: a missing, corrupt or mismatched file, or a failed ``validate`` (readable).
    """
    device = device or pick_device()
    module, vocab, document = load_checkpoint(folder, spec.id, device=device)
    problem = validate(module, vocab) if validate else None
    if problem:
        raise CheckpointError(f"{spec.id}.json: {problem}")

    def rebuild(dev: torch.device) -> nn.Module:
        return freeze(load_checkpoint(folder, spec.id, device=dev)[0])

    return Model(
        spec=spec,
        module=freeze(module),
        tokenizer=tokenizer(module, vocab),
        adapter=adapter,
        device=device,
        max_positions=int(max_positions(module)),
        reload=rebuild,
        info={
            "source": str(folder / f"{spec.id}.safetensors"),
            "card": str(folder / f"{spec.id}.md"),
            "architecture": architecture,
            **document.get("metadata", {}),
        },
    )


def source_target_vocab(kind: str) -> Callable[[nn.Module, Any], str | None]:
    """A ``validate`` for translators: a ``{"source", "target"}`` vocabulary pair that fits the model."""

    def check(module: nn.Module, vocab: Any) -> str | None:
        if not isinstance(vocab, dict) or set(vocab) != {"source", "target"}:
            return f'a {kind} checkpoint needs a "source" and a "target" vocabulary'
        cfg = module.cfg
        if len(vocab["source"]) > cfg.src_vocab or len(vocab["target"]) > cfg.tgt_vocab:
            return (
                f"vocabularies of {len(vocab['source'])} / {len(vocab['target'])} tokens do not fit the "
                f"model's {cfg.src_vocab} / {cfg.tgt_vocab} ids"
            )
        return None

    return check


def qkv_names(prefixes: list[str], q: str = "hook_q", k: str = "hook_k") -> list[str]:
    """The hook names :func:`captured_heads` reads: ``{prefix}.{q|k|hook_v}`` for each attention layer."""
    return [f"{prefix}.{hook}" for prefix in prefixes for hook in (q, k, "hook_v")]


def captured_heads(
    acts: Mapping[str, torch.Tensor],
    prefixes: list[str],
    modules: list[nn.Module],
    q: str = "hook_q",
    k: str = "hook_k",
) -> dict[str, tuple]:
    """The :class:`~engine.traces.attention.AttentionTrace` fields of our own attention layers, one per prefix, as
    tensors left on the device the forward pass ran on (:func:`engine.capture.transfer.to_host` brings a trace's
    tensors back in one copy).

    Args:
        acts: captured activations, ``[1, pos, head, d_head]`` at each of :func:`qkv_names`.
        prefixes: each layer's attention module path (``"blocks.0.attn"``).
        modules: those modules (each owns its ``w_o`` and ``scale``).
        q, k: the query and key hooks (``hook_rot_q``/``hook_rot_k`` for RoPE, after the rotation).

    Returns:
        ``queries``, ``keys``, ``values`` (``[head, pos, d_head]`` each), ``value_out_norms`` (‖v^h_j W_O^h‖ per
        head and key, through each module's ``w_o``, computed beside the values) and ``scales``.
    """

    def heads(name: str) -> torch.Tensor:
        return acts[name][0].permute(1, 0, 2)  # [1, pos, head, d_head] → [head, pos, d_head]: a view

    values = tuple(heads(f"{prefix}.hook_v") for prefix in prefixes)
    return {
        "queries": tuple(heads(f"{prefix}.{q}") for prefix in prefixes),
        "keys": tuple(heads(f"{prefix}.{k}") for prefix in prefixes),
        "values": values,
        "value_out_norms": tuple(attention_norms(module, v) for module, v in zip(modules, values)),
        "scales": tuple(float(module.scale) for module in modules),
    }
