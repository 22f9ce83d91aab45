"""The data both translators train on: the same generated pairs, vocabularies and held-out split.

Keeping one definition guarantees the transformer and the RNN translators are compared on the
same held-out sentences (no source sentence or date is on both sides of the split).
"""

from __future__ import annotations

from engine.corpora import train_test_split, translation_corpus, translation_vocab
from engine.vocab import Vocab

Pair = tuple[list[str], list[str]]

N_PAIRS = 60_000  # generated pairs before the split
DATE_FRACTION = 0.2  # share of dates among them
TEST_FRACTION = 0.05  # share of distinct sources held out
#: what the cards show translated
SAMPLES = (
    "the red car is fast .",
    "she sees the small black dog .",
    "the old tree is under the bridge .",
    "i have an umbrella .",
    "the girls are happy and tired .",
    "21 November 2026",
    "Saturday, 21 November 2026",
    "03/07/1999",
)


def vocabularies() -> dict[str, Vocab]:
    """``{"source": …, "target": …}``: every token the corpus can produce, after the specials."""
    src, tgt = translation_vocab()
    return {"source": Vocab.from_words(src), "target": Vocab.from_words(tgt)}


def split_pairs(seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """``(train, held-out)`` pairs: no source sentence or date is on both sides (repeats kept)."""
    pairs = translation_corpus(N_PAIRS, seed, date_fraction=DATE_FRACTION)
    return train_test_split(pairs, TEST_FRACTION, seed, key=lambda pair: tuple(pair[0]))


def is_date(pair: Pair) -> bool:
    """True for a date pair (its ISO target starts with a digit)."""
    return pair[1][0].isdigit()


def exact_match_shares(guesses: list[list[str]], pairs: list[Pair]) -> dict[str, float]:
    """``{"sentences", "dates", "all"}``: the share of pairs whose guess equals the reference (NaN when none)."""
    right = [g == t for g, (_, t) in zip(guesses, pairs)]
    dates = [is_date(p) for p in pairs]

    def share(flags: list[bool]) -> float:
        return sum(flags) / len(flags) if flags else float("nan")

    return {
        "sentences": share([r for r, d in zip(right, dates) if not d]),
        "dates": share([r for r, d in zip(right, dates) if d]),
        "all": share(right),
    }
