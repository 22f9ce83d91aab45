"""Hugging Face Swin: attention inside local windows that shift between blocks, read by the one capture path.

Swin (Liu et al. 2021) cuts each stage's patch grid into w×w windows and runs self-attention inside
each window only; odd blocks roll the grid by w // 2 patches first, so their windows straddle the
previous block's borders, and a mask keeps apart the patches the roll carried round from the opposite
edge (:mod:`engine.traces.vision` has the geometry). Between stages, 2×2 patches merge into one.

transformers 5.23's ``SwinAttention.forward`` calls the registered attention function
(``ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation, eager_attention_forward)``) once per
block, like ViT, so Swin is loaded with ``attn_implementation="ap_capture"`` and captured by the same
function (:mod:`engine.capture.hf`). Two things differ from the other families:

- the batch of that call is the image's windows (``[windows, head, N, d]``, N = w² tokens), so the
  trace records the whole batch (``recording(whole_batch=True)``), not batch 0;
- the call's mask is the block's learned relative position bias plus, in shifted blocks, the
  shifted-window mask (0 / −100). The trace keeps the bias, read from the block's own table
  (``SwinAttention.relative_position_bias()``, ``[head, N, N]``), and rebuilds the mask in numpy from the
  window and shift the block used. Both are read after the forward pass from ``SwinLayer.window_size`` /
  ``shift_size``: transformers shrinks the window to the grid and drops the shift when a stage's grid is
  no larger than one window (Swin-T's last stage: 7×7 patches, one window, no shift).

Per block and window, :meth:`engine.traces.vision.WindowBlock.pattern` is ``softmax(Q Kᵀ · scaling + bias + mask)``,
tested equal to the eager attention weights (``tests/unit/test_swin_hf.py``). Pixels, the class head and
the occlusion fill are the ViT adapter's (:class:`engine.families.hf_vit.HFViTAdapter`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.capture.hf import layer_records, recording
from engine.capture.transfer import to_host
from engine.families.hf_vit import HFViTAdapter, load_image_model
from engine.model import Model
from engine.records import ModelSpec, ModelUnavailableError
from engine.traces.vision import WindowBlock, WindowTrace


def swin_blocks(module: nn.Module) -> list[tuple[int, int, nn.Module]]:
    """``(stage, block, SwinLayer)`` for every block, in forward order (``encoder.layers[s].blocks[b]``)."""
    base = getattr(module, getattr(module, "base_model_prefix", "") or "_", module)  # SwinModel inside a head
    stages = getattr(getattr(base, "encoder", None), "layers", None)
    found = [
        (s, b, layer) for s, stage in enumerate(stages or ()) for b, layer in enumerate(getattr(stage, "blocks", ()))
    ]
    if not found or not all(hasattr(layer, "attention") and hasattr(layer, "shift_size") for _, _, layer in found):
        raise ModelUnavailableError("This Swin has no encoder stages with windowed blocks; unsupported version.")
    return found


def stage_grids(rows: int, cols: int, patch: int, n_stages: int) -> list[tuple[int, int]]:
    """The patch grid of every stage for an input of ``rows × cols`` pixels: the first cut into patches (a
    partial patch is padded), each next one 2×2-merged (an odd side padded by one)."""
    grid = (-(-rows // patch), -(-cols // patch))
    grids = [grid]
    for _ in range(n_stages - 1):
        grid = ((grid[0] + 1) // 2, (grid[1] + 1) // 2)
        grids.append(grid)
    return grids


@dataclass(frozen=True)
class HFSwinAdapter(HFViTAdapter):
    """Tracing for Hugging Face Swin image models (with or without a classification head)."""

    family: str = "vit"

    def trace(self, model: Model, image: Any, *, causal: bool | None = None, max_tokens: int = 0) -> WindowTrace:
        """Classify one image and capture every block's windowed Q/K (``causal``/``max_tokens`` are ignored)."""
        array = np.asarray(image) if not isinstance(image, np.ndarray) else image
        pixels = self.pixel_values(model, array)  # (1, 3, S, S)
        patch = int(model.module.config.patch_size)

        def forward(module: nn.Module, device: torch.device):
            with recording(whole_batch=True) as rec:
                out = module(pixel_values=pixels.to(device))
            blocks = swin_blocks(module)
            records = layer_records(rec.calls, [layer.attention for _, _, layer in blocks])
            geometry = [(s, b, int(layer.window_size), int(layer.shift_size)) for s, b, layer in blocks]
            biases = [layer.attention.relative_position_bias()[0] for _, _, layer in blocks]
            records, biases = to_host((records, biases))  # one copy from the model's device
            return records, geometry, biases, self._probs(module, out), self._labels(module)

        (records, geometry, biases, probs, labels), device, notice = model.run(forward)
        grids = stage_grids(pixels.shape[2], pixels.shape[3], patch, geometry[-1][0] + 1)
        blocks = tuple(
            WindowBlock(
                stage=s,
                block=b,
                grid=grids[s],
                window=w,
                shift=shift,
                queries=r.query,
                keys=r.key,
                scale=r.scale,
                bias=bias,
            )
            for (s, b, w, shift), r, bias in zip(geometry, records, biases)
        )
        seen, notices = self.seen_image(model, pixels, labels, notice)
        return WindowTrace(
            model_id=model.spec.id,
            image=seen,
            patch_size=patch,
            blocks=blocks,
            labels=labels,
            probs=probs,
            notices=notices,
            device=device.type,
        )


def load_hf_swin(
    model_id: str, path: Path, config: dict, *, spec: ModelSpec | None = None, device: torch.device | None = None
) -> Model:
    """Load a Swin folder (config, safetensors weights, ``preprocessor_config.json``) with its image processor."""
    return load_image_model(model_id, path, config, HFSwinAdapter(), spec=spec, device=device)
