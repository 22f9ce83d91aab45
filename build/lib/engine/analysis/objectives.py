"""What each pretraining objective lets a position see, and the training examples it makes from a sentence.

Three objectives, on the same words ``w_0 … w_{n−1}``:

- **masked LM** (BERT): some words are hidden; every position sees every other (a full mask), and
  the model predicts the hidden words;
- **next token** (GPT): position ``i`` sees positions ``0 … i`` (a lower-triangular mask) and
  predicts ``w_{i+1}``;
- **span corruption** (T5): spans of words are replaced by sentinels ``<X>``, ``<Y>``, …; the
  encoder sees the whole corrupted input, the decoder writes ``<X> span <Y> span …`` seeing what it
  has written so far (causal) and, through cross-attention, the whole corrupted input.

Masks are boolean ``[query, key]`` arrays, True where the query may look. Everything is seeded, so a
sentence always gives the same examples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SENTINELS = ("<X>", "<Y>", "<Z>", "<W>", "<V>")
MLM_RATE = 0.15  # BERT: share of words chosen
SPAN_RATE = 0.15  # T5: share of words inside corrupted spans
MEAN_SPAN = 3  # T5: mean span length


def bidirectional_mask(n: int) -> np.ndarray:
    """Every position sees every position (an encoder: masked LM, T5's encoder)."""
    return np.ones((n, n), dtype=bool)


def causal_mask(n: int) -> np.ndarray:
    """Position ``i`` sees ``0 … i`` (a decoder: next token, T5's decoder)."""
    return np.tril(np.ones((n, n), dtype=bool))


@dataclass(frozen=True)
class MaskedExample:
    """BERT's input and targets: ``inputs[i]`` is ``[MASK]``, a random word or the word itself at chosen
    positions; ``targets[i]`` is the original word there and None elsewhere."""

    inputs: tuple[str, ...]
    targets: tuple[str | None, ...]


def masked_example(words: list[str], vocabulary: list[str], seed: int = 0, rate: float = MLM_RATE) -> MaskedExample:
    """One masked-LM example made from ``words`` (at least one word is chosen), as BERT's recipe does:
    of the chosen words 80% become ``[MASK]``, 10% a random word of ``vocabulary``, 10% stay."""
    rng = np.random.default_rng(seed)
    n = len(words)
    chosen = rng.random(n) < rate
    if n and not chosen.any():
        chosen[rng.integers(n)] = True
    roll = rng.random(n)
    inputs, targets = [], []
    for word, pick, r in zip(words, chosen, roll):
        if not pick:
            inputs.append(word)
            targets.append(None)
            continue
        inputs.append("[MASK]" if r < 0.8 else vocabulary[rng.integers(len(vocabulary))] if r < 0.9 else word)
        targets.append(word)
    return MaskedExample(tuple(inputs), tuple(targets))


def next_token_examples(words: list[str]) -> list[tuple[tuple[str, ...], str]]:
    """GPT's examples: every prefix ``w_0 … w_i`` with the word that follows it (``n − 1`` of them)."""
    return [(tuple(words[: i + 1]), words[i + 1]) for i in range(len(words) - 1)]


@dataclass(frozen=True)
class SpanExample:
    """T5's encoder input (spans replaced by sentinels) and decoder target (each sentinel, its span)."""

    inputs: tuple[str, ...]
    targets: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]  # [start, stop) of each corrupted span in the original words


def span_example(words: list[str], seed: int = 0, rate: float = SPAN_RATE, mean_span: int = MEAN_SPAN) -> SpanExample:
    """One span-corruption example: about ``rate`` of the words in non-overlapping spans of about
    ``mean_span`` words (at least one span; at most one per sentinel), T5's recipe on a small scale."""
    rng = np.random.default_rng(seed)
    n = len(words)
    n_noise = max(1, round(n * rate)) if n else 0
    n_spans = max(1, min(len(SENTINELS), round(n_noise / mean_span))) if n else 0
    lengths = np.full(n_spans, n_noise // max(n_spans, 1))
    lengths[: n_noise - int(lengths.sum())] += 1
    spans, taken = [], np.zeros(n, dtype=bool)
    for length in lengths:
        length = int(min(max(length, 1), n))
        free = [s for s in range(n - length + 1) if not taken[max(0, s - 1) : s + length + 1].any()]
        if not free:
            break
        start = int(free[rng.integers(len(free))])
        taken[start : start + length] = True
        spans.append((start, start + length))
    spans.sort()
    inputs, targets, at = [], [], 0
    for sentinel, (start, stop) in zip(SENTINELS, spans):
        inputs += [*words[at:start], sentinel]
        targets += [sentinel, *words[start:stop]]
        at = stop
    inputs += words[at:]
    targets.append(SENTINELS[len(spans)] if len(spans) < len(SENTINELS) else "</s>")
    return SpanExample(tuple(inputs), tuple(targets), tuple(spans))
