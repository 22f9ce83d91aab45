"""Random sentences of the toy grammar: :func:`generate_pairs` draws sensible subjects, verbs,
objects and adjectives (no "the small apple is big") and renders (English, French) pairs."""

from __future__ import annotations

import random

from engine.corpora.translation.lexicon import (
    ADJ_LIST,
    NOUN_LIST,
    PREP_OBJECTS,
    PREPOSITIONS,
    SUBJECT_PRONOUNS,
    VERB_LIST,
    Adjective,
    Noun,
)
from engine.corpora.translation.sentence import NP, Sentence, detokenize, render

# ---- generator -----------------------------------------------------------------------------------

_SUBJECT_NOUNS = tuple(n for n in NOUN_LIST if n.animate)
_PRE = tuple(a for a in ADJ_LIST if a.before)
_POST = tuple(a for a in ADJ_LIST if not a.before)


# adjectives of one group do not describe the same noun twice ("the small apple is big")
_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"red", "black", "white", "green", "blue", "grey", "yellow", "brown", "pink"}),
    frozenset({"big", "small"}),
    frozenset({"fast", "slow"}),
    frozenset({"clean", "dirty"}),
    frozenset({"happy", "sad", "tired"}),
    frozenset({"old", "new", "young"}),
    frozenset({"beautiful", "pretty", "good"}),
)


def _clash(a: Adjective, others: tuple[Adjective | None, ...]) -> bool:
    return any(o is not None and (o == a or any(a.en in g and o.en in g for g in _GROUPS)) for o in others)


def _fits(noun: Noun, spec: frozenset[str]) -> bool:
    return noun.kind in spec or noun.en in spec


def _random_np(rng: random.Random, nouns: tuple[Noun, ...] | list[Noun] = NOUN_LIST) -> NP:
    noun = rng.choice(nouns)
    plural = rng.random() < 0.2
    det = "the" if plural or rng.random() < 0.6 else "a"
    pre = post = None
    if rng.random() < 0.35:
        pre = rng.choice([a for a in _PRE if _fits(noun, a.kinds)])
    if rng.random() < 0.5:
        post = rng.choice([a for a in _POST if _fits(noun, a.kinds) and not _clash(a, (pre,))])
    return NP(det, noun, plural, pre, post)


def _random_sentence(rng: random.Random) -> Sentence:
    r = rng.random()
    if r < 0.5:  # subject verb object
        subject: NP | str
        subject = rng.choice(tuple(SUBJECT_PRONOUNS)) if rng.random() < 0.5 else _random_np(rng, _SUBJECT_NOUNS)
        verb = rng.choice(VERB_LIST)
        objects = [n for n in NOUN_LIST if _fits(n, verb.objects)]
        return Sentence(subject, "verb", verb=verb, obj=_random_np(rng, objects))
    if r < 0.8:  # subject is adjective (and adjective)
        if rng.random() < 0.3:
            subject = rng.choice(("he", "she", "they"))
            kind = "person"
        else:
            subject = _random_np(rng)
            kind = subject.noun.kind
        used = (subject.pre, subject.post) if isinstance(subject, NP) else ()
        pool = [a for a in ADJ_LIST if kind in a.kinds and not _clash(a, used)]
        first = rng.choice(pool)
        adjs: tuple[Adjective, ...] = (first,)
        if rng.random() < 0.2:
            adjs = (first, rng.choice([a for a in pool if not _clash(a, (first,))]))
        return Sentence(subject, "adj", adjs=adjs)
    prep = rng.choice(tuple(PREPOSITIONS))
    objects = [n for n in NOUN_LIST if _fits(n, PREP_OBJECTS[prep])]
    if prep == "with" or rng.random() < 0.4:
        subject = rng.choice(tuple(SUBJECT_PRONOUNS)) if rng.random() < 0.5 else _random_np(rng, _SUBJECT_NOUNS)
    else:
        subject = _random_np(rng, [n for n in NOUN_LIST if n.kind in ("person", "animal", "thing", "food")])
    obj = _random_np(rng, [n for n in objects if not (isinstance(subject, NP) and n == subject.noun)] or objects)
    return Sentence(subject, "prep", prep=prep, obj=obj)


def generate_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` (English, French) sentence pairs; the same ``(n, seed)`` always gives the same pairs.

    Both sides are written as tokens separated by spaces (no space after ``l'``/``j'``) and end with
    " ." — e.g. ``("she sees the small black dog .", "elle voit le petit chien noir .")``.
    Duplicates are possible (short sentences like "he is happy ." recur); split with
    :func:`engine.corpora.train_test_split`, which keeps them on one side.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        en, fr, _ = render(_random_sentence(rng))
        out.append((detokenize(en), detokenize(fr)))
    return out
