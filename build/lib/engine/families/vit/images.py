"""How any image becomes what our tiny ViT reads: white strokes on black, values 0–1, ``S × S`` pixels.

scikit-learn's digits are 8×8 images with values 0–16: the UCI authors drew each digit as a 32×32
bitmap, scaled so its height fills the box, and counted the "on" pixels of each 4×4 block.
:func:`preprocess` brings any other image to that form the same way::

    x  = to_unit_range(image)               uint8 / 255, digits' 0–16 / 16, …
    x  = luma(x)                            colour → grey (ITU-R 601), alpha composited
    x  = 1 − x   if the border is light     dark strokes on paper → bright strokes on black
    x  = box_pool(centre(crop(x)), S)       crop to the strokes, pad to a square, average-pool

The model reads the digits at their own size, 8×8 with patches of 2×2 pixels: upsampling to 16×16 with 4×4
patches would give the same 16 patches with no new information, and bigger images would then differ from
the blurred training images.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from engine.families.vit.network import ViTConfig
from engine.images import MAX_SIDE, to_unit_range
from engine.records import EngineError


def _to_gray(x: np.ndarray, notices: list[str]) -> np.ndarray:
    """``[H, W]``, ``[H, W, 1|3|4]`` in 0–1 → ``[H, W]`` luminance; alpha composited over a contrasting background."""
    if x.ndim == 2:
        return x
    if x.shape[2] == 1:
        return x[:, :, 0]
    gray = x[:, :, :3] @ np.array([0.299, 0.587, 0.114])  # ITU-R 601 luma, as PIL's "L" mode
    notices.append("The colour image was converted to grayscale.")
    if x.shape[2] == 4:
        alpha = x[:, :, 3]
        opaque = alpha > 0.5
        # strokes drawn on a transparent canvas: put them on the background they contrast with
        background = 1.0 if not opaque.any() or gray[opaque].mean() < 0.5 else 0.0
        gray = alpha * gray + (1 - alpha) * background
    return gray


def _border(x: np.ndarray) -> np.ndarray:
    w = max(1, round(0.05 * min(x.shape)))
    return np.concatenate([x[:w].ravel(), x[-w:].ravel(), x[:, :w].ravel(), x[:, -w:].ravel()])


def _fit_like_digits(x: np.ndarray, size: int, notices: list[str]) -> np.ndarray:
    """A bigger (or smaller) image → ``size × size`` the way the UCI digits were made.

    Background to 0 and the brightest stroke to 1; crop to the strokes (pixels above 0.25); pad the
    shorter side to a square, centred; average-pool (PIL's BOX filter, the UCI 4×4 block count) to
    ``size``; stretch so the brightest pixel is 1 (almost every training digit reaches 16/16).
    """
    from PIL import Image

    background = float(np.median(_border(x)))
    span = float(x.max()) - background
    if span < 0.05:
        notices.append("The image is blank: it has no strokes to read.")
        return np.zeros((size, size))
    x = np.clip((x - background) / span, 0.0, 1.0)
    rows, cols = np.nonzero(x > 0.25)
    x = x[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
    h, w = x.shape
    side = max(h, w)
    square = np.zeros((side, side))
    top, left = (side - h) // 2, (side - w) // 2
    square[top : top + h, left : left + w] = x
    method = Image.Resampling.BOX if side >= size else Image.Resampling.BILINEAR
    small = np.asarray(Image.fromarray(square.astype(np.float32)).resize((size, size), method), dtype=np.float64)
    notices.append(f"The image was cropped to its strokes, centred on a square and shrunk to {size}×{size} pixels.")
    return small / small.max() if small.max() > 0 else small


def preprocess(image: Any, cfg: ViTConfig | None = None) -> tuple[torch.Tensor, tuple[str, ...]]:
    """Bring an image to what the model was trained on: white strokes on black, values 0–1, ``S × S``.

    Steps:
        1. values to 0–1: uint8 / 255; bool as 0/1; other types by range: 0–1 as is, 0–16 / 16 (the
           digits' own scale, so ``load_digits().images`` work as they are), 0–255 / 255, else min–max.
        2. colour to grayscale (ITU-R 601 luma); RGBA composited over white, or over black when the
           opaque strokes are light.
        3. dark strokes on a light background (photos, scans, drawings: the border is brighter than
           0.5 on average) are inverted, with a notice.
        4. an image not already ``S × S`` is cropped to its strokes, centred on a square and
           average-pooled to ``S × S`` (how the UCI digits were made), with a notice. Images wider or
           taller than ``MAX_SIDE`` are first read every k-th pixel (bounded memory and time).

    Args:
        image: a numpy array ``[H, W]`` or ``[H, W, 1|3|4]``, bool, integer or float.
        cfg: the model's config (default: the digits model, 8×8 grayscale). A 3-channel model gets
            the grayscale image in every channel.

    Returns:
        ``(tensor (C, S, S) float32 in 0–1, notices)``.

    Raises:
        EngineError: not an array, no pixels, a wrong shape, or NaN / infinite values.
    """
    if cfg is None:
        cfg = ViTConfig()
    if not isinstance(image, np.ndarray):
        raise EngineError(f"A ViT reads an image (a numpy array or a PIL image), not {type(image).__name__}.")
    if image.dtype.kind not in "biuf":
        raise EngineError(f"The image must hold numbers, not {image.dtype} values.")
    if image.size == 0:
        raise EngineError(f"The image is empty (shape {image.shape}).")
    if not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] in (1, 3, 4))):
        raise EngineError(f"Expected an image [H, W] or [H, W, 3|4] (RGB / RGBA), got shape {image.shape}.")
    if image.dtype.kind == "f" and not np.isfinite(image).all():
        raise EngineError("The image contains NaN or infinite values.")
    stride = -(-max(image.shape[:2]) // MAX_SIDE)  # ceil: a 4000×3000 photo is read every 4th pixel
    notices: list[str] = []
    x = _to_gray(to_unit_range(image[::stride, ::stride]), notices)
    if _border(x).mean() > 0.5:
        x = 1.0 - x
        notices.append("The image was inverted so strokes are bright like the training digits.")
    if x.shape != (cfg.image_size, cfg.image_size):
        x = _fit_like_digits(x, cfg.image_size, notices)
    tensor = torch.from_numpy(np.clip(x, 0.0, 1.0).astype(np.float32))[None]  # (1, S, S)
    return tensor.expand(cfg.channels, -1, -1).contiguous(), tuple(notices)
