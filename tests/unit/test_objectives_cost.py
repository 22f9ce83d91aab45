"""Pretraining objectives' masks and examples against their definitions; the cost table's formulas."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis.cost import KERNEL, counts, crossover, measure
from engine.analysis.objectives import (
    SENTINELS,
    bidirectional_mask,
    causal_mask,
    masked_example,
    next_token_examples,
    span_example,
)

WORDS = "lily found a red ball . she gave it to tom and tom threw the ball back .".split()


def test_masks_follow_their_definitions():
    n = 6
    full, causal = bidirectional_mask(n), causal_mask(n)
    for i in range(n):
        for j in range(n):
            assert full[i, j]
            assert causal[i, j] == (j <= i)


@pytest.mark.parametrize("seed", range(20))
def test_masked_example_follows_berts_recipe(seed):
    ex = masked_example(WORDS, ["cat", "dog"], seed=seed)
    assert len(ex.inputs) == len(ex.targets) == len(WORDS) and any(t is not None for t in ex.targets)
    for word, inp, target in zip(WORDS, ex.inputs, ex.targets):
        if target is None:
            assert inp == word
        else:
            assert target == word and inp in {"[MASK]", "cat", "dog", word}


def test_masked_example_rate_over_many_seeds():
    chosen = [sum(t is not None for t in masked_example(WORDS * 10, ["x"], seed=s).targets) for s in range(200)]
    assert abs(np.mean(chosen) / (len(WORDS) * 10) - 0.15) < 0.01


def test_next_token_examples_are_every_prefix_and_its_next_word():
    ex = next_token_examples(WORDS)
    assert len(ex) == len(WORDS) - 1
    for i, (prefix, nxt) in enumerate(ex):
        assert list(prefix) == WORDS[: i + 1] and nxt == WORDS[i + 1]


@pytest.mark.parametrize("seed", range(30))
def test_span_example_rebuilds_the_sentence(seed):
    ex = span_example(WORDS, seed=seed)
    assert ex.spans and sum(b - a for a, b in ex.spans) == round(len(WORDS) * 0.15)
    # replacing each sentinel of the input by its span in the target gives the original words back
    pieces = {}
    current = None
    for tok in ex.targets:
        if tok in SENTINELS or tok == "</s>":
            current = tok
            pieces[current] = []
        else:
            pieces[current].append(tok)
    rebuilt = [w for tok in ex.inputs for w in (pieces[tok] if tok in SENTINELS else [tok])]
    assert rebuilt == WORDS
    assert ex.targets[-1] == SENTINELS[len(ex.spans)]  # the closing sentinel, as T5 writes it
    for (a, b), (c, d) in zip(ex.spans, ex.spans[1:]):
        assert b < c  # spans never touch


def test_counts_follow_the_table():
    n, d = 300, 40
    attention, rnn, conv = counts(n, d)
    assert attention.multiply_adds == 2 * n * n * d and attention.memory_values == n * n
    assert rnn.multiply_adds == 2 * n * d * d and rnn.sequential_steps == n and rnn.path_length == n
    assert conv.multiply_adds == KERNEL * n * d * d and conv.sequential_steps == 1
    assert KERNEL ** (conv.path_length - 1) < n <= KERNEL**conv.path_length
    a, r, _ = counts(crossover(d), d)
    assert a.multiply_adds == r.multiply_adds  # attention costs more than the RNN only past n = d


def test_measure_times_the_three_layers():
    times = measure(64, 16, repeats=1)
    assert set(times) == {"self-attention", "recurrent (RNN)", "convolution"} and all(t > 0 for t in times.values())
    with pytest.raises(ValueError):
        measure(10_000, 16)
