"""Hugging Face ViT and DeiT models: Q, K, V recorded from their attention calls, attention computed lazily.

ViT and DeiT in transformers 5.23 call ``transformers.AttentionInterface`` like the text families, so
they are loaded with ``attn_implementation="ap_capture"`` and read by the same capture path
(:mod:`engine.capture.hf`): each layer's call records ``query``, ``key``, ``value``
``[H, T, d_head]`` and ``scaling`` and runs transformers' SDPA. The attention modules carry no
``layer_idx``, so a call is matched to its layer by module identity. The
:class:`~engine.traces.vision.VisionTrace` computes, per head::

    pattern = softmax(Q Kᵀ · scaling)           # scaling = the attention module's own (d_head^−½)

over the sequence ``[CLS] (+ [DIST] for distilled DeiT) + patches`` (row-major). No mask: every
token sees every token. Pixels go through the model's own image processor (resize, rescale,
normalise, from ``preprocessor_config.json``); the trace's ``image`` is that input with the
normalisation undone, ``seen = pixel_values · std + mean`` (0–1), so an occlusion check can hide
patches in it and :meth:`HFViTAdapter.classify` normalises it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.capture.contribution import attention_norms
from engine.capture.hf import layer_records, recording, register
from engine.capture.transfer import to_host
from engine.families.hf_api import hf
from engine.families.hub import sdpa_builder
from engine.images import to_unit_range
from engine.model import Model, pick_device
from engine.records import EngineError, ModelSpec, ModelUnavailableError, Tokens
from engine.text import error_reason, quote_input
from engine.traces.attention import AttentionTrace
from engine.traces.vision import VisionTrace

WITH_TEACHER = "DeiTForImageClassificationWithTeacher"


def attention_modules(module: nn.Module) -> list[nn.Module]:
    """Every self-attention module (one per layer, in order): the ones holding q/k/v projections,
    which are the modules that call the attention function."""
    found = [m for _, m in module.named_modules() if all(hasattr(m, n) for n in ("q_proj", "k_proj", "v_proj"))]
    if not found:
        raise ModelUnavailableError("This ViT has no attention modules with q_proj/k_proj/v_proj; unsupported version.")
    return found


def to_rgb_uint8(image: np.ndarray) -> np.ndarray:
    """Any image array the engine accepts → ``[H, W, 3]`` uint8 (grey repeated, alpha over white)."""
    if not isinstance(image, np.ndarray) or image.dtype.kind not in "biuf" or image.size == 0:
        raise EngineError("A ViT reads an image: a non-empty numpy array [H, W] or [H, W, 3|4].")
    if not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] in (1, 3, 4))):
        raise EngineError(f"Expected an image [H, W] or [H, W, 3|4] (RGB / RGBA), got shape {image.shape}.")
    if image.dtype.kind == "f" and not np.isfinite(image).all():
        raise EngineError("The image contains NaN or infinite values.")
    x = to_unit_range(image)
    if x.ndim == 2:
        x = x[:, :, None]
    if x.shape[2] == 4:
        x = x[:, :, 3:] * x[:, :, :3] + (1.0 - x[:, :, 3:])
    if x.shape[2] == 1:
        x = np.repeat(x, 3, axis=2)
    return np.clip(np.rint(x * 255.0), 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class HFViTAdapter:
    """Tracing for Hugging Face ViT / DeiT image models (with or without a classification head)."""

    family: str = "vit"

    # ---- pixels ------------------------------------------------------------------------------
    @staticmethod
    def _norm(processor) -> tuple[np.ndarray, np.ndarray]:
        if getattr(processor, "do_normalize", False):
            return np.asarray(processor.image_mean, np.float32), np.asarray(processor.image_std, np.float32)
        return np.zeros(3, np.float32), np.ones(3, np.float32)

    def pixel_values(self, model: Model, image: np.ndarray) -> torch.Tensor:
        """The model's own image processor on an RGB uint8 image → ``(1, 3, S, S)``."""
        return model.tokenizer(images=to_rgb_uint8(image), return_tensors="pt")["pixel_values"].float()

    @staticmethod
    def _has_head(module: nn.Module) -> bool:
        return hasattr(module, "classifier") or hasattr(module, "cls_classifier")

    def _labels(self, module: nn.Module) -> tuple[str, ...]:
        if not self._has_head(module):
            return ()
        id2label = getattr(module.config, "id2label", None) or {}
        return tuple(str(id2label.get(i, id2label.get(str(i), f"class {i}"))) for i in range(module.config.num_labels))

    def _probs(self, module: nn.Module, out) -> np.ndarray:
        logits = getattr(out, "logits", None) if self._has_head(module) else None
        if logits is None:
            return np.zeros(0, np.float32)
        return torch.softmax(logits[0].float(), dim=-1).cpu().numpy().astype(np.float32)

    # ---- trace -------------------------------------------------------------------------------
    def trace(self, model: Model, image: Any, *, causal: bool | None = None, max_tokens: int = 0) -> VisionTrace:
        """Classify one image and capture Q/K/V of every layer (``causal``/``max_tokens`` are ignored)."""
        array = np.asarray(image) if not isinstance(image, np.ndarray) else image
        pixels = self.pixel_values(model, array)  # (1, 3, S, S)
        config = model.module.config

        def forward(module: nn.Module, device: torch.device):
            with recording() as rec:
                out = module(pixel_values=pixels.to(device))
            modules = attention_modules(module)
            records = layer_records(rec.calls, modules)
            for attention, record in zip(modules, records):  # ‖v W_O^h‖ through each layer's o_proj
                record.out_norms = attention_norms(attention, record.value)
            return to_host(records), self._probs(module, out), self._labels(module)

        (records, probs, labels), device, notice = model.run(forward)
        queries = tuple(r.query for r in records)
        scales = tuple(r.scale for r in records)
        side, patch = int(config.image_size), int(config.patch_size)
        grid = (side // patch, side // patch)
        n_tokens = queries[0].shape[1]
        prefix = n_tokens - grid[0] * grid[1]
        names = ("[CLS]", "[DIST]")[:prefix] if prefix <= 2 else tuple(f"[T{i}]" for i in range(prefix))
        strings = (*names, *(f"p{i}" for i in range(grid[0] * grid[1])))
        tokens = Tokens(
            strings=strings, ids=tuple(range(n_tokens)), special=(True,) * prefix + (False,) * (n_tokens - prefix)
        )
        attention = AttentionTrace(
            model_id=model.spec.id,
            family="vit",
            tokens=tokens,
            key_tokens=tokens,
            queries=queries,
            keys=tuple(r.key for r in records),
            values=tuple(r.value for r in records),
            value_out_norms=tuple(r.out_norms for r in records),
            scales=scales,
            causal=False,
            n_input_tokens=n_tokens,
            device=device.type,
        )
        seen, notices = self.seen_image(model, pixels, labels, notice)
        return VisionTrace(
            model_id=model.spec.id,
            image=seen,
            patch_size=patch,
            grid=grid,
            attention=attention,
            labels=labels,
            probs=probs,
            notices=notices,
        )

    def seen_image(
        self, model: Model, pixels: torch.Tensor, labels: tuple[str, ...], notice: str | None
    ) -> tuple[np.ndarray, tuple[str, ...]]:
        """The image as the model saw it, ``[S, S, 3]`` (0–1, the processor's normalisation undone), and the
        trace's notices: the resizing, a missing class head, and ``notice`` from the run (if any)."""
        mean, std = self._norm(model.tokenizer)
        seen = np.clip(pixels[0].permute(1, 2, 0).numpy() * std + mean, 0.0, 1.0).astype(np.float32)  # (S, S, 3)
        notices = [
            f"The image was resized to {seen.shape[0]}×{seen.shape[1]} pixels by the model's own image processor."
        ]
        if not labels:
            notices.append("This checkpoint has no classification head: attention only, no prediction.")
        return seen, (*notices, notice) if notice else tuple(notices)

    def classify(self, model: Model, seen: np.ndarray) -> np.ndarray:
        """Probabilities for an image in the trace's ``image`` form (``[S, S, 3]``, 0–1), no resizing."""
        mean, std = self._norm(model.tokenizer)
        x = (np.asarray(seen, np.float32) - mean) / std
        pixels = torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))[None]  # (1, 3, S, S)

        def forward(module: nn.Module, device: torch.device) -> np.ndarray:
            return self._probs(module, module(pixel_values=pixels.to(device)))

        return model.run(forward)[0]

    def occlusion_fill(self, model: Model) -> np.ndarray:
        """A hidden patch becomes the processor's mean colour (0 after normalisation)."""
        return self._norm(model.tokenizer)[0]


def image_processor(path: Path, model_id: str) -> Any:
    """The image processor of the folder ``path`` (how the model's pixels are prepared).

    Raises:
        ModelUnavailableError: no ``preprocessor_config.json``, or one that does not load.
    """
    if not (path / "preprocessor_config.json").is_file():
        raise ModelUnavailableError(
            f"{quote_input(model_id)} has no preprocessor_config.json, so its pixels cannot be prepared."
        )
    try:
        return hf().AutoImageProcessor.from_pretrained(path)
    except Exception as err:  # noqa: BLE001 — any loader error (see hub.sdpa_builder) means this model cannot load
        raise ModelUnavailableError(
            f"The image processor of {quote_input(model_id)} cannot be loaded: {error_reason(err)}"
        ) from err


def load_hf_vit(
    model_id: str, path: Path, config: dict, *, spec: ModelSpec | None = None, device: torch.device | None = None
) -> Model:
    """Load a ViT/DeiT folder (config, safetensors weights, ``preprocessor_config.json``): :func:`load_image_model`
    with the :class:`HFViTAdapter`."""
    return load_image_model(model_id, path, config, HFViTAdapter(), spec=spec, device=device)


def load_image_model(
    model_id: str,
    path: Path,
    config: dict,
    adapter: Any,
    *,
    spec: ModelSpec | None = None,
    device: torch.device | None = None,
) -> Model:
    """Load a Hugging Face image model folder (config, safetensors weights, ``preprocessor_config.json``) with
    its image processor, traced by ``adapter`` (ViT/DeiT: :class:`HFViTAdapter`; Swin:
    :class:`engine.families.hf_swin.HFSwinAdapter`).

    Args:
        model_id: the id the user gave (for messages and the trace).
        path: a local folder (``engine.families.hub.resolve``).
        config: its parsed ``config.json``.

    Raises:
        ModelUnavailableError: no image processor config, weights that do not load.
    """
    api = hf()
    architectures = config.get("architectures") or []
    if WITH_TEACHER in architectures:
        from transformers import DeiTForImageClassificationWithTeacher as cls
    elif any(a.endswith("ForImageClassification") for a in architectures):
        cls = api.AutoModelForImageClassification
    else:
        cls = api.AutoModel
    processor = image_processor(path, model_id)
    device = device or pick_device()
    build = sdpa_builder(cls, path, model_id, register())
    module = build(device)
    spec = spec or ModelSpec(id=model_id, family="vit", label=model_id, offline=True)
    return Model(
        spec=spec,
        module=module,
        tokenizer=processor,
        adapter=adapter,
        device=device,
        max_positions=0,
        reload=build,
        info={"source": str(path), "architecture": config.get("model_type")},
    )
