"""Rebuild a shipped checkpoint from scratch: ``python -m engine.training.pretrain NAME``.

Each recipe fixes its data, model, seed and steps, trains (:func:`engine.training.loop.train`, or its own loop
over the same :func:`~engine.training.loop.update`), evaluates on held-out data, and writes
``assets/checkpoints/NAME.{safetensors,json,md}``; the model card records the figures and this command.

Checkpoints: ``tiny-gpt-stories`` (decoder on generated children's stories), ``tiny-translator``
(encoder-decoder transformer, toy En→Fr + dates), ``bahdanau-translator`` (GRU encoder-decoder with
additive attention), ``luong-translator`` (the same with dot-product attention), ``tiny-vit-digits`` (ViT on
scikit-learn's 8×8 digits), ``tiny-bert-stories`` (encoder with BERT's masked-LM objective on the stories),
``scene-captioner`` (CNN + LSTM with soft attention on generated shape scenes), ``induction-2l-attn-only`` (two
attention-only layers on repeated random letters: induction heads). Recipes other than the first live in
:mod:`engine.training.recipes`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from engine.checkpoint import save_checkpoint
from engine.registry import CHECKPOINTS
from engine.training.corpus_tasks import StoriesTask
from engine.training.evaluate import grammatical_samples, held_out_loss, pronoun_head
from engine.training.loop import TrainConfig
from engine.training.recipes.common import run_fields, stories_transformer, train_logged


def tiny_gpt_stories(out: Path, *, steps: int | None = None, seed: int = 0) -> dict:
    """A 3-layer, 4-head decoder (d_model 128, learned positions) on 20,000 generated stories."""
    torch.manual_seed(seed)
    task = StoriesTask(seq_len_=96, n_stories=20_000, seed=seed)
    cfg, model = stories_transformer(task, causal=True)
    config = TrainConfig(
        steps=steps or 2500, batch_size=32, lr=3e-3, warmup=100, snapshot_every=250, seed=seed, eval_batch_size=64
    )
    run = train_logged(model, task, config, model_id="tiny-gpt-stories")
    model.eval()
    loss = held_out_loss(model, task)
    unigram = task.unigram_loss()
    grammatical, samples = grammatical_samples(model, task, ["lily", "tom", "one", "max", "anna", "jack"])
    pronoun = pronoun_head(model, task)
    metrics = {
        "held-out loss (nats/token)": round(loss, 4),
        "unigram baseline loss (nats/token)": round(unigram, 4),
        "greedy samples: grammatical sentences": round(grammatical, 4),
        "pronoun head (layer.head)": f"{pronoun['layer']}.{pronoun['head']}",
        "pronoun head: weight on antecedent": round(pronoun["score"], 4),
        "pronoun head: uniform baseline": round(pronoun["baseline"], 4),
    }
    card = {
        "title": "tiny-gpt-stories",
        "label": "Tiny GPT trained on stories (own)",
        "family": "decoder",
        "description": "A 3-layer decoder trained here on generated children's stories: names, pronouns "
        "that refer back, repeated objects.",
        "data": f"{task.n_stories:,} generated stories (seed {seed}), {task.test_fraction:.0%} held out; "
        f"{len(task.vocab)} word tokens",
        "batch": f"{config.batch_size} × {task.seq_len} tokens",
        "samples": samples[:3],
        **run_fields("tiny-gpt-stories", run, steps=config.steps, seed=seed, metrics=metrics),
    }
    save_checkpoint(
        out, "tiny-gpt-stories", model, kind="transformer", config=cfg.to_dict(), vocab=task.vocab, card=card
    )
    return card


#: checkpoint name → recipe; a string "module:function" is imported only when that recipe runs
RECIPES: dict[str, Callable[..., dict] | str] = {
    "tiny-gpt-stories": tiny_gpt_stories,
    "tiny-translator": "engine.training.recipes.translator:build",
    "bahdanau-translator": "engine.training.recipes.bahdanau:build",
    "luong-translator": "engine.training.recipes.bahdanau:build_luong",
    "tiny-vit-digits": "engine.training.recipes.vit:build",
    "tiny-bert-stories": "engine.training.recipes.bert_stories:build",
    "scene-captioner": "engine.training.recipes.captioner:build",
    "induction-2l-attn-only": "engine.training.recipes.induction:build",
}


def _recipe(name: str) -> Callable[..., dict]:
    recipe = RECIPES[name]
    if isinstance(recipe, str):
        module, _, function = recipe.partition(":")
        recipe = getattr(importlib.import_module(module), function)
    return recipe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", choices=sorted(RECIPES), help="the checkpoint to rebuild")
    parser.add_argument("--out", type=Path, default=CHECKPOINTS, help="output folder (default assets/checkpoints)")
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (for a quick try)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    card = _recipe(args.name)(args.out, steps=args.steps, seed=args.seed)
    for key, value in card["final_metrics"].items():
        print(f"{key}: {value}")
    print(f"wrote {args.out / args.name}.safetensors/.json/.md in {card['wall_time_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
