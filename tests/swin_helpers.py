"""A tiny random Hugging Face Swin saved locally (tests/unit/test_swin_hf.py, tests/app/test_swin_page.py).

32×32 pixels in patches of 4: stage 0 is an 8×8 grid, stage 1 (after one 2×2 merge) 4×4; two blocks per
stage, the second shifted. ``window`` picks the geometry transformers runs: 2 (shift 1 in both stages),
3 (grids padded to 9×9 and 6×6) or 4 (stage 1's grid is one window: transformers drops its shift). The
relative position bias tables are filled with random numbers (transformers starts them at 0, which would
hide a bias added in the wrong place), which with ``initializer_range`` 0.2 keeps patterns far from uniform (each
block's largest weight 0.66–1). At 0.5 (the ViT tests' value) the weights amplified the float32 differences
between the SDPA pass and the eager one through four blocks and a merge to 1.5e-5; at 0.2 they stay under 1e-6.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tests.hf_helpers import save_image_processor

LABELS = {0: "cat", 1: "dog", 2: "<b>fish</b>"}


def save_tiny_swin(folder: Path, *, window: int = 2, classifier: bool = True, seed: int = 0, init: float = 0.2) -> Path:
    """Save a tiny random Swin (with a 3-class head unless ``classifier`` is False) and its image processor."""
    from transformers import SwinConfig, SwinForImageClassification, SwinModel

    sizes = dict(image_size=32, patch_size=4, embed_dim=16, depths=[2, 2], num_heads=[2, 4], mlp_ratio=2.0)
    labels = dict(num_labels=3, id2label=LABELS, label2id={v: k for k, v in LABELS.items()})
    config = SwinConfig(window_size=window, initializer_range=init, drop_path_rate=0.0, **sizes, **labels)
    torch.manual_seed(seed)
    model = SwinForImageClassification(config) if classifier else SwinModel(config)
    with torch.no_grad():
        for module in model.modules():
            table = getattr(module, "relative_position_bias_table", None)
            if table is not None:
                table.normal_(0.0, 1.0)
    model.save_pretrained(folder)
    save_image_processor(folder, 32)
    return folder
