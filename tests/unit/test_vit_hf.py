"""Hugging Face ViT / DeiT through the engine's capture path, against the model's own eager attention.

A tiny random ViT (and DeiT) is built, saved with ``save_pretrained`` next to an image-processor
config, loaded through ``engine.load(folder)`` (``ap_capture``: SDPA that records each attention
call's Q, K, V and scale; patterns recomputed lazily), and compared with a *separate* copy loaded by
transformers with ``attn_implementation="eager"`` and ``output_attentions=True`` on the processor's
own pixel values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.analysis.vision import cls_map, occlusion_check, rollout_map
from engine.records import ModelUnavailableError
from engine.traces.vision import VisionTrace
from tests.hf_helpers import photo, save_tiny_vit, traced_photo

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ATOL = 1e-5


@pytest.fixture(scope="module", params=["vit", "deit", "vit-base"])
def saved(request, tmp_path_factory) -> tuple[str, Path]:
    return request.param, save_tiny_vit(tmp_path_factory.mktemp(request.param), request.param)


def _photo(seed: int = 0) -> np.ndarray:
    return photo(23, 31, seed)


def _eager(folder: Path, kind: str):
    from transformers import (
        AutoImageProcessor,
        DeiTForImageClassificationWithTeacher,
        ViTForImageClassification,
        ViTModel,
    )

    cls = {"vit": ViTForImageClassification, "deit": DeiTForImageClassificationWithTeacher, "vit-base": ViTModel}[kind]
    model = cls.from_pretrained(folder, attn_implementation="eager").eval()
    return model, AutoImageProcessor.from_pretrained(folder)


def test_patterns_equal_eager_output_attentions(saved):
    kind, folder = saved
    _, image, tr = traced_photo(folder, 23, 31)
    assert isinstance(tr, VisionTrace)
    reference, processor = _eager(folder, kind)
    pixels = processor(images=image, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        out = reference(pixel_values=pixels, output_attentions=True)
    assert len(out.attentions) == tr.attention.n_layers == 2
    prefix = 2 if kind == "deit" else 1
    assert tr.grid == (4, 4) and tr.patch_size == 4
    assert len(tr.attention.tokens) == prefix + 16
    assert tr.attention.tokens.strings[:prefix] == ("[CLS]", "[DIST]")[:prefix]
    for layer, expected in enumerate(out.attentions):
        expected = expected[0].numpy()  # [head, n, n]
        assert expected.max() > 0.3, "patterns far from uniform: a wrong scale would show"
        for head in range(4):
            np.testing.assert_allclose(tr.attention.pattern(layer, head), expected[head], atol=ATOL)
        # the overlay's map is [CLS]'s row over the patches, in row-major order
        np.testing.assert_allclose(cls_map(tr, layer, 1), expected[1, 0, prefix:].reshape(4, 4), atol=ATOL)
    if kind == "vit-base":
        assert tr.labels == () and tr.probs.shape == (0,)
        assert any("no classification head" in n for n in tr.notices)
    else:
        np.testing.assert_allclose(tr.probs, torch.softmax(out.logits[0], -1).numpy(), atol=1e-6)
        assert tr.labels == ("cat", "dog", "<b>fish</b>")


def test_seen_image_round_trips_and_occlusion_k0(saved):
    kind, folder = saved
    if kind == "vit-base":
        pytest.skip("no head: nothing to classify")
    model = engine.load(str(folder))
    tr = engine.trace(model, _photo(1))
    assert tr.image.shape == (16, 16, 3) and 0.0 <= tr.image.min() and tr.image.max() <= 1.0
    np.testing.assert_allclose(model.adapter.classify(model, tr.image), tr.probs, atol=1e-5)
    result = occlusion_check(model, tr, rollout_map(tr), k=0)
    for row in result.rows:
        np.testing.assert_allclose(row.probs, tr.probs, atol=1e-5)
    hidden = occlusion_check(model, tr, rollout_map(tr), k=16)
    # every patch hidden: the image is the processor's mean colour, whatever the order
    assert hidden.rows[0].patches == tuple(range(16))
    np.testing.assert_allclose(hidden.rows[0].probs, hidden.rows[1].probs, atol=1e-6)


def test_hooks_are_removed_after_a_trace(saved):
    _, folder = saved
    model = engine.load(str(folder))
    engine.trace(model, _photo(2))
    leftover = [m for m in model.module.modules() if m._forward_hooks]
    assert not leftover


def test_folder_without_processor_config_is_refused(tmp_path):
    folder = save_tiny_vit(tmp_path / "m", "vit")
    (folder / "preprocessor_config.json").unlink()
    with pytest.raises(ModelUnavailableError, match="preprocessor_config.json"):
        engine.load(str(folder))


def test_unknown_hub_vit_id_offline_is_a_clear_error():
    with pytest.raises(ModelUnavailableError, match="not downloaded|Hub"):
        engine.load("google/vit-not-a-real-model-xyz")
