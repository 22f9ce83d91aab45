"""Our own tiny Vision Transformer: the network (how an image gets in: :mod:`engine.families.vit.images`;
its attention out: :mod:`engine.families.vit.adapter`).

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

The model reads scikit-learn's 8×8 digits at their own size, with patches of 2×2 pixels: 16 patches on a
4×4 grid + [CLS] = 17 tokens (:mod:`engine.families.vit.images` says why, and brings any image there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from engine.capture import HookPoint
from engine.families.own import JsonConfig
from engine.families.transformer.network import AttnImpl, Block, TransformerConfig, init_weights, layers_config

DIGITS = tuple(str(d) for d in range(10))


@dataclass(frozen=True)
class ViTConfig(JsonConfig):
    """Hyper-parameters of :class:`ViT`; plain data, JSON round-trip via ``to_dict``/``from_dict``. The defaults
    are the shipped ``tiny-vit-digits``."""

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
        problems = self.positive_int_problems(
            ("image_size", "patch_size", "d_model", "n_layers", "n_heads", "d_mlp", "n_classes")
        )
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
        self.raise_problems(problems)

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
        return layers_config(self, self.n_tokens)


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
        self.apply(init_weights)
        nn.init.normal_(self.cls_token, mean=0.0, std=0.02)

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
