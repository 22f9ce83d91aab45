"""Our own tiny Vision Transformer, and how an image gets into it and its attention out of it.

An image is cut into a grid of square patches; each patch is flattened and projected like a token::

    patches  = split(image) into N = (S/p)² patches of p·p·C pixels      row-major order
    x_0      = [CLS ; patches W_E + b_E] + P                               P: learned, one row per token
    x_{l+1}  = Block_l(x_l)                                               pre-LN, no mask: every token sees all
    logits   = LN_f(x_L)[CLS] W_head + b_head

The blocks are :class:`engine.families.transformer.network.Block` itself (same attention code, same hooks), built
from a :class:`~engine.families.transformer.network.TransformerConfig` with no positional scheme of its own and
no causal mask. The public activation names (``{L}`` = 0 … n_layers − 1) are therefore::

    hook_embed                    [batch, pos, d_model]   [CLS] + projected patches, pos 0 is [CLS]
    hook_pos_embed                [batch, pos, d_model]   the learned position vectors added to them
    blocks.{L}.…                  exactly as in engine.families.transformer.network (hook_q … hook_pattern, hook_z)

Input size. scikit-learn's digits are 8×8 images with values 0–16: the UCI authors drew each digit as
a 32×32 bitmap, scaled so its height fills the box, and counted the "on" pixels of each 4×4 block. The
model reads them at their own size, 8×8 with patches of 2×2 pixels: 16 patches on a 4×4 grid + [CLS]
= 17 tokens. Upsampling to 16×16 with 4×4 patches would give the same 16 patches with no new
information, and bigger images would then differ from the blurred training images. :func:`preprocess`
brings any other image to that form the way the UCI digits were made (see there).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.capture import HookPoint, capture, heads_first
from engine.capture.contribution import attention_norms
from engine.families.own import JsonConfig, checkpoint_model
from engine.families.transformer.network import AttnImpl, Block, TransformerConfig
from engine.model import Model
from engine.models.vit_input import preprocess
from engine.records import EngineError, ModelSpec, Tokens
from engine.traces.attention import AttentionTrace
from engine.traces.vision import VisionTrace

DIGITS = tuple(str(d) for d in range(10))
UNSURE_BELOW = 0.5  # top probability under which the trace says the model is unsure


@dataclass(frozen=True)
class ViTConfig(JsonConfig):
    """Hyper-parameters of :class:`ViT`; plain data, JSON round-trip via ``to_dict``/``from_dict``."""

    image_size: int = 8  # side S of the square input image, in pixels
    patch_size: int = 2  # side p of a square patch; S must be a multiple of p
    channels: int = 1  # 1 (grayscale) or 3 (RGB)
    d_model: int = 64  # width of the residual stream D
    n_layers: int = 3  # number of blocks L
    n_heads: int = 4  # attention heads per layer H; d_head = D / H
    d_mlp: int = 128  # hidden width of each MLP
    n_classes: int = 10  # number of classes; must equal len(labels)
    labels: tuple[str, ...] = DIGITS  # class names, index = class id

    def __post_init__(self) -> None:
        if isinstance(self.labels, list):  # from JSON
            object.__setattr__(self, "labels", tuple(self.labels))
        problems = []
        for name in ("image_size", "patch_size", "d_model", "n_layers", "n_heads", "d_mlp", "n_classes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        if self.channels not in (1, 3) or isinstance(self.channels, bool):
            problems.append(f"channels must be 1 or 3, got {self.channels!r}")
        if not problems and self.image_size % self.patch_size:
            problems.append(f"image_size ({self.image_size}) must be a multiple of patch_size ({self.patch_size})")
        if not problems and self.d_model % self.n_heads:
            problems.append(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not isinstance(self.labels, tuple) or not all(isinstance(s, str) and s for s in self.labels):
            problems.append(f"labels must be a list of non-empty strings, got {self.labels!r}")
        elif len(set(self.labels)) != len(self.labels):
            problems.append(f"labels must be distinct, got {list(self.labels)}")
        elif len(self.labels) != self.n_classes:
            problems.append(f"n_classes ({self.n_classes}) must equal the number of labels ({len(self.labels)})")
        if problems:
            raise ValueError("ViTConfig: " + "; ".join(problems))

    @property
    def grid(self) -> int:
        """Patches per side, ``image_size // patch_size``."""
        return self.image_size // self.patch_size

    @property
    def n_patches(self) -> int:
        return self.grid**2

    @property
    def n_tokens(self) -> int:
        """Sequence length: the patches plus [CLS]."""
        return self.n_patches + 1

    @property
    def patch_dim(self) -> int:
        """Pixels in one flattened patch, ``p·p·C``."""
        return self.patch_size**2 * self.channels

    def blocks_config(self) -> TransformerConfig:
        """The config the shared transformer :class:`Block`s are built from (no mask, pre-LN)."""
        return TransformerConfig(
            vocab_size=1,
            d_model=self.d_model,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_mlp=self.d_mlp,
            max_len=self.n_tokens,
            pos_encoding="none",
            causal=False,
            norm="pre",
        )


class ViT(nn.Module):
    """Patch embedding, a learned [CLS] token and position table, pre-LN blocks and a class head.

    Initialisation is normal(0, 0.02) for weights, the [CLS] vector and the position table, zeros
    for biases; seed with ``torch.manual_seed`` before building for reproducible weights.

    Example:
        >>> model = ViT(ViTConfig())
        >>> logits = model(torch.rand(5, 1, 8, 8))  # (5, 10)
    """

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.patch_embed = nn.Linear(cfg.patch_dim, cfg.d_model)  # W_E, b_E
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.d_model))  # (1, 1, D)
        self.hook_embed = HookPoint()  # [batch, pos, d_model]
        self.pos_embed = nn.Embedding(cfg.n_tokens, cfg.d_model)  # P, row 0 for [CLS]
        self.hook_pos_embed = HookPoint()  # [batch, pos, d_model]
        block_cfg = cfg.blocks_config()
        self.blocks = nn.ModuleList(Block(block_cfg) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model, eps=block_cfg.ln_eps)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)
        self.apply(self._init_weights)
        nn.init.normal_(self.cls_token, mean=0.0, std=0.02)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def patchify(self, images: torch.Tensor) -> torch.Tensor:
        """Cut ``(B, C, S, S)`` images into flattened patches ``(B, N, p·p·C)``, row-major.

        Patch ``n`` covers rows ``(n // g)·p …`` and columns ``(n % g)·p …`` (g = patches per side);
        within a patch the values are ordered (row, column, channel).
        """
        B, C, S, _ = images.shape
        p, g = self.cfg.patch_size, self.cfg.grid
        x = images.reshape(B, C, g, p, g, p)  # (B, C, gr, pr, gc, pc)
        x = x.permute(0, 2, 4, 3, 5, 1)  # (B, gr, gc, pr, pc, C)
        return x.reshape(B, g * g, p * p * C)  # (B, N, p·p·C)

    def forward(self, images: torch.Tensor, *, attn_impl: AttnImpl = "explicit") -> torch.Tensor:
        """Classify a batch of images.

        Args:
            images: ``(B, C, S, S)`` (or ``(B, S, S)`` for one channel), values 0–1 as :func:`preprocess` makes.
            attn_impl: ``"explicit"`` (every hook fires) or ``"sdpa"`` (fused attention; the scores and
                pattern hooks do not fire).

        Returns:
            logits ``(B, n_classes)``.
        """
        cfg = self.cfg
        if images.ndim == 3 and cfg.channels == 1:
            images = images[:, None]  # (B, 1, S, S)
        expected = (cfg.channels, cfg.image_size, cfg.image_size)
        if images.ndim != 4 or tuple(images.shape[1:]) != expected:
            shape = ", ".join(map(str, expected))
            raise ValueError(f"ViT expects images of shape (B, {shape}), got {tuple(images.shape)}")
        B = images.shape[0]
        # Step 1: cut into patches, project each one, put [CLS] in front, add the position vectors
        patches = self.patch_embed(self.patchify(images))  # (B, N, D)
        x = torch.cat([self.cls_token.expand(B, -1, -1), patches], dim=1)  # (B, N + 1, D)
        x = self.hook_embed(x)  # (B, T, D)
        x = x + self.hook_pos_embed(self.pos_embed.weight.expand(B, -1, -1))  # (B, T, D)
        # Step 2: the blocks, no mask (every patch attends to every patch)
        for block in self.blocks:
            x = block(x, None, None, attn_impl)  # (B, T, D)
        # Step 3: read the class off the final [CLS] vector
        return self.head(self.ln_final(x[:, 0]))  # (B, D) @ (D, n_classes) -> (B, n_classes)


def build_model(config: Mapping[str, Any]) -> nn.Module:
    """Checkpoint builder of kind ``"vit"`` (``engine.families``): ``model_config`` dict → fresh module."""
    return ViT(ViTConfig.from_dict(config))


# ---- attention out ----------------------------------------------------------------------------------


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
    names = [f"blocks.{layer}.attn.{hook}" for layer in range(cfg.n_layers) for hook in ("hook_q", "hook_k", "hook_v")]
    device = next(model.parameters()).device
    with torch.no_grad(), capture(model, names=names) as acts:
        logits = model(pixels[None].to(device), attn_impl="sdpa")  # (1, n_classes)
    probs = torch.softmax(logits[0].float(), dim=-1).cpu().numpy()  # (n_classes,)
    tokens = patch_tokens(cfg)
    layers = range(cfg.n_layers)
    values = tuple(heads_first(acts[f"blocks.{layer}.attn.hook_v"]) for layer in layers)  # [H, T, dh] each
    attention = AttentionTrace(
        model_id=model_id,
        family="vit",
        tokens=tokens,
        key_tokens=tokens,
        queries=tuple(heads_first(acts[f"blocks.{layer}.attn.hook_q"]) for layer in layers),
        keys=tuple(heads_first(acts[f"blocks.{layer}.attn.hook_k"]) for layer in layers),
        values=values,
        value_out_norms=tuple(attention_norms(block.attn, v) for block, v in zip(model.blocks, values)),
        scales=tuple(float(block.attn.scale) for block in model.blocks),
        causal=False,
        pos_encoding=model.pos_embed.weight.detach().to("cpu", torch.float32).numpy().copy(),
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
