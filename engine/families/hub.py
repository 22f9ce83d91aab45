"""Loading Hugging Face models from a local folder, the local cache, or the Hub (every family in the table).

Rules: safetensors weights only (never pickle), no ``trust_remote_code``, and a hub id that cannot
be fetched fails within seconds with a message that says why (offline, unknown id, unsupported
architecture) instead of hanging. Messages name the id as typed (cut to 80 characters), never a
folder it resolved to.

With a server's :class:`engine.policy.ServerPolicy` (what the app passes), a folder must lie inside
the admin's directories, Hub ids must be switched on, a download is measured from the Hub's file
sizes and refused above the cap before it starts, and one download runs at a time in the process (a
second is refused at once: a student gets "try again in a minute" instead of a page that hangs).
Without a policy, a second download waits for the first.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from engine.builds import BUILD_LOCK  # one build at a time per process: engine/builds.py
from engine.families import HUB_TYPES, hub_record
from engine.families import resolve as resolve_name
from engine.families.hf_api import hf
from engine.model import Model, freeze
from engine.policy import GB, ServerPolicy
from engine.records import ModelSpec, ModelUnavailableError
from engine.text import error_reason, quote_input

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?$")
PROBE_TIMEOUT_S = 5.0
#: the loader of a causal LM whose ``model_type`` the table lacks (imported when one is loaded)
UNVERIFIED = "engine.families.hf_text.unverified:load_unverified"
_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "merges.txt", "vocab.*"]


def _offline_env() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


#: one Hub download at a time in this process (a second one is refused when a policy is given)
_DOWNLOAD = threading.Lock()
DOWNLOAD_BUSY = "Another model is downloading on this server (one at a time); try again in a minute."


def is_hub_id(model_id: str) -> bool:
    """Whether ``model_id`` has the shape of a Hub id (``gpt2``, ``org/name``); says nothing about the Hub."""
    return bool(HUB_ID.match(model_id)) and ".." not in model_id and not model_id.startswith((".", "~"))


def _path_like(model_id: str) -> bool:
    return model_id.startswith(("/", "~", ".")) or (("/" in model_id or "\\" in model_id) and not is_hub_id(model_id))


def resolve(model_id: str, policy: ServerPolicy | None = None) -> Path:
    """A local folder holding the model's config, weights and tokenizer.

    Args:
        model_id: a folder path, or a Hub id such as ``"gpt2"`` or ``"google-bert/bert-base-uncased"``.
        policy: a shared server's rules (:class:`engine.policy.ServerPolicy`): folders only inside its
            allowed directories, given as paths (``/…``, ``~/…``, ``./…``; anything shaped like a Hub id
            is one), Hub ids only while it allows them, downloads capped in size and one at a time.
            None (the default, for a caller on their own machine): any folder, any Hub id.

    Raises:
        ModelUnavailableError: not a folder and not a valid id; refused by ``policy``; offline and not
            cached; not on the Hub.
    """
    if policy is not None:
        if _path_like(model_id):
            return _model_folder(policy.folder(model_id), model_id)
        if is_hub_id(model_id):
            policy.check_hub()
            return _hub_snapshot(model_id, policy)
        raise ModelUnavailableError(
            f"{quote_input(model_id)} is neither a model folder nor a Hugging Face Hub id like 'gpt2'."
        )
    try:
        path = Path(model_id).expanduser()
        is_dir = path.is_dir()
    except (OSError, ValueError, RuntimeError):  # a name too long for the file system, an unknown ~user
        path, is_dir = Path(model_id), False
    if is_dir:
        return _model_folder(path, model_id)
    if model_id.startswith(("/", ".", "~")) or not is_hub_id(model_id):
        raise ModelUnavailableError(
            f"{quote_input(model_id)} is neither a model folder on this machine nor a Hugging Face Hub id like 'gpt2'."
        )
    return _hub_snapshot(model_id, None)


def _model_folder(path: Path, model_id: str) -> Path:
    if not (path / "config.json").is_file():
        raise ModelUnavailableError(f"{quote_input(model_id)} has no config.json, so it is not a model folder.")
    return path


def _hub_snapshot(model_id: str, policy: ServerPolicy | None) -> Path:
    """The Hub model's files from the local cache, or downloaded (within ``policy``'s size cap, one at a time)."""
    from huggingface_hub import model_info, snapshot_download

    shown = quote_input(model_id)
    try:
        return Path(snapshot_download(model_id, allow_patterns=_FILES, local_files_only=True))
    except (OSError, ValueError):  # LocalEntryNotFoundError (an OSError): not cached, go to the network below;
        pass  # HFValidationError (a ValueError): an id the Hub cannot have; the steps below answer it
    if _offline_env():
        raise ModelUnavailableError(
            f"{shown} is not downloaded on this machine and the Hub is switched off (HF_HUB_OFFLINE). "
            "Pick one of the offline models."
        )
    cap = None if policy is None else policy.hub_max_bytes
    try:
        info = model_info(model_id, timeout=PROBE_TIMEOUT_S, files_metadata=cap is not None)
    except Exception as err:  # noqa: BLE001 — httpx's transport errors are not OSError; its name sorts the message
        name = type(err).__name__
        if "NotFound" in name or "Gated" in name or "Unauthorized" in name or "401" in str(err) or "404" in str(err):
            raise ModelUnavailableError(f"There is no public model {shown} on the Hugging Face Hub.") from None
        raise ModelUnavailableError(
            f"Cannot reach the Hugging Face Hub to download {shown} (no internet here?). "
            "Pick one of the offline models."
        ) from None
    siblings = list(info.siblings or [])
    if not any(s.rfilename.endswith(".safetensors") for s in siblings):
        raise ModelUnavailableError(f"{shown} has no safetensors weights; only safetensors are loaded (no pickle).")
    if cap is not None:
        _check_size(siblings, cap, shown)
    revision = info.sha if isinstance(getattr(info, "sha", None), str) else None  # the files just measured
    if policy is None:
        _DOWNLOAD.acquire()
    elif not _DOWNLOAD.acquire(blocking=False):
        raise ModelUnavailableError(DOWNLOAD_BUSY)
    try:
        return Path(snapshot_download(model_id, allow_patterns=_FILES, revision=revision))
    except Exception as err:  # noqa: BLE001 — network (httpx, not OSError), disk full, a file gone: all one message
        raise ModelUnavailableError(f"Downloading {shown} failed: {type(err).__name__}.") from None
    finally:
        _DOWNLOAD.release()


def download_size(siblings) -> int | None:
    """Bytes of the files a download would fetch (those matching the download's patterns);
    None when the Hub did not say the size of one of them."""
    from huggingface_hub.utils import filter_repo_objects

    wanted = list(filter_repo_objects(siblings, allow_patterns=_FILES, key=lambda s: s.rfilename))
    sizes = [getattr(s, "size", None) for s in wanted]
    if any(not isinstance(size, int) or size < 0 for size in sizes):
        return None
    return sum(sizes)


def _check_size(siblings, cap: int, shown: str) -> None:
    size = download_size(siblings)
    if size is None:
        raise ModelUnavailableError(f"The Hub does not say how large {shown} is, so this server does not download it.")
    if size > cap:
        raise ModelUnavailableError(
            f"{shown} is {size / GB:.1f} GB to download; this server downloads models up to {cap / GB:g} GB. "
            "Pick a smaller model or one from the list."
        )


def sdpa_builder(cls, path: Path, model_id: str, attn: str = "sdpa") -> Callable[[torch.device], nn.Module]:
    """``build(device)``: load ``cls`` from ``path`` (safetensors only, SDPA attention), frozen, on ``device``.

    ``attn`` is the attention implementation: ``"sdpa"``, or ``"ap_capture"`` (SDPA that records Q, K,
    V for a trace: :mod:`engine.capture.hf`), which every engine loader passes: a model
    loaded with plain ``"sdpa"`` runs but cannot be traced. ``Model.reload`` calls it again to make a
    CPU copy after a CUDA out-of-memory error.
    """

    def build(dev: torch.device) -> nn.Module:
        with BUILD_LOCK:
            try:
                module, info = cls.from_pretrained(
                    path, use_safetensors=True, attn_implementation=attn, output_loading_info=True
                )
            # transformers' loaders, on files from anywhere, raise OSError, ValueError, KeyError, RuntimeError
            # (shapes), ImportError (a missing extra), the Rust tokenizers' bare Exception and more: each is "cannot
            # load this model", its cause chained for Python (every engine loader's tokenizer/processor catch says
            # the same)
            except Exception as err:  # noqa: BLE001 — any error of from_pretrained (above)
                raise ModelUnavailableError(f"Loading {quote_input(model_id)} failed: {error_reason(err)}") from err
            check_weights(info["missing_keys"], module, model_id)
            return freeze(module.to(dev))

    return build


#: weights a checkpoint may lack although the model has them: the pooler of BERT-likes (``AutoModel`` adds one;
#: sentence-embedding checkpoints such as MiniLM's are often saved without it, and no page reads it). transformers
#: already leaves out of its report what each family initialises itself: tied output embeddings (``lm_head``),
#: ``position_ids`` and rotary ``inv_freq`` buffers, BART's ``final_logits_bias``, Marian's sinusoidal positions.
MAY_BE_MISSING = re.compile(r"(^|\.)pooler\.")


def check_weights(missing: set[str] | list[str], module: nn.Module, model_id: str) -> None:
    """Refuse a model whose weights file lacks some of its tensors (other than :data:`MAY_BE_MISSING`):
    transformers would fill them with random numbers and run it under the model's name.

    Args:
        missing: the names ``from_pretrained(..., output_loading_info=True)`` reports as missing.
        module: the model built (its ``state_dict`` is every weight it has).

    Raises:
        ModelUnavailableError: naming how many of the model's weights are missing, and one of them.
    """
    lacking = sorted(name for name in missing if not MAY_BE_MISSING.search(name))
    if lacking:
        total = len(module.state_dict())
        raise ModelUnavailableError(
            f"{len(lacking)} of the {total} weights of {quote_input(model_id)} are missing from its weights file "
            f"(such as {quote_input(lacking[0])}): it would run with random numbers in their place, so it is not loaded."
        )


def byte_level(tokenizer) -> bool:
    """Whether a fast tokenizer decodes with byte-level BPE (its pieces are bytes shown as ``Ġ``…)."""
    try:
        spec = json.loads(tokenizer.backend_tokenizer.to_str())
    except (AttributeError, ValueError):  # a Python or SentencePiece tokenizer has no Rust backend to read
        return False
    return '"ByteLevel"' in json.dumps(spec.get("decoder")) or '"ByteLevel"' in json.dumps(spec.get("pre_tokenizer"))


def load_hf(
    model_id: str,
    *,
    spec: ModelSpec | None = None,
    device: torch.device | None = None,
    policy: ServerPolicy | None = None,
) -> Model:
    """Load a Hugging Face model of a family in the table (:data:`engine.families.TABLE`): a text model
    with its tokenizer, an encoder-decoder, or a ViT/DeiT with its image processor.

    The folder's ``config.model_type`` picks the family's record, whose loader reads it
    (:mod:`engine.families.hf_text.settings`, :mod:`~engine.families.hf_seq2seq`, :mod:`~engine.families.hf_vit`); a
    causal LM of a family the table lacks is read as its decoders are and checked on load (:data:`UNVERIFIED`).
    Every model is loaded with ``attn_implementation="ap_capture"``: transformers' SDPA, which also
    records each attention call's Q, K, V and scale while a trace asks for them
    (:mod:`engine.capture.hf`), so one capture path reads every family.

    Args:
        model_id: folder or Hub id (see :func:`resolve`).
        spec: the catalog entry to report; defaults to one built from the id and architecture.
        device: defaults to CUDA when present, else CPU.
        policy: a shared server's rules for folders and Hub ids (see :func:`resolve`); None: no limits.

    Returns:
        A read-only :class:`engine.model.Model`.
    """
    path = resolve(model_id, policy)
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as err:
        raise ModelUnavailableError(f"The model's config.json cannot be read: {error_reason(err)}") from None
    if not isinstance(config, dict):
        raise ModelUnavailableError("The model's config.json is not a JSON object, so it is not a model config.")
    model_type = config.get("model_type", "?")
    record = hub_record(model_type) if isinstance(model_type, str) else None
    if (
        record is None and isinstance(model_type, str) and model_type in hf().causal_lm_types
    ):  # read as the table's decoders, checked on load
        try:
            return resolve_name(UNVERIFIED)(model_id, path, config, spec=spec, device=device)
        except ModelUnavailableError as err:
            raise ModelUnavailableError(f"{err} The families checked here: {', '.join(sorted(HUB_TYPES))}.") from None
    if record is None:
        raise ModelUnavailableError(
            f"{quote_input(model_id)} is a {quote_input(model_type, 40)} model; supported here: {', '.join(sorted(HUB_TYPES))}."
        )
    return record.load(model_id, path, config, spec=spec, device=device)
