"""The Vision Transformer page's engine calls: images in, one shared trace per (model, image), its analyses."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import streamlit as st

import engine
from app.runtime.caches import TRACES, shared_map
from app.runtime.models import get_model, model_pass, policy, trained_model
from engine import EngineError, VisionTrace, WindowTrace, samples
from engine.analysis import vision
from engine.analysis.rollout import fuse_heads
from engine.images import read_image
from engine.traces.vision import WindowRow, window_row


@dataclass(frozen=True)
class Rollout:
    """How the rollout is taken: head ``fusion``, the ``discard`` ratio and its ``rule`` (``DISCARD_RULES``)."""

    fusion: str = "mean"
    discard: float = 0.0
    rule: str = "all-off-diagonal"


@st.cache_data(show_spinner=False, max_entries=32)
def vit_sample(source: str, name: str) -> np.ndarray:
    """A bundled sample: ``source`` digit (``name`` = index), shape or photo (``name`` = its name)."""
    if source == "digit":
        return samples.digit(int(name))[0]
    if source in ("shape", "photo"):
        return getattr(samples, source)(name)
    raise EngineError(f"Unknown sample source {source!r}.")


def vit_digit_count() -> int:
    """How many bundled digit samples there are."""
    return samples.n_digits()


def vit_digit_label(index: int) -> int:
    """The true label of digit sample ``index``."""
    return samples.digit(index)[1]


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)
def vit_read_upload(data: bytes) -> tuple[np.ndarray, tuple[str, ...]]:
    """Uploaded bytes validated and decoded by the engine (``ImageError`` with a message for the user)."""
    decoded = read_image(data)
    return decoded.pixels, decoded.notices


def image_key(model_id: str, image: np.ndarray) -> tuple:
    """The cache key of what ``model_id`` computes from ``image``: its digest, a session's own model, the rules."""
    pixels = np.ascontiguousarray(image)
    digest = hashlib.blake2b(pixels.tobytes(), digest_size=16).hexdigest()
    return ("vision", model_id, pixels.shape, pixels.dtype.str, digest, trained_model(model_id), policy())


def get_vision_trace(model_id: str, image: np.ndarray) -> VisionTrace | WindowTrace:
    """``image`` classified with its attention captured: one read-only trace per (model, image), shared."""

    def compute() -> VisionTrace | WindowTrace:
        model = get_model(model_id)
        with model_pass():
            return engine.trace(model, image)

    return TRACES.get(image_key(model_id, image), compute)


def vit_cls_maps(trace: VisionTrace, layer: int) -> np.ndarray:
    """[CLS]'s attention to every patch for every head of ``layer``: ``[head, rows, cols]``."""
    return vision.cls_map(trace, layer)


def vit_rollout_map(model_id: str, image: np.ndarray, how: Rollout) -> np.ndarray:
    """[CLS]'s row of the attention rollout through all layers: ``[rows, cols]``, shared."""
    rule = dict(head_fusion=how.fusion, discard_ratio=how.discard, discard_rule=how.rule)
    key = ("rollout", image_key(model_id, image), how)
    return shared_map(key, lambda: vision.rollout_map(get_vision_trace(model_id, image), **rule))


def vit_last_layer_map(trace: VisionTrace, fusion: str) -> np.ndarray:
    """[CLS]'s raw attention in the last layer, heads fused the same way as the rollout: ``[rows, cols]``."""
    return vision.to_grid(trace, fuse_heads(trace.attention.pattern(trace.attention.n_layers - 1), fusion)[0])


def vit_occlusion(model_id: str, image: np.ndarray, k: int, how: Rollout, seed: int = 0):
    """Hide the k patches the rollout ranks highest (vs k random, k lowest) and re-classify."""

    def compute():
        ranking = vit_rollout_map(model_id, image, how)
        with model_pass():
            return vision.occlusion_check(get_model(model_id), get_vision_trace(model_id, image), ranking, k, seed=seed)

    return shared_map(("occlusion", image_key(model_id, image), int(k), how, int(seed)), compute)


def vit_windowed(trace: VisionTrace | WindowTrace) -> bool:
    """True for a Swin's trace: attention inside windows (stages, blocks, shifted windows), no [CLS] token."""
    return isinstance(trace, WindowTrace)


def swin_window_row(trace: WindowTrace, stage: int, block: int, head: int, patch: int) -> WindowRow:
    """Patch ``patch`` of ``stage``'s grid as ``head``'s query in that block: its window's row on the grid."""
    return window_row(trace.block_at(stage, block), head, patch)
