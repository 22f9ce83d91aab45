"""Held-out evaluation of trained models: the figures that go into model cards and are re-checked by tests.

Every function here reads a model and data and returns numbers; nothing trains or saves.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engine.corpora.stories import is_grammatical, pronoun_pairs, split_sentences
from engine.families.transformer.adapter import trace_own
from engine.families.transformer.network import Transformer
from engine.training.corpus_tasks import StoriesTask
from engine.vocab import BOS_ID, EOS_ID

EVAL_SEED = 4242


@torch.no_grad()
def held_out_loss(model: Transformer, task: StoriesTask, *, batches: int = 20, batch_size: int = 32) -> float:
    """Mean next-token cross-entropy (nats/token) on random windows of the held-out stories."""
    model.eval()
    gen = torch.Generator().manual_seed(EVAL_SEED)
    device = next(model.parameters()).device
    total = 0.0
    for _ in range(batches):
        batch = task.held_out(batch_size, gen).to(device)
        logits = model(batch.inputs, attn_impl="sdpa")  # (B, T, V)
        total += float(torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.targets.flatten()))
    return total / batches


@torch.no_grad()
def greedy(model: Transformer, prefix: list[int], *, max_new: int = 60) -> list[int]:
    """Greedy continuation of ``prefix`` until ``<eos>`` or ``max_new`` tokens (or the model's max_len)."""
    model.eval()
    device = next(model.parameters()).device
    ids = list(prefix)
    for _ in range(max_new):
        window = ids[-model.cfg.max_len :]
        logits = model(torch.tensor([window], device=device), attn_impl="sdpa")  # (1, T, V)
        nxt = int(logits[0, -1].argmax())
        if nxt == EOS_ID:
            break
        ids.append(nxt)
    return ids


def grammatical_samples(model: Transformer, task: StoriesTask, starts: list[str]) -> tuple[float, list[str]]:
    """Greedy stories from each start word; the share of their sentences that the grammar accepts.

    Returns:
        ``(fraction grammatical, the sample texts)``.
    """
    vocab = task.vocab
    samples, ok, total = [], 0, 0
    for word in starts:
        ids = greedy(model, [BOS_ID, *vocab.encode([word])])
        text = " ".join(vocab.decode(ids[1:]))
        samples.append(text)
        for sentence in split_sentences(text):
            total += 1
            ok += is_grammatical(sentence)
    return (ok / total if total else 0.0), samples


def pronoun_head(model: Transformer, task: StoriesTask, *, n_stories: int = 200) -> dict:
    """The head whose attention from a pronoun goes most to its antecedent, on held-out stories.

    For every (pronoun, antecedent) pair of :func:`pronoun_pairs` (he/she/him/her → the name), the
    weight from the pronoun's position to the antecedent's is read from the lazy trace; the baseline
    is what a uniform causal head would give (1 / number of visible keys).

    Returns:
        ``{"layer", "head", "score", "baseline", "pairs"}``.
    """
    vocab = task.vocab
    stories = task.test_stories[:n_stories]
    sums: np.ndarray | None = None
    baseline, count = 0.0, 0
    for words in stories:
        pairs = pronoun_pairs(" ".join(words), personal_only=True)
        if not pairs:
            continue
        ids = [BOS_ID, *vocab.encode(words)][: model.cfg.max_len]
        tr = trace_own(model, ids, vocab.tokens_for_display(ids), model_id="eval")
        if sums is None:
            sums = np.zeros((tr.n_layers, tr.n_heads))
        patterns = [tr.pattern(layer) for layer in range(tr.n_layers)]  # L × [H, n, n]
        for pron, ante in pairs:
            q, k = pron + 1, ante + 1  # +1 for <bos>
            if q >= len(ids):
                continue
            for layer, p in enumerate(patterns):
                sums[layer] += p[:, q, k]
            baseline += 1.0 / (q + 1)
            count += 1
    if sums is None or count == 0:
        return {"layer": None, "head": None, "score": math.nan, "baseline": math.nan, "pairs": 0}
    means = sums / count
    layer, head = np.unravel_index(int(means.argmax()), means.shape)
    return {
        "layer": int(layer),
        "head": int(head),
        "score": float(means[layer, head]),
        "baseline": baseline / count,
        "pairs": count,
    }
