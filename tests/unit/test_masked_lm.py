"""BERT's masking recipe, fill-in-the-blank against a hand-built model, and the shipped tiny-bert-stories card."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import engine
from engine.registry import CHECKPOINTS
from engine.training.masked_lm import MASK_RATE, SPLIT, MaskedStoriesTask, mask_tokens
from engine.training.task_base import IGNORE
from engine.vocab import MASK, tokenize_with_masks

NAME = "tiny-bert-stories"


def test_masking_recipe_proportions():
    gen = torch.Generator().manual_seed(0)
    specials = torch.tensor([0, 1, 2])  # never chosen
    ids = torch.randint(3, 50, (400, 250), generator=gen)
    ids[:, ::10] = 1  # some <bos>
    words = torch.arange(3, 50)
    inputs, targets = mask_tokens(ids, gen, mask_id=99, word_ids=words)
    is_word = torch.isin(ids, words)
    chosen = targets != IGNORE
    assert not chosen[~is_word].any() and torch.equal(targets[chosen], ids[chosen])
    assert abs(chosen.sum() / is_word.sum() - MASK_RATE) < 0.005
    n = int(chosen.sum())
    masked = int((inputs[chosen] == 99).sum())
    kept = int((inputs[chosen] == ids[chosen]).sum())
    replaced = n - masked - kept  # a random word (it may by chance be the same word: counted as kept)
    assert abs(masked / n - SPLIT[0]) < 0.015
    assert abs(kept / n - (SPLIT[2] + SPLIT[1] / len(words))) < 0.015
    assert abs(replaced / n - SPLIT[1] * (1 - 1 / len(words))) < 0.015
    assert torch.isin(inputs[chosen & (inputs != 99)], words).all()
    assert torch.equal(inputs[~chosen], ids[~chosen])  # untouched elsewhere
    assert not torch.isin(inputs, specials[2:]).logical_and(chosen).any()


def test_masking_is_repeatable_with_the_same_generator():
    ids = torch.arange(5, 45).repeat(8, 1)
    a = mask_tokens(ids, torch.Generator().manual_seed(3), mask_id=60, word_ids=torch.arange(5, 45))
    b = mask_tokens(ids, torch.Generator().manual_seed(3), mask_id=60, word_ids=torch.arange(5, 45))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_task_batches_score_only_chosen_positions():
    task = MaskedStoriesTask(seq_len_=32, n_stories=300)
    batch = task.sample(16, torch.Generator().manual_seed(1))
    assert batch.inputs.shape == (16, 32) and (batch.targets != IGNORE).any()
    assert task.vocab.tokens[task.mask_id] == MASK and not task.causal


def test_tokenize_with_masks():
    assert tokenize_with_masks("Lily found a [MASK] ball.") == ["lily", "found", "a", MASK, "ball", "."]
    assert tokenize_with_masks("<mask> [mask]") == [MASK, MASK]


def _hand_built(tmp_path):
    """A 1-layer encoder whose blocks do nothing (zero weights): the output at a position is
    unembed(LayerNorm(embedding)), so the blank's probabilities can be worked out by hand."""
    from engine.checkpoint import save_checkpoint
    from engine.families.transformer.network import Transformer, TransformerConfig
    from engine.vocab import Vocab

    vocab = Vocab.from_words(["cat", "dog", "sat", MASK])
    cfg = TransformerConfig(
        vocab_size=len(vocab),
        d_model=4,
        n_layers=1,
        n_heads=2,
        d_mlp=8,
        max_len=8,
        pos_encoding="learned",
        causal=False,
    )
    model = Transformer(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for name, p in model.named_parameters():
            if name.endswith("ln_final.weight") or ".ln" in name and name.endswith("weight"):
                p.fill_(1.0)
        mask_id = vocab.encode([MASK])[0]
        model.embed.weight[mask_id] = torch.tensor([1.0, -1.0, 1.0, -1.0])  # LayerNorm leaves it as it is
        model.unembed.weight[vocab.encode(["cat"])[0]] = torch.tensor([2.0, 0.0, 0.0, 0.0])  # logit 2
        model.unembed.weight[vocab.encode(["dog"])[0]] = torch.tensor([0.0, -1.0, 0.0, 0.0])  # logit 1
    card = {"title": "hand", "label": "hand", "family": "encoder", "description": "", "final_metrics": {}}
    save_checkpoint(tmp_path, "hand-mlm", model, kind="transformer", config=cfg.to_dict(), vocab=vocab, card=card)
    return tmp_path / "hand-mlm"


def test_fill_mask_equals_the_hand_computed_softmax(tmp_path):
    from engine.analysis.fill_mask import fill_mask
    from engine.families.transformer.adapter import load_own
    from engine.records import ModelSpec

    folder = _hand_built(tmp_path)
    model = load_own(ModelSpec("hand-mlm", "encoder", "hand", offline=True), folder.parent)
    out = fill_mask(model, "cat [MASK] sat", top_k=3)
    (blank,) = out.blanks
    assert blank.position == 2 and out.tokens.strings[2] == MASK
    # logits: cat 2, dog 1, every other of the 9 ids 0 (ln_eps makes LayerNorm ≈ identity here)
    z = np.zeros(9)
    z[model.tokenizer.encode(["cat"])[0]], z[model.tokenizer.encode(["dog"])[0]] = 2.0, 1.0
    p = np.exp(z) / np.exp(z).sum()
    assert blank.words[:2] == ("cat", "dog")
    np.testing.assert_allclose(blank.probs[:2], [p.max(), np.sort(p)[-2]], rtol=1e-4)
    assert not out.trace.causal


def test_shipped_card_figures_are_re_measured():
    from engine.training.recipes.bert_stories import masked_accuracy

    card = json.loads((CHECKPOINTS / f"{NAME}.json").read_text())["metadata"]
    model = engine.load(NAME)
    task = MaskedStoriesTask(seq_len_=64, n_stories=20_000, seed=0)
    metrics = card["final_metrics"]
    accuracy = masked_accuracy(model.module, task)
    assert accuracy == pytest.approx(metrics["held-out masked-token accuracy"], abs=0.01)
    unigram = metrics["unigram baseline accuracy (always the most frequent word)"]
    assert task.unigram_accuracy() == pytest.approx(unigram, abs=1e-4)
    assert accuracy > unigram + 0.25  # well above a guess that ignores context
    assert (CHECKPOINTS / f"{NAME}.safetensors").stat().st_size < 10e6


def test_shipped_model_is_listed_and_fills_a_blank():
    from engine.analysis.fill_mask import fill_mask

    spec = {s.id: s for s in engine.list_models()}[NAME]
    assert spec.offline and spec.family == "encoder"
    model = engine.load(NAME)
    out = fill_mask(model, "lily found a red ball . she gave [MASK] to tom .")
    (blank,) = out.blanks  # the ball, referred back to: a pronoun the context decides
    assert blank.words[0] == "it" and blank.probs[0] > 0.5 and blank.probs.sum() <= 1.0 + 1e-9
    nouns = fill_mask(model, "lily found a red [MASK] .", top_k=5).blanks[0]  # many nouns fit: spread out
    assert nouns.probs[0] < 0.5 and all(w not in {".", "the", "a"} for w in nouns.words)
