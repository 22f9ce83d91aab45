"""Checkpoints of our own models: safetensors weights, a JSON config and a markdown model card.

A checkpoint ``NAME`` in a directory is three files::

    NAME.safetensors   the weights (tied weights stored once), read with safetensors, never pickle
    NAME.json          {"format": "attention-playground/1", "kind": "transformer",
                        "model_config": {...}, "vocab": {...}, "metadata": {...the card...}}
    NAME.md            the model card: data, size, steps, wall time, device, final metrics, command

Loading checks everything before it trusts anything: the JSON (format, a known kind, a valid config),
then the tensors' names, shapes and dtypes against a model built from that config. Any problem raises
:class:`~engine.records.CheckpointError` with a message that names the file (its name, not its folder:
messages reach end users) and the problem.

``kind`` says which builder turns ``model_config`` into a module: the family records of
:mod:`engine.families` (one per family; the builder's model file is imported on first use). This module
imports no model code, so the models (which load checkpoints) and the training code (which saves
them) both depend on it and not on each other.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from torch import nn

from engine.builds import BUILD_LOCK
from engine.families import KINDS
from engine.records import CheckpointError
from engine.text import error_reason, quote_input
from engine.vocab import Vocab

FORMAT = "attention-playground/1"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_MAX_LISTED = 8  # problems listed in one error message

LoadedVocab = Vocab | dict[str, Vocab]


@dataclass(frozen=True)
class CheckpointPaths:
    """The three files of one checkpoint."""

    weights: Path
    config: Path
    card: Path


def checkpoint_paths(directory: str | os.PathLike[str], name: str) -> CheckpointPaths:
    """Where checkpoint ``name`` lives in ``directory``.

    Raises:
        CheckpointError: ``name`` is not a plain file name (letters, digits, ``_ . -``).
    """
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise CheckpointError(
            f"checkpoint name {quote_input(name)} must be letters, digits, '_', '.' or '-' (no folders)"
        )
    base = Path(directory)
    return CheckpointPaths(base / f"{name}.safetensors", base / f"{name}.json", base / f"{name}.md")


# ---- saving -----------------------------------------------------------------------------------------


def save_checkpoint(
    directory: str | os.PathLike[str],
    name: str,
    model: nn.Module,
    *,
    kind: str,
    config: Mapping[str, Any],
    vocab: Vocab | Mapping[str, Any],
    card: Mapping[str, Any],
) -> CheckpointPaths:
    """Write ``name.safetensors``, ``name.json`` and ``name.md`` into ``directory`` (created if needed).

    Each file is written to a temporary name and then renamed, so a crash never leaves half a file.

    Args:
        directory: where to write.
        name: the checkpoint's file stem.
        model: the trained module; its tensors must match a model built from ``config``.
        kind: a key of :data:`engine.families.KINDS` (``"transformer"``).
        config: the model config, e.g. ``TransformerConfig.to_dict()``.
        vocab: a :class:`Vocab`, or ``{"source": Vocab, "target": Vocab}`` style mapping for models
            with several vocabularies (a ready ``to_dict()`` form is accepted too).
        card: JSON-safe facts for the model card: ``data``, ``steps``, ``wall_time_s``, ``device``,
            ``seed``, ``final_metrics`` (dict), ``command``, ``description``; other keys are listed too.
            ``params`` is filled in from the model.

    Returns:
        The paths written.

    Raises:
        CheckpointError: unknown kind, a config that does not build, a model that does not match its
            config, or a card / vocab that is not JSON-safe.

    Example:
        >>> save_checkpoint("assets/checkpoints", "reverse-tiny", model, kind="transformer",
        ...                 config=model.cfg.to_dict(), vocab=task.vocab, card={"steps": 1500})
    """
    paths = checkpoint_paths(directory, name)
    reference = _build(kind, config, where="config")
    expected = {k: tuple(v.shape) for k, v in unique_tensors(reference).items()}
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in unique_tensors(model).items()}
    problems = _compare(expected, {k: tuple(v.shape) for k, v in tensors.items()})
    if problems:
        raise CheckpointError(f"cannot save {name}: the model does not match its config: {problems}")
    metadata = dict(card)
    metadata["params"] = sum(t.numel() for t in tensors.values())
    document = {
        "format": FORMAT,
        "kind": kind,
        "model_config": dict(config),
        "vocab": _vocab_to_dict(vocab),
        "metadata": metadata,
    }
    try:
        text = json.dumps(document, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"cannot save {name}: the config, vocab or card is not JSON-safe: {err}") from err
    paths.weights.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(paths.weights, lambda tmp: save_file(tensors, str(tmp), metadata={"format": FORMAT, "kind": kind}))
    _write_atomic(paths.config, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    _write_atomic(paths.card, lambda tmp: tmp.write_text(model_card(name, document), encoding="utf-8"))
    return paths


def _write_atomic(path: Path, write: Callable[[Path], Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # safetensors writes owner-only files; shipped assets are world-readable
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _vocab_to_dict(vocab: Vocab | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(vocab, Vocab):
        return vocab.to_dict()
    return {k: v.to_dict() if isinstance(v, Vocab) else v for k, v in vocab.items()}


def model_card(name: str, document: Mapping[str, Any]) -> str:
    """The markdown model card of a checkpoint document (the JSON :func:`save_checkpoint` writes)."""
    meta = dict(document.get("metadata", {}))
    config = document.get("model_config", {})
    lines = [f"# {meta.pop('title', name)}", ""]
    if "description" in meta:
        lines += [str(meta.pop("description")), ""]
    rows = [
        ("kind", document.get("kind")),
        ("parameters", f"{meta.pop('params'):,}" if "params" in meta else None),
        ("data", meta.pop("data", None)),
        ("steps", meta.pop("steps", None)),
        ("wall time", _seconds(meta.pop("wall_time_s", None))),
        ("device", meta.pop("device", None)),
        ("seed", meta.pop("seed", None)),
    ]
    lines += ["| | |", "| --- | --- |"]
    lines += [f"| {key} | {_cell(value)} |" for key, value in rows if value is not None]
    metrics = meta.pop("final_metrics", None)
    if isinstance(metrics, Mapping) and metrics:
        lines += ["", "## Final metrics", "", "| metric | value |", "| --- | --- |"]
        lines += [f"| {k} | {_cell(_number(v))} |" for k, v in metrics.items()]
    command = meta.pop("command", None)
    if command:
        lines += ["", "## Rebuild", "", "```", str(command), "```"]
    if meta:
        lines += ["", "## Other", "", "| | |", "| --- | --- |"]
        lines += [f"| {k} | {_cell(v)} |" for k, v in meta.items()]
    lines += ["", "## Model config", "", "```json", json.dumps(config, indent=2), "```", ""]
    return "\n".join(lines)


def _seconds(value: Any) -> str | None:
    if not isinstance(value, (int, float)):
        return None if value is None else str(value)
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min ({value:.0f} s)"


def _number(value: Any) -> Any:
    return f"{value:.4g}" if isinstance(value, float) else value


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


# ---- loading ----------------------------------------------------------------------------------------


def read_checkpoint_config(directory: str | os.PathLike[str], name: str) -> dict[str, Any]:
    """Read and validate ``name.json`` only (format, known kind, a config that builds); no weights.

    Returns:
        The JSON document.

    Raises:
        CheckpointError: missing or unreadable file, bad JSON, missing or unknown format or kind, or an
            invalid model config.
    """
    paths = checkpoint_paths(directory, name)
    document = _read_json(paths.config)
    _build(document["kind"], document["model_config"], where=f"{paths.config.name}: model_config")
    return document


def load_checkpoint(
    directory: str | os.PathLike[str], name: str, *, device: str | torch.device = "cpu"
) -> tuple[nn.Module, LoadedVocab, dict[str, Any]]:
    """Load a checkpoint written by :func:`save_checkpoint`, checking every file on the way.

    Args:
        directory: where the files are.
        name: the checkpoint's file stem.
        device: where to put the model.

    Returns:
        ``(model, vocab, document)``: the model in eval mode; a :class:`Vocab` (or ``{key: Vocab}`` for
        several vocabularies); the JSON document (``kind``, ``model_config``, ``metadata``, …).

    Raises:
        CheckpointError: a missing file, bad JSON, an unknown kind or format, an invalid config, a
            truncated or corrupt weights file, missing / unexpected tensors or a shape mismatch such as
            ``"blocks.0.attn.w_q.weight: file has (64, 32), config expects (64, 64)"``.

    Example:
        >>> model, vocab, doc = load_checkpoint("assets/checkpoints", "reverse-tiny")
    """
    paths = checkpoint_paths(directory, name)
    document = _read_json(paths.config)
    with BUILD_LOCK:  # not while another thread's from_pretrained patches the process (engine.builds)
        model = _build(document["kind"], document["model_config"], where=f"{paths.config.name}: model_config")
    vocab = _read_vocab(document.get("vocab"), paths.config.name)
    vocab_size = getattr(getattr(model, "cfg", None), "vocab_size", None)
    if isinstance(vocab, Vocab) and isinstance(vocab_size, int) and len(vocab) > vocab_size:
        raise CheckpointError(
            f"{paths.config.name}: the vocabulary has {len(vocab)} tokens but the model only {vocab_size} ids"
        )
    tensors = _read_tensors(paths.weights, model)
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    tied = set(model.state_dict()) - set(unique_tensors(model))
    if unexpected or set(missing) - tied:  # cannot happen after _read_tensors; kept as a guard
        raise CheckpointError(
            f"{paths.weights.name}: tensors do not fit the model: missing {missing}, unexpected {unexpected}"
        )
    return model.to(device).eval(), vocab, document


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise CheckpointError(f"{path.name}: the checkpoint's config file is missing from its folder")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise CheckpointError(f"{path.name}: not a text file (byte {err.start} is not UTF-8)") from err
    except json.JSONDecodeError as err:
        raise CheckpointError(
            f"{path.name}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from err
    except OSError as err:
        raise CheckpointError(f"{path.name}: cannot be read: {error_reason(err)}") from err
    if not isinstance(document, dict):
        raise CheckpointError(f"{path.name}: expected a JSON object at the top, got {type(document).__name__}")
    fmt = document.get("format")
    if fmt is None:
        raise CheckpointError(f'{path.name}: the "format" field is missing (expected "{FORMAT}")')
    if fmt != FORMAT:
        raise CheckpointError(f"{path.name}: unsupported format {fmt!r}; this version reads {FORMAT!r}")
    kind = document.get("kind")
    if kind not in KINDS:
        raise CheckpointError(f"{path.name}: unknown model kind {kind!r}; known kinds: {sorted(KINDS)}")
    if not isinstance(document.get("model_config"), dict):
        raise CheckpointError(f'{path.name}: "model_config" must be a JSON object')
    if not isinstance(document.get("metadata", {}), dict):
        raise CheckpointError(f'{path.name}: "metadata" must be a JSON object')
    return document


def _read_vocab(data: Any, where: str) -> LoadedVocab:
    try:
        if isinstance(data, dict) and "tokens" in data:
            return Vocab.from_dict(data)
        if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
            return {k: Vocab.from_dict(v) for k, v in data.items()}
    except ValueError as err:
        raise CheckpointError(f"{where}: invalid vocabulary: {err}") from err
    raise CheckpointError(f'{where}: "vocab" must be {{"tokens": [...]}} or {{name: {{"tokens": [...]}}}}')


def _build(kind: str, config: Mapping[str, Any], *, where: str) -> nn.Module:
    if kind not in KINDS:
        raise CheckpointError(f"unknown model kind {kind!r}; known kinds: {sorted(KINDS)}")
    try:
        with torch.random.fork_rng(devices=[]):  # building must not move the caller's random state
            return KINDS[kind].build(config)
    except (ValueError, TypeError) as err:
        raise CheckpointError(f"{where} is invalid: {err}") from err


def unique_tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with each shared (tied) tensor once, under its first name."""
    seen: set[int] = set()
    out = {}
    for key, value in module.state_dict(keep_vars=True).items():
        if id(value) not in seen:
            seen.add(id(value))
            out[key] = value
    return out


def _compare(expected: Mapping[str, tuple[int, ...]], found: Mapping[str, tuple[int, ...]]) -> str:
    """A readable list of differences between two ``{name: shape}`` tables ("" when equal)."""
    problems = [f"{k}: missing" for k in expected if k not in found]
    problems += [f"{k}: unexpected tensor" for k in found if k not in expected]
    problems += [
        f"{k}: file has {found[k]}, config expects {expected[k]}"
        for k in expected
        if k in found and tuple(found[k]) != tuple(expected[k])
    ]
    more = f" (and {len(problems) - _MAX_LISTED} more)" if len(problems) > _MAX_LISTED else ""
    return "; ".join(problems[:_MAX_LISTED]) + more


def _read_tensors(path: Path, model: nn.Module) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise CheckpointError(f"{path.name}: the checkpoint's weights file is missing from its folder")
    expected = unique_tensors(model)
    try:
        with safe_open(str(path), framework="pt") as f:
            found = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:  # a bad header or body, an unreadable file: a corrupt file
        raise CheckpointError(
            f"{path.name}: not a readable safetensors file (truncated or corrupt?): {error_reason(err)}"
        ) from err
    problems = _compare({k: tuple(v.shape) for k, v in expected.items()}, found)
    if problems:
        raise CheckpointError(f"{path.name}: {problems}")
    for key, value in tensors.items():
        want = expected[key].dtype
        if value.dtype != want:
            raise CheckpointError(f"{path.name}: {key}: file has dtype {value.dtype}, the model expects {want}")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise CheckpointError(f"{path.name}: {key} contains NaN or infinite values (corrupt file?)")
    return tensors
