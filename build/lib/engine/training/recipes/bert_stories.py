"""Recipe ``tiny-bert-stories``: our Transformer as a BERT-style encoder, trained with the masked-LM objective.

``python -m engine.training.pretrain tiny-bert-stories`` rebuilds ``assets/checkpoints/tiny-bert-stories.*``.

Data: the same generated children's stories as ``tiny-gpt-stories`` (20,000 stories, 5% held out),
windows of 64 tokens read without a causal mask, 15% of their words masked by BERT's recipe
(:mod:`engine.training.masked_lm`). The card reports the accuracy on masked held-out positions next
to the best context-free guess (always the most frequent word), both re-measured by the tests.
"""

from __future__ import annotations

from pathlib import Path

import torch

from engine.checkpoint import save_checkpoint
from engine.families.transformer.network import Transformer
from engine.training.loop import TrainConfig
from engine.training.masked_lm import MASK_RATE, SPLIT, MaskedStoriesTask
from engine.training.recipes.common import run_fields, stories_transformer, train_logged

NAME = "tiny-bert-stories"
EVAL_SEED = 1234
EVAL_BATCHES = 40
EVAL_BATCH = 64


@torch.no_grad()
def masked_accuracy(
    model: Transformer, task: MaskedStoriesTask, *, batches: int = EVAL_BATCHES, batch_size: int = EVAL_BATCH
) -> float:
    """Share of masked held-out positions whose original word is the model's top prediction."""
    model.eval()
    gen = torch.Generator().manual_seed(EVAL_SEED)
    device = next(model.parameters()).device
    right = total = 0
    for _ in range(batches):
        batch = task.held_out(batch_size, gen).to(device)
        logits = model(batch.inputs, causal=False, attn_impl="sdpa")  # (B, T, V)
        scored = batch.targets != -100
        right += int((logits.argmax(-1) == batch.targets)[scored].sum())
        total += int(scored.sum())
    return right / total


def build(out: Path, *, steps: int | None = None, seed: int = 0) -> dict:
    """A 3-layer, 4-head encoder (d_model 128, learned positions) with an MLM head (the unembedding)."""
    torch.manual_seed(seed)
    task = MaskedStoriesTask(seq_len_=64, n_stories=20_000, seed=seed)
    cfg, model = stories_transformer(task, causal=False)
    config = TrainConfig(
        steps=steps or 3000, batch_size=32, lr=2e-3, warmup=150, snapshot_every=250, seed=seed, eval_batch_size=64
    )
    run = train_logged(model, task, config, model_id=NAME)
    accuracy = masked_accuracy(model, task)
    unigram = task.unigram_accuracy()
    metrics = {
        "held-out masked-token accuracy": round(accuracy, 4),
        "unigram baseline accuracy (always the most frequent word)": round(unigram, 4),
    }
    card = {
        "title": NAME,
        "label": "Tiny BERT trained on stories (own, masked LM)",
        "family": "encoder",
        "description": "A 3-layer encoder trained here with BERT's masked-language-model objective on "
        "generated children's stories: type a sentence with [MASK] and see what it fills in.",
        "data": f"{task.n_stories:,} generated stories (seed {seed}), {task.test_fraction:.0%} held out; "
        f"{len(task.vocab)} word tokens including <mask>; windows of {task.seq_len} tokens; "
        f"{MASK_RATE:.0%} of words chosen, of those {SPLIT[0]:.0%} → <mask>, {SPLIT[1]:.0%} → a "
        f"random word, {SPLIT[2]:.0%} kept",
        "batch": f"{config.batch_size} × {task.seq_len} tokens",
        **run_fields(NAME, run, steps=config.steps, seed=seed, metrics=metrics),
    }
    save_checkpoint(out, NAME, model, kind="transformer", config=cfg.to_dict(), vocab=task.vocab, card=card)
    return card
