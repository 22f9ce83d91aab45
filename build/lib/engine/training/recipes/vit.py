"""Recipe ``tiny-vit-digits``: our :class:`~engine.families.vit.network.ViT` on scikit-learn's bundled 8×8 digits.

``python -m engine.training.pretrain tiny-vit-digits`` rebuilds ``assets/checkpoints/tiny-vit-digits.*``.

Data: the 1,797 images of ``sklearn.datasets.load_digits`` (no download), values 0–16 scaled to 0–1.
A stratified 20% (``train_test_split``, ``random_state=SPLIT_SEED``) is held out and never trained on;
the card's accuracy is measured on it. Training batches are drawn with replacement from the other 80%
and each image is shifted by up to one pixel in each direction (zeros come in at the edge): with only
~1,400 images, a ViT, which has no built-in notion that a shifted stroke is the same stroke, otherwise
memorises them.

One step::

    x, y  = batch of B training images, each shifted by (dy, dx) ∈ {−1, 0, 1}²
    loss  = cross_entropy(model(x), y, label_smoothing)
    AdamW step with TrainConfig.lr_at(step) (linear warm-up, cosine decay), ‖grad‖ clipped
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engine.checkpoint import save_checkpoint
from engine.families.vit.network import ViT, ViTConfig
from engine.samples import DIGIT_SPLIT_SEED, DIGIT_TEST_FRACTION, digit_split
from engine.training.loop import TrainConfig, make_optimizer, resolve_device, update
from engine.training.recipes.common import Log, LossLog, Run, log_line, run_fields
from engine.vocab import Vocab

NAME = "tiny-vit-digits"
SPLIT_SEED = DIGIT_SPLIT_SEED  # the held-out split is fixed, whatever the training seed
TEST_FRACTION = DIGIT_TEST_FRACTION
MAX_SHIFT = 1  # pixels
LABEL_SMOOTHING = 0.1
ACCURACY_KEY = "held-out digit accuracy"


def digits_split(split_seed: int = SPLIT_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's digits, split 80/20, stratified by class.

    Args:
        split_seed: ``random_state`` of ``train_test_split``.

    Returns:
        ``(train_images, train_labels, test_images, test_labels)``; images ``[N, 8, 8]`` float64 with
        the dataset's own values 0–16, labels ``[N]`` int64 (the digit).
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    train, test = digit_split(split_seed)  # the partition the app's ViT page names, too
    labels = digits.target.astype(np.int64)
    return digits.images[train], labels[train], digits.images[test], labels[test]


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """Digits ``[N, 8, 8]`` with values 0–16 → ``(N, 1, 8, 8)`` float32 in 0–1 (what ``preprocess`` gives)."""
    return torch.from_numpy(np.asarray(images, dtype=np.float32) / 16.0)[:, None]


def random_shift(images: torch.Tensor, generator: torch.Generator, max_shift: int = MAX_SHIFT) -> torch.Tensor:
    """Shift each image by its own ``(dy, dx)`` in ``−max_shift … max_shift``; zeros come in at the edges.

    Args:
        images: ``(B, C, S, S)``.
        generator: the source of the shifts.
        max_shift: the largest shift in pixels (0 returns the images unchanged).

    Returns:
        ``(B, C, S, S)``.
    """
    if max_shift == 0:
        return images
    B, C, S, _ = images.shape
    m = max_shift
    padded = F.pad(images, (m, m, m, m))  # (B, C, S + 2m, S + 2m)
    offsets = torch.randint(0, 2 * m + 1, (2, B), generator=generator)  # top-left corner of the crop
    steps = torch.arange(S)
    rows = (offsets[0][:, None] + steps)[:, None, :, None]  # (B, 1, S, 1)
    cols = (offsets[1][:, None] + steps)[:, None, None, :]  # (B, 1, 1, S)
    batch = torch.arange(B)[:, None, None, None]  # (B, 1, 1, 1)
    channel = torch.arange(C)[None, :, None, None]  # (1, C, 1, 1)
    return padded[batch, channel, rows, cols]  # (B, C, S, S)


@torch.no_grad()
def evaluate(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> tuple[float, dict[str, float]]:
    """Accuracy of ``model`` on ``(images, labels)``, overall and per class (eval mode assumed).

    Returns:
        ``(accuracy, {label: accuracy of that class})``.
    """
    device = next(model.parameters()).device
    predicted = model(images.to(device), attn_impl="sdpa").argmax(-1).cpu()  # (N,)
    right = predicted == labels
    names = model.cfg.labels
    per_class = {names[c]: float(right[labels == c].double().mean()) for c in range(len(names)) if (labels == c).any()}
    return float(right.double().mean()), per_class


def fit(
    model: ViT,
    images: torch.Tensor,
    labels: torch.Tensor,
    config: TrainConfig,
    *,
    max_shift: int = MAX_SHIFT,
    log_every: int = 500,
    log: Log = log_line,
) -> Run:
    """Train ``model`` in place on ``(images (N, C, S, S), labels (N,))``; returns the run (its last mean loss).

    Batches of ``config.batch_size`` are drawn with replacement from a generator seeded with
    ``config.seed``; the same seed and initial weights give the same run on the CPU. The model ends
    in eval mode.
    """
    device = resolve_device(config.device)
    model.to(device).train()
    generator = torch.Generator().manual_seed(config.seed)
    optimizer = make_optimizer(model, config, device)
    losses = LossLog(config, log_every, log)
    for step in range(config.steps):
        index = torch.randint(0, len(images), (config.batch_size,), generator=generator)  # (B,)
        x = random_shift(images[index], generator, max_shift).to(device)  # (B, C, S, S)
        y = labels[index].to(device)  # (B,)
        loss = F.cross_entropy(model(x, attn_impl="sdpa"), y, label_smoothing=LABEL_SMOOTHING)
        update(model, optimizer, loss, config, step)
        losses.add(step, float(loss.detach()))
    model.eval()
    return losses.run(device.type)


def model_config() -> ViTConfig:
    """The shipped model, :class:`ViTConfig`'s defaults: 8×8 input, 2×2 patches (16 + [CLS] tokens), 3 layers × 4
    heads, d_model 64, the ten digits."""
    return ViTConfig()


def train_config(steps: int | None = None, seed: int = 0) -> TrainConfig:
    return TrainConfig(
        steps=steps or 2000,
        batch_size=128,
        lr=2e-3,
        warmup=150,
        weight_decay=0.05,
        seed=seed,
        grad_clip=1.0,
        min_lr_ratio=0.02,
    )


def build(out: Path, *, steps: int | None = None, seed: int = 0) -> dict:
    """Train the tiny ViT on the digits and write ``out/tiny-vit-digits.{safetensors,json,md}``.

    Args:
        out: the output folder.
        steps: override the number of optimizer steps (for a quick try).
        seed: seeds the initial weights, the batches and the shifts (the held-out split stays fixed).

    Returns:
        The model card (``final_metrics`` holds the held-out digit accuracy).
    """
    x_train, y_train, x_test, y_test = digits_split()
    train_images, train_labels = to_tensor(x_train), torch.from_numpy(y_train)
    test_images, test_labels = to_tensor(x_test), torch.from_numpy(y_test)
    cfg = model_config()
    config = train_config(steps, seed)
    torch.manual_seed(seed)
    model = ViT(cfg)
    run = fit(model, train_images, train_labels, config)
    model.to("cpu")
    accuracy, per_class = evaluate(model, test_images, test_labels)
    train_accuracy, _ = evaluate(model, train_images, train_labels)
    metrics = {
        ACCURACY_KEY: round(accuracy, 4),
        "held-out images": len(y_test),
        "training accuracy (unshifted)": round(train_accuracy, 4),
        "final training loss (label-smoothed)": round(run.last_loss, 4),
        **{f"held-out accuracy, digit {k}": round(v, 4) for k, v in per_class.items()},
    }
    card = {
        "title": NAME,
        "label": "Tiny ViT on 8×8 digits (own)",
        "family": "vit",
        "description": "A 3-layer Vision Transformer trained here on scikit-learn's 8×8 handwritten digits: "
        "16 patches of 2×2 pixels and a [CLS] token.",
        "labels": list(cfg.labels),
        "data": f"scikit-learn load_digits: {len(y_train)} training images, {len(y_test)} held out "
        f"({TEST_FRACTION:.0%}, stratified, split seed {SPLIT_SEED}, never trained on); "
        f"random shifts of up to {MAX_SHIFT} pixel",
        "split_seed": SPLIT_SEED,
        "input": f"{cfg.image_size}×{cfg.image_size} grayscale, 0–1 (digits' 0–16 / 16), "
        f"{cfg.patch_size}×{cfg.patch_size} patches on a {cfg.grid}×{cfg.grid} grid",
        "batch": f"{config.batch_size} images",
        **run_fields(NAME, run, steps=config.steps, seed=seed, metrics=metrics),
    }
    # the checkpoint format stores a vocabulary: for a classifier, the class labels after the specials
    save_checkpoint(out, NAME, model, kind="vit", config=cfg.to_dict(), vocab=Vocab.from_words(cfg.labels), card=card)
    return card
