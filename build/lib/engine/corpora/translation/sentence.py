"""Tokens and sentence structure of the toy grammar: :func:`tokenize` / :func:`detokenize`, the
:class:`NP` and :class:`Sentence` records, and their rendering into English tokens, French tokens
and the gold alignment (agreement, elision, adjective order)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.corpora.translation.lexicon import (
    BE_EN,
    BE_FR,
    PREPOSITIONS,
    SUBJECT_PRONOUNS,
    VOWELS_EN,
    VOWELS_FR,
    Adjective,
    Noun,
    Verb,
)

# ---- tokens --------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+'|\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Lowercase tokens; ``l'`` and ``j'`` keep their apostrophe and stand alone.

    ``tokenize("L'arbre est vert.") == ["l'", "arbre", "est", "vert", "."]``. Curly apostrophes are
    read as straight ones.
    """
    return _TOKEN.findall(text.replace("\u2019", "'").lower())


def detokenize(tokens: list[str]) -> str:
    """Join tokens with spaces, except after an elided word: ``["l'", "arbre", "."]`` → ``"l'arbre ."``."""
    out = ""
    for tok in tokens:
        if out and not out.endswith("'"):
            out += " "
        out += tok
    return out


# ---- sentence structure --------------------------------------------------------------------------


@dataclass(frozen=True)
class NP:
    det: str  # "the" | "a"
    noun: Noun
    plural: bool = False
    pre: Adjective | None = None  # an adjective that goes before the noun in French
    post: Adjective | None = None  # an adjective that goes after the noun in French


@dataclass(frozen=True)
class Sentence:
    subject: NP | str  # an NP or an English subject pronoun
    kind: str  # "verb" | "adj" | "prep"
    verb: Verb | None = None
    obj: NP | None = None  # the object of the verb, or of the preposition
    adjs: tuple[Adjective, ...] = ()
    prep: str | None = None
    period: bool = True


def person_of(subject: NP | str) -> int:
    if isinstance(subject, str):
        return SUBJECT_PRONOUNS[subject][1]
    return 4 if subject.plural else 2


def agreement_of(subject: NP | str) -> tuple[str, bool] | None:
    """(gender, plural) for a predicate adjective, None when unknown (I, you, we)."""
    if isinstance(subject, str):
        g = SUBJECT_PRONOUNS[subject][2]
        return None if g is None else (g[0], g.endswith("p"))
    return subject.noun.gender, subject.plural


def _render_np(np_: NP) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    """English tokens, French tokens and their alignment for one noun phrase."""
    n = np_.noun
    en_words = [w.en for w in (np_.pre, np_.post) if w] + [n.en_pl if np_.plural else n.en]
    if np_.det == "the":
        det_en = "the"
    else:
        det_en = "an" if en_words[0].startswith(VOWELS_EN) else "a"
    en = [det_en, *en_words]

    g, pl = n.gender, np_.plural
    pre_fr = None
    if np_.pre is not None:
        pre_fr = np_.pre.form(g, pl)
        if g == "m" and not pl and n.elide and np_.pre.m_vowel:
            pre_fr = np_.pre.m_vowel
    first_vowel = n.elide if pre_fr is None else pre_fr.startswith(VOWELS_FR)
    if np_.det == "the":
        det_fr = "les" if pl else ("l'" if first_vowel else ("le" if g == "m" else "la"))
    else:
        det_fr = "un" if g == "m" else "une"
    fr = [det_fr]
    align = [(0, 0)]
    i_en = 1
    if pre_fr is not None:
        fr.append(pre_fr)
        align.append((i_en, len(fr) - 1))
        i_en += 1
    i_post_en = None
    if np_.post is not None:
        i_post_en = i_en
        i_en += 1
    fr.append(n.fr_pl if pl else n.fr)
    align.append((i_en, len(fr) - 1))
    if np_.post is not None:
        fr.append(np_.post.form(g, pl))
        align.append((i_post_en, len(fr) - 1))
    return en, fr, align


def render(s: Sentence) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    """English tokens, French tokens and the gold alignment of a sentence."""
    en: list[str] = []
    fr: list[str] = []
    align: list[tuple[int, int]] = []

    def add(e: list[str], f: list[str], a: list[tuple[int, int]]) -> None:
        align.extend((i + len(en), j + len(fr)) for i, j in a)
        en.extend(e)
        fr.extend(f)

    person = person_of(s.subject)
    if isinstance(s.subject, str):
        subj_fr = SUBJECT_PRONOUNS[s.subject][0]
        subj_idx = (len(en), len(fr))
        en.append(s.subject)
        fr.append(subj_fr)
        align.append(subj_idx)
    else:
        add(*_render_np(s.subject))
    if s.kind == "verb":
        assert s.verb is not None and s.obj is not None
        verb_fr = s.verb.fr[person]
        if person == 0 and verb_fr.startswith(VOWELS_FR):
            fr[-1] = "j'"
        add([s.verb.en3 if person == 2 else s.verb.en], [verb_fr], [(0, 0)])
        add(*_render_np(s.obj))
    else:
        add([BE_EN[person]], [BE_FR[person]], [(0, 0)])
        if s.kind == "prep":
            assert s.prep is not None and s.obj is not None
            add([s.prep], [PREPOSITIONS[s.prep]], [(0, 0)])
            add(*_render_np(s.obj))
        else:
            agr = agreement_of(s.subject)
            assert agr is not None and s.adjs
            for k, adj in enumerate(s.adjs):
                if k:
                    add(["and"], ["et"], [(0, 0)])
                add([adj.en], [adj.form(*agr)], [(0, 0)])
    if s.period:
        add(["."], ["."], [(0, 0)])
    return en, fr, align
