"""Tracing our own ViT (:mod:`engine.families.vit.network`) and loading it from a checkpoint.

:func:`trace_vit` classifies one image (brought to the model's input form by
:func:`engine.families.vit.images.preprocess`) with one forward pass that captures Q, K and V of every
layer; :class:`ViTAdapter` is what ``engine.trace(model, image)`` uses; :func:`load_model` loads a ``vit``
checkpoint.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.capture import capture
from engine.capture.transfer import to_host
from engine.families.own import captured_heads, checkpoint_model, qkv_names
from engine.families.vit.images import preprocess
from engine.families.vit.network import ViT, ViTConfig
from engine.model import Model
from engine.records import EngineError, ModelSpec, Tokens
from engine.traces.attention import AttentionTrace
from engine.traces.vision import VisionTrace

UNSURE_BELOW = 0.5  # top probability under which the trace says the model is unsure


def patch_tokens(cfg: ViTConfig) -> Tokens:
    """Display tokens ``"[CLS]", "p0", "p1", …`` (row-major patches); ids are the positions."""
    strings = ("[CLS]", *(f"p{i}" for i in range(cfg.n_patches)))
    return Tokens(strings=strings, ids=tuple(range(cfg.n_tokens)), special=(True,) + (False,) * cfg.n_patches)


def trace_vit(model: ViT, image: Any, *, model_id: str) -> VisionTrace:
    """Classify one image with one no-grad forward pass, capturing Q, K and V of every layer.

    The model is only read; hooks are attached for the call only (callers sharing the model hold its
    lock). The fused ``sdpa`` attention runs: patterns are computed lazily by the trace.

    Args:
        model: the ViT.
        image: a numpy array, see :func:`preprocess`.
        model_id: the id to record in the trace.

    Returns:
        A :class:`VisionTrace`: the image as the model saw it (``[S, S]``, or ``[S, S, 3]``), patch
        size, grid, class probabilities and the self-attention over ``[CLS] + patches``.

    Raises:
        EngineError: the image cannot be read (see :func:`preprocess`).
    """
    cfg = model.cfg
    pixels, notices = preprocess(image, cfg)  # (C, S, S)
    prefixes = [f"blocks.{layer}.attn" for layer in range(cfg.n_layers)]
    names = qkv_names(prefixes)
    device = next(model.parameters()).device
    with torch.no_grad(), capture(model, names=names) as acts:
        logits = model(pixels[None].to(device), attn_impl="sdpa")  # (1, n_classes)
        heads = captured_heads(acts, prefixes, [block.attn for block in model.blocks])
        probs = torch.softmax(logits[0].float(), dim=-1)  # (n_classes,)
    heads, probs, pos = to_host((heads, probs, model.pos_embed.weight))  # one copy from the model's device
    tokens = patch_tokens(cfg)
    attention = AttentionTrace(
        model_id=model_id,
        family="vit",
        tokens=tokens,
        key_tokens=tokens,
        **heads,
        causal=False,
        pos_encoding=pos,
        pos_encoding_kind="learned",
        n_input_tokens=cfg.n_tokens,
        device=device.type,
    )
    if float(probs.max()) < UNSURE_BELOW:
        notices += (f"The model is unsure (top probability {probs.max():.0%}): it only knows {', '.join(cfg.labels)}.",)
    image_np = pixels[0].numpy() if cfg.channels == 1 else pixels.permute(1, 2, 0).numpy()
    return VisionTrace(
        model_id=model_id,
        image=image_np.copy(),
        patch_size=cfg.patch_size,
        grid=(cfg.grid, cfg.grid),
        attention=attention,
        labels=cfg.labels,
        probs=probs.astype(np.float32),
        notices=notices,
    )


def _as_array(image: Any) -> np.ndarray:
    """A PIL image → numpy (palette, 1-bit and two-channel modes converted first); arrays pass through."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - pillow comes with streamlit
        Image = None
    if Image is not None and isinstance(image, Image.Image):
        if image.mode == "1":
            image = image.convert("L")
        elif image.mode in ("P", "PA", "LA", "La", "RGBa"):
            image = image.convert("RGBA")
        elif image.mode in ("CMYK", "YCbCr", "LAB", "HSV"):
            image = image.convert("RGB")
        return np.asarray(image)
    if not isinstance(image, np.ndarray):
        raise EngineError(
            f"A ViT reads an image: pass a numpy array [H, W] or [H, W, 3|4], or a PIL image, "
            f"not {type(image).__name__}."
        )
    return image


@dataclass(frozen=True)
class ViTAdapter:
    """Tracing for our own :class:`ViT`; ``engine.trace(model, image)`` lands here.

    ``causal`` and ``max_tokens`` are accepted for the common signature and ignored: a ViT's
    attention is never masked and its sequence length is fixed by the image size.
    """

    def trace(self, model: Model, image: Any, *, causal: bool | None = None, max_tokens: int = 0) -> VisionTrace:
        array = _as_array(image)
        trace, device, notice = model.run(lambda module, _device: trace_vit(module, array, model_id=model.spec.id))
        notices = trace.notices + ((notice,) if notice else ())
        attention = dataclasses.replace(trace.attention, device=device.type)
        return dataclasses.replace(trace, attention=attention, notices=notices)

    def classify(self, model: Model, seen: np.ndarray) -> np.ndarray:
        """Class probabilities for an image already in the model's input form (``VisionTrace.image``:
        ``[S, S]`` or ``[S, S, 3]`` in 0–1), with no preprocessing; used by occlusion checks."""
        cfg = model.module.cfg
        pixels = torch.tensor(np.asarray(seen, dtype=np.float32))  # a copy: a cached trace's image is read-only
        pixels = pixels[None] if pixels.ndim == 2 else pixels.permute(2, 0, 1)  # (C, S, S)
        pixels = pixels.expand(cfg.channels, -1, -1)

        def forward(module: nn.Module, device: torch.device) -> np.ndarray:
            logits = module(pixels[None].to(device), attn_impl="sdpa")  # (1, n_classes)
            return torch.softmax(logits[0].float(), dim=-1).cpu().numpy()

        return model.run(forward)[0]

    def occlusion_fill(self, model: Model) -> float:
        """The value a hidden patch gets: 0, the black background of the training digits."""
        return 0.0


def load_model(spec: ModelSpec, folder: Path, device: torch.device | None = None) -> Model:
    """Load one of our ViT checkpoints as a read-only :class:`Model` (``tokenizer`` = the class labels).

    Raises:
        CheckpointError: a missing, corrupt or mismatched file (readable message).
    """
    return checkpoint_model(
        spec,
        folder,
        device,
        adapter=ViTAdapter(),
        architecture="own ViT",
        max_positions=lambda module: module.cfg.n_tokens,
        tokenizer=lambda module, _vocab: module.cfg.labels,
    )
