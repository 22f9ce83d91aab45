r"""Recipe ``scene-captioner``: our :class:`~engine.families.captioner.Captioner` on generated shape scenes.

``python -m engine.training.pretrain scene-captioner`` rebuilds ``assets/checkpoints/scene-captioner.*``.

Data: :mod:`engine.corpora.scenes`, 64×64 RGB pictures of one or two shapes with their captions. Every
training batch is freshly drawn (``numpy`` generator seeded with the run's seed), so the model never sees
an image twice; the held-out scenes come from a separate seed (:data:`HELD_OUT_SEED`) and are never
trained on. The card's figures are measured on them with :func:`engine.training.caption_metrics.evaluate`.

One step::

    images, captions = a fresh batch of B scenes
    logits, α = model(images, <bos> + caption)                    teacher forcing
    loss = cross_entropy(logits, caption + <eos>) + λ Σ_i (1 − Σ_t α(t, i))²
    Adam step, learning rate warmed up then cosine-decayed, ‖grad‖ clipped

Runs on one CPU thread (``torch.set_num_threads(1)``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from engine.checkpoint import save_checkpoint
from engine.corpora.scenes import WORDS, Scene, make_scene, make_scenes
from engine.families.captioner import Captioner, CaptionerConfig, attention_penalty, to_tensor
from engine.training.caption_metrics import evaluate
from engine.training.loop import TrainConfig, update
from engine.training.recipes.common import Log, LossLog, Run, log_line, run_fields
from engine.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

NAME = "scene-captioner"
HELD_OUT_SEED = 20_151  # the held-out scenes, whatever the training seed
HELD_OUT = 500  # held-out scenes the card is measured on
LAMBDA = 0.01  # weight of the doubly stochastic attention penalty


def vocab() -> Vocab:
    """The specials and every word of the scene grammar."""
    return Vocab.from_words(WORDS)


def held_out_scenes(n: int = HELD_OUT) -> list[Scene]:
    """The card's held-out scenes (a fixed seed no training run draws from)."""
    return make_scenes(n, seed=HELD_OUT_SEED)


def batch(scenes: list[Scene], words: Vocab) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(images (B, 3, S, S), words_in (B, T) starting with <bos>, targets (B, T) ending with <eos>, padded)``."""
    rows = [words.encode(s.words) for s in scenes]
    T = max(len(r) for r in rows) + 1
    words_in = torch.full((len(rows), T), PAD_ID, dtype=torch.long)
    targets = torch.full((len(rows), T), PAD_ID, dtype=torch.long)
    for b, r in enumerate(rows):
        words_in[b, : len(r) + 1] = torch.tensor([BOS_ID, *r])
        targets[b, : len(r) + 1] = torch.tensor([*r, EOS_ID])
    return to_tensor(np.stack([s.image for s in scenes])), words_in, targets


def model_config(words: Vocab) -> CaptionerConfig:
    """The shipped model: 64×64 input, an 8×8 grid of 64-wide features, a 128-wide LSTM."""
    return CaptionerConfig(
        vocab_size=len(words), image_size=64, grid=8, channels=32, d_feat=64, d_emb=32, d_dec=128, d_attn=64, max_len=14
    )


def train_config(steps: int | None = None, seed: int = 0) -> TrainConfig:
    return TrainConfig(
        steps=steps or 4000,
        batch_size=48,
        lr=2e-3,
        warmup=100,
        weight_decay=0.0,
        seed=seed,
        grad_clip=5.0,
        min_lr_ratio=0.05,
    )


def fit(model: Captioner, words: Vocab, config: TrainConfig, *, log_every: int = 100, log: Log = log_line) -> Run:
    """Train ``model`` in place on fresh scenes; the run's last loss is the mean cross-entropy (nats/word)."""
    model.train()
    rng = np.random.default_rng(config.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr_at(0))
    losses = LossLog(config, log_every, log)
    for step in range(config.steps):
        images, words_in, targets = batch([make_scene(rng) for _ in range(config.batch_size)], words)
        logits, alphas = model(images, words_in)  # (B, T, V), (B, T, L²)
        xent = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=PAD_ID)
        update(model, optimizer, xent + LAMBDA * attention_penalty(alphas, targets != PAD_ID), config, step)
        losses.add(step, float(xent.detach()))
    model.eval()
    return losses.run("cpu")


def card_metrics(model: Captioner, words: Vocab, scenes: list[Scene]) -> dict:
    """The card's figures (what tests/unit/test_captioner.py re-measures)."""
    scores = evaluate(model, scenes, words)
    return {
        "held-out exact match": round(scores.exact_match, 4),
        "held-out BLEU-4": round(scores.bleu4, 4),
        "localisation: shape-noun attention peak inside its object's box": round(scores.localisation, 4),
        "localisation: uniform-attention baseline (cells inside the box)": round(scores.uniform_baseline, 4),
        "localisation: shape nouns measured": scores.object_words,
        "held-out scenes": len(scenes),
    }


def build(out: Path, *, steps: int | None = None, seed: int = 0) -> dict:
    """Train the captioner and write ``out/scene-captioner.{safetensors,json,md}``; returns the card."""
    torch.set_num_threads(1)
    words = vocab()
    cfg = model_config(words)
    config = train_config(steps, seed)
    torch.manual_seed(seed)
    model = Captioner(cfg)
    run = fit(model, words, config)
    metrics = card_metrics(model, words, held_out_scenes())
    metrics["final training cross-entropy (nats/word)"] = round(run.last_loss, 4)
    card = {
        "title": NAME,
        "label": "Scene captioner with soft attention (own)",
        "family": "captioner",
        "description": 'A "Show, Attend and Tell" captioner trained here on generated 64×64 scenes of shapes: '
        "a small conv-net gives an 8×8 grid of features, an LSTM writes the caption and before "
        "every word attends over the grid (additive attention, a gate β scales the context).",
        "data": f"{config.steps * config.batch_size:,} freshly generated scenes (engine.corpora.scenes, seed {seed}); "
        f"{HELD_OUT} held-out scenes from seed {HELD_OUT_SEED}, never trained on",
        "input": f"{cfg.image_size}×{cfg.image_size} RGB, 0–1; attention grid {cfg.grid}×{cfg.grid}",
        "batch": f"{config.batch_size} scenes",
        "doubly stochastic penalty λ": LAMBDA,
        **run_fields(NAME, run, steps=config.steps, seed=seed, metrics=metrics),
    }
    save_checkpoint(out, NAME, model, kind="captioner", config=cfg.to_dict(), vocab=words, card=card)
    return card
