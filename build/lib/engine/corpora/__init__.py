"""Corpora the project writes itself (seeded, pure Python, nothing downloaded).

* :mod:`.stories` — children's stories with named characters, pronouns that refer back and repeated
  objects (coreference and induction for a tiny GPT);
* :mod:`.translation` — a toy English → French grammar with adjective–noun swaps, gender agreement
  and elision (alignment maps that cross);
* :mod:`.dates` — written dates → ISO 8601, digit by digit.

This module turns them into token lists for training::

    from engine.corpora import story_corpus, translation_corpus, train_test_split
    stories = story_corpus(20_000, seed=0)                   # [["lily", "found", "a", ...], ...]
    pairs = translation_corpus(50_000, seed=0)               # [(src_tokens, tgt_tokens), ...]
    train, test = train_test_split(pairs, 0.1, seed=0)       # no pair is on both sides

Tokens are lowercase with punctuation on its own. Stories and English use ``\\w+|[^\\w\\s]`` (the
same tokens as :func:`engine.vocab.tokenize` gives for them, since they have no
apostrophes). French keeps the elided article with its apostrophe as one token (``l'`` ``arbre``),
so French text must be split with :func:`tokenize` here, not with ``vocab.tokenize`` (which would
keep ``l'arbre`` whole). Dates put each digit in its own token (see :mod:`.dates`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from engine.corpora import dates, stories, translation
from engine.corpora.dates import generate_date_pairs, normalise, to_tokens_src, to_tokens_tgt
from engine.corpora.stories import (
    STORY_VOCAB_HINT,
    generate_stories,
    is_grammatical,
    pronoun_pairs,
    story_tokens,
)
from engine.corpora.translation import (
    EN_VOCAB,
    FR_VOCAB,
    alignment,
    detokenize,
    generate_pairs,
    suggest,
    tokenize,
    translate,
)

__all__ = [
    "EN_VOCAB",
    "FR_VOCAB",
    "STORY_VOCAB_HINT",
    "alignment",
    "dates",
    "detokenize",
    "generate_date_pairs",
    "generate_pairs",
    "generate_stories",
    "is_grammatical",
    "normalise",
    "pronoun_pairs",
    "stories",
    "story_corpus",
    "story_tokens",
    "story_vocab",
    "suggest",
    "to_tokens_src",
    "to_tokens_tgt",
    "tokenize",
    "target_text",
    "train_test_split",
    "translate",
    "translation",
    "translation_corpus",
    "translation_vocab",
]

T = TypeVar("T")


def story_corpus(n: int, seed: int) -> list[list[str]]:
    """``n`` stories as token lists (lowercase, punctuation split): ``[["lily", "found", ...], ...]``."""
    return [story_tokens(s) for s in generate_stories(n, seed)]


def translation_corpus(n: int, seed: int, date_fraction: float = 0.2) -> list[tuple[list[str], list[str]]]:
    """``n`` (source tokens, target tokens) pairs: English → French sentences mixed with dates → ISO.

    ``round(n * date_fraction)`` of the pairs are dates, the rest sentences, shuffled together. One
    model learns both; the source tells which task it is (month names and digits only occur in
    dates). Sentence tokens come from :func:`tokenize`, dates from :func:`dates.to_tokens_src` /
    :func:`dates.to_tokens_tgt`:

        (["the", "red", "car", "is", "fast", "."], ["la", "voiture", "rouge", "est", "rapide", "."])
        (["2", "1", "november", "2", "0", "2", "6"], ["2", "0", "2", "6", "-", "1", "1", "-", "2", "1"])

    Raises:
        ValueError: ``n < 0`` or ``date_fraction`` outside [0, 1].
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 0.0 <= date_fraction <= 1.0:
        raise ValueError(f"date_fraction must be in [0, 1], got {date_fraction}")
    rng = random.Random(seed)
    seed_sentences, seed_dates = rng.getrandbits(32), rng.getrandbits(32)
    n_dates = round(n * date_fraction)
    items: list[tuple[list[str], list[str]]] = [
        (tokenize(en), tokenize(fr)) for en, fr in generate_pairs(n - n_dates, seed_sentences)
    ]
    items += [(to_tokens_src(src), to_tokens_tgt(tgt)) for src, tgt in generate_date_pairs(n_dates, seed_dates)]
    rng.shuffle(items)
    return items


def target_text(tokens: Sequence[str]) -> str:
    """A translator's target tokens as text: a date's characters joined (``2026-11-21``), French words spaced
    as usual (not after ``l'`` / ``j'``, :func:`detokenize`); ``<eos>`` dropped."""
    words = [t for t in tokens if t != "<eos>"]
    if words and all(t.isdigit() or t == "-" for t in words):
        return "".join(words)
    return detokenize(words)


def story_vocab() -> list[str]:
    """Every token a story can contain, sorted."""
    return sorted(STORY_VOCAB_HINT)


def translation_vocab() -> tuple[list[str], list[str]]:
    """``(source tokens, target tokens)`` that :func:`translation_corpus` can produce, sorted.

    Source: :data:`EN_VOCAB` plus the date words (full and 3-letter months, weekdays), digits, "," and
    "/". Target: :data:`FR_VOCAB` plus digits and "-".
    """
    digits = [str(i) for i in range(10)]
    date_words = {m.lower() for m in dates.MONTHS} | {m[:3].lower() for m in dates.MONTHS}
    date_words |= {w.lower() for w in dates._WEEKDAYS}
    src = set(EN_VOCAB) | date_words | set(digits) | {",", "/"}
    tgt = set(FR_VOCAB) | set(digits) | {"-"}
    return sorted(src), sorted(tgt)


def _freeze(x: Any) -> Hashable:
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    return x


def train_test_split(
    items: Sequence[T],
    test_fraction: float,
    seed: int,
    key: Callable[[T], Hashable] | None = None,
    dedupe: bool = False,
) -> tuple[list[T], list[T]]:
    """Split ``items`` so that no item in the test set also occurs in the training set.

    Items are grouped by ``key`` (default: the item itself, lists compared by value); the distinct
    groups are shuffled with ``seed`` and ``round(test_fraction × groups)`` of them go to the test
    side. Every copy of a duplicated item therefore lands on the same side. Order within each side
    follows ``items``.

    Args:
        items: e.g. token lists or (source, target) pairs.
        test_fraction: share of *distinct* items held out, in [0, 1].
        seed: random seed.
        key: what counts as "the same item" (e.g. ``lambda pair: tuple(pair[0])`` for same source).
        dedupe: keep only the first copy of each item on each side.

    Returns:
        ``(train, test)``.
    """
    if not 0.0 <= test_fraction <= 1.0:
        raise ValueError(f"test_fraction must be in [0, 1], got {test_fraction}")
    keys = [_freeze(key(x)) if key is not None else _freeze(x) for x in items]
    distinct = list(dict.fromkeys(keys))
    random.Random(seed).shuffle(distinct)
    test_keys = set(distinct[: round(len(distinct) * test_fraction)])
    train: list[T] = []
    test: list[T] = []
    seen: set[Hashable] = set()
    for x, k in zip(items, keys):
        if dedupe:
            if k in seen:
                continue
            seen.add(k)
        (test if k in test_keys else train).append(x)
    return train, test
