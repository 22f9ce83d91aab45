"""Shipped own text checkpoints: they load offline through engine.load, trace, and score what their cards say."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

import engine
from engine.registry import CHECKPOINTS, own_checkpoints

STORIES = "tiny-gpt-stories"


@pytest.fixture(scope="module")
def stories():
    return engine.load(STORIES)


@pytest.fixture(scope="module")
def card():
    return json.loads((CHECKPOINTS / f"{STORIES}.json").read_text())["metadata"]


@pytest.fixture(scope="module")
def task():
    from engine.training.corpus_tasks import StoriesTask

    return StoriesTask(seq_len_=96, n_stories=20_000, seed=0)


def test_listed_offline_with_family_and_label():
    specs = {s.id: s for s in engine.list_models()}
    assert specs[STORIES].offline and specs[STORIES].family == "decoder"
    assert "stories" in specs[STORIES].label.lower()
    assert own_checkpoints()[STORIES][1] == "transformer"


def test_trace_is_causal_and_rows_sum_to_one(stories):
    tr = engine.trace(stories, "Lily found a red ball. She gave it to Tom.")
    assert tr.tokens.strings[:3] == ("<bos>", "lily", "found")
    assert tr.causal and tr.family == "decoder"
    for layer in range(tr.n_layers):
        p = tr.pattern(layer)
        np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-5)
        assert np.all(np.triu(p, 1) == 0)


def test_trace_matches_the_models_own_pattern(stories):
    """The lazy pattern equals the explicit path's hook_pattern of the shipped weights."""
    from engine.capture import capture

    tr = engine.trace(stories, "Tom saw Mia. He gave her a blue kite.")
    ids = torch.tensor([tr.tokens.ids], device=stories.device)
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(tr.n_layers)]
    with torch.no_grad(), capture(stories.module, names=names) as acts:
        stories.module(ids, attn_impl="explicit")
    for layer, name in enumerate(names):
        np.testing.assert_allclose(tr.pattern(layer), acts[name][0].cpu().numpy(), atol=1e-5)


def test_unknown_words_and_truncation_are_reported(stories):
    tr = engine.trace(stories, "Lily found a quantum zebra.", max_tokens=5)
    assert tr.truncated and len(tr.tokens) == 5
    assert any("quantum" in n for n in tr.notices)
    assert any("only the first 5" in n for n in tr.notices)


def test_causal_toggle_on_own_model(stories):
    tr = engine.trace(stories, "Lily found a red ball.", causal=False)
    assert not tr.causal and np.triu(tr.pattern(0), 1).sum() > 0


def test_held_out_loss_beats_unigram_and_matches_card(stories, task, card):
    from engine.training.evaluate import held_out_loss

    loss = held_out_loss(stories.module, task)
    metrics = card["final_metrics"]
    assert loss < 0.5 * task.unigram_loss()
    assert abs(loss - metrics["held-out loss (nats/token)"]) < 0.02
    assert abs(task.unigram_loss() - metrics["unigram baseline loss (nats/token)"]) < 1e-3


def test_greedy_samples_are_grammatical(stories, task, card):
    from engine.training.evaluate import grammatical_samples

    share, samples = grammatical_samples(stories.module, task, ["lily", "tom", "one", "max", "anna", "jack"])
    assert share >= 0.9, samples
    assert abs(share - card["final_metrics"]["greedy samples: grammatical sentences"]) < 1e-6


def test_a_pronoun_head_is_visible(stories, task, card):
    from engine.training.evaluate import pronoun_head

    found = pronoun_head(stories.module, task)
    assert found["pairs"] > 50
    assert found["score"] > 2 * found["baseline"]
    assert f"{found['layer']}.{found['head']}" == card["final_metrics"]["pronoun head (layer.head)"]


def test_every_checkpoint_the_readme_lists_ships(repo_root):
    """The README's checkpoint table names what assets/checkpoints holds: weights, config and card each
    (tests load them without a skip, so a missing one fails here and where it is used)."""
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    table = readme.split("### Our own checkpoints", 1)[1].split("\n\n", 3)[2]
    names = re.findall(r"^\| `([a-z0-9-]+)` \|", table, flags=re.M)
    assert len(names) >= 6, table
    for name in names:
        for suffix in (".json", ".safetensors", ".md"):
            assert (CHECKPOINTS / f"{name}{suffix}").is_file(), f"{name}{suffix} is missing from assets/checkpoints"
    assert set(names) == set(own_checkpoints()), "the README's table and the shipped checkpoints differ"
