"""Loading Hugging Face text models from a local folder, the local cache, or the Hub.

Rules: safetensors weights only (never pickle), no ``trust_remote_code``, and a hub id that cannot
be fetched fails within seconds with a message that says why (offline, unknown id, unsupported
architecture) instead of hanging.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from engine.model import Model, freeze, pick_device
from engine.pretrained.adapters import ADAPTERS
from engine.pretrained.hf_api import hf
from engine.types import ModelSpec, ModelUnavailableError

VIT_TYPES = ("vit", "deit")  # routed to engine.pretrained.vit_hf (imported only for them)

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?$")
PROBE_TIMEOUT_S = 5.0
_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "merges.txt", "vocab.*"]


def _offline_env() -> bool:
    return any(os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"} for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def resolve(model_id: str) -> Path:
    """A local folder holding the model's config, weights and tokenizer.

    Args:
        model_id: a folder path, or a Hub id such as ``"gpt2"`` or ``"google-bert/bert-base-uncased"``.

    Raises:
        ModelUnavailableError: not a folder and not a valid id; offline and not cached; not on the Hub.
    """
    try:
        path = Path(model_id).expanduser()
        is_dir = path.is_dir()
    except (OSError, ValueError, RuntimeError):  # a name too long for the file system, an unknown ~user
        path, is_dir = Path(model_id), False
    if is_dir:
        if not (path / "config.json").is_file():
            raise ModelUnavailableError(f"The folder {path} has no config.json, so it is not a model folder.")
        return path
    if model_id.startswith(("/", ".", "~")) or not HUB_ID.match(model_id) or ".." in model_id:
        raise ModelUnavailableError(
            f"{model_id!r} is neither a model folder on this machine nor a Hugging Face Hub id like 'gpt2'."
        )
    from huggingface_hub import model_info, snapshot_download

    try:
        return Path(snapshot_download(model_id, allow_patterns=_FILES, local_files_only=True))
    except Exception:
        pass  # not cached: go to the network below
    if _offline_env():
        raise ModelUnavailableError(
            f"'{model_id}' is not downloaded on this machine and the Hub is switched off (HF_HUB_OFFLINE). "
            "Pick one of the offline models."
        )
    try:
        info = model_info(model_id, timeout=PROBE_TIMEOUT_S)
    except Exception as err:  # connection errors, 401/404 from the Hub
        name = type(err).__name__
        if "NotFound" in name or "Gated" in name or "Unauthorized" in name or "401" in str(err) or "404" in str(err):
            raise ModelUnavailableError(f"There is no public model '{model_id}' on the Hugging Face Hub.") from None
        raise ModelUnavailableError(
            f"Cannot reach the Hugging Face Hub to download '{model_id}' (no internet here?). "
            "Pick one of the offline models."
        ) from None
    files = {s.rfilename for s in (info.siblings or [])}
    if not any(f.endswith(".safetensors") for f in files):
        raise ModelUnavailableError(f"'{model_id}' has no safetensors weights; only safetensors are loaded (no pickle).")
    try:
        return Path(snapshot_download(model_id, allow_patterns=_FILES))
    except Exception as err:
        raise ModelUnavailableError(f"Downloading '{model_id}' failed: {type(err).__name__}.") from None


def sdpa_builder(cls, path: Path, model_id: str) -> Callable[[torch.device], nn.Module]:
    """``build(device)``: load ``cls`` from ``path`` (safetensors only, SDPA attention), frozen, on ``device``.

    ``Model.reload`` calls it again to make a CPU copy after a CUDA out-of-memory error.
    """

    def build(dev: torch.device) -> nn.Module:
        try:
            module = cls.from_pretrained(path, use_safetensors=True, attn_implementation="sdpa")
        except Exception as err:
            raise ModelUnavailableError(f"Loading '{model_id}' failed: {err}") from None
        return freeze(module.to(dev))

    return build


def load_hf(model_id: str, *, spec: ModelSpec | None = None, device: torch.device | None = None) -> Model:
    """Load a BERT-family or GPT-2-family model with its tokenizer, or a ViT/DeiT with its image processor.

    Args:
        model_id: folder or Hub id (see :func:`resolve`).
        spec: the catalog entry to report; defaults to one built from the id and architecture.
        device: defaults to CUDA when present, else CPU.

    Returns:
        A read-only :class:`engine.model.Model`.
    """
    path = resolve(model_id)
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as err:
        raise ModelUnavailableError(f"The model's config.json cannot be read: {err}") from None
    if not isinstance(config, dict):
        raise ModelUnavailableError("The model's config.json is not a JSON object, so it is not a model config.")
    model_type = config.get("model_type", "?")
    if model_type in VIT_TYPES:  # image models: their own adapter and loader
        from engine.pretrained.vit_hf import load_hf_vit

        return load_hf_vit(model_id, path, config, spec=spec, device=device)
    adapter = ADAPTERS.get(model_type)
    if adapter is None:
        raise ModelUnavailableError(
            f"'{model_id}' is a {model_type!r} model; supported here: {', '.join(sorted((*ADAPTERS, *VIT_TYPES)))}."
        )
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ModelUnavailableError(f"'{model_id}' uses {config['position_embedding_type']!r} positions, not supported yet.")

    api = hf()  # slow import: only here
    cls = api.AutoModelForCausalLM if adapter.family == "decoder" else api.AutoModel
    device = device or pick_device()

    build = sdpa_builder(cls, path, model_id)

    try:
        tokenizer = api.AutoTokenizer.from_pretrained(path)
    except Exception as err:
        raise ModelUnavailableError(f"The tokenizer of '{model_id}' cannot be loaded: {err}") from None
    module = build(device)
    max_pos = int(config.get("max_position_embeddings") or config.get("n_positions") or 512)
    if model_type in {"roberta", "xlm-roberta", "camembert"}:
        max_pos -= 2  # positions start after the padding index
    spec = spec or ModelSpec(id=model_id, family=adapter.family, label=model_id, offline=True)
    return Model(
        spec=spec,
        module=module,
        tokenizer=tokenizer,
        adapter=adapter,
        device=device,
        max_positions=max_pos,
        reload=build,
        info={"source": str(path), "architecture": model_type},
        default_causal=adapter.default_causal(module.config),  # read once, before any session uses it
    )
