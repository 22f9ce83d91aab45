"""The story grammar and what can be read back from text written in it: :func:`is_grammatical`
(a recogniser over the rules), :func:`story_tokens`, :func:`split_sentences`,
:data:`STORY_VOCAB_HINT` and :func:`pronoun_pairs` (pronoun → antecedent links)."""

from __future__ import annotations

import re
from functools import lru_cache

from engine.corpora.stories.lexicon import (
    CHARACTERS,
    COLOURS,
    FEELINGS,
    OBJECTS,
    PLACES,
    PRONOUN_GENDER,
    SIZES,
    VOWELS,
)

# ---- the grammar (used by is_grammatical; the generator writes a subset of it) -------------------
# A symbol in <angle brackets> is a non-terminal; a trailing "?" makes a symbol optional; anything else
# is a word. Word classes are sets of words.

NAMES_LC = tuple(n.lower() for n in CHARACTERS)


def _split_vowel(words: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(w for w in words if not w.startswith(VOWELS)), tuple(w for w in words if w.startswith(VOWELS))


_OBJ_C, _OBJ_V = _split_vowel(OBJECTS)
_COL_C, _COL_V = _split_vowel(COLOURS)
_SIZE_C, _SIZE_V = _split_vowel(SIZES)

_CLASSES: dict[str, frozenset[str]] = {
    "<name>": frozenset(NAMES_LC),
    "<noun>": frozenset(OBJECTS),
    "<noun_c>": frozenset(_OBJ_C),
    "<noun_v>": frozenset(_OBJ_V),
    "<colour>": frozenset(COLOURS),
    "<colour_c>": frozenset(_COL_C),
    "<colour_v>": frozenset(_COL_V),
    "<size>": frozenset(SIZES),
    "<size_c>": frozenset(_SIZE_C),
    "<size_v>": frozenset(_SIZE_V),
    "<place>": frozenset(PLACES),
    "<feeling>": frozenset(FEELINGS),
}


def _alts(*texts: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(t.split()) for t in texts)


_RULES: dict[str, tuple[tuple[str, ...], ...]] = {
    "<s>": _alts("<opener>? <core> ."),
    "<opener>": _alts("one day ,", "then"),
    "<core>": _alts(
        "<subj> found <indef> <loc>?",
        "<subj> saw <indef> <loc>?",
        "<subj> had <indef> <loc>?",
        "<subj> went to the <place>",
        "<subj> played in the <place>",
        "<subj> was in the <place>",
        "<subj> were in the <place>",
        "<subj> saw <person> <loc>?",
        "<subj> said hello to <person> <loc>?",
        "<subj> gave <thing> to <person>",
        "<subj> gave <person> <def>",
        "<subj> threw <thing> to <person>",
        "<subj> threw <thing> over the fence",
        "<subj> showed <thing> to <person>",
        "<subj> liked <thing>",
        "<subj> liked <thing> very much",
        "<subj> lost <thing> <loc>?",
        "<subj> found <thing> <loc>?",
        "<subj> looked for <thing>",
        "<subj> took <thing> home",
        "<subj> played with <thing> <loc>?",
        "<subj> dropped <thing> <loc>?",
        "<subj> kept <thing>",
        "<subj> thanked <person>",
        "<subj> hugged <person>",
        "<sg_subj> was <feeling>",
        "<pl_subj> were <feeling>",
        "<subj> smiled",
        "<subj> laughed",
        "<thing> was <colour>",
        "<thing> was <size>",
    ),
    "<subj>": _alts("<sg_subj>", "<pl_subj>"),
    "<sg_subj>": _alts("<name>", "he", "she"),
    "<pl_subj>": _alts("they", "<name> and <name>"),
    "<person>": _alts("<name>", "him", "her"),
    "<thing>": _alts("it", "<def>"),
    "<def>": _alts("the <size>? <colour>? <noun>"),
    "<indef>": _alts(
        "a <size_c> <colour>? <noun>",
        "an <size_v> <colour>? <noun>",
        "a <colour_c> <noun>",
        "an <colour_v> <noun>",
        "a <noun_c>",
        "an <noun_v>",
    ),
    "<loc>": _alts("in the <place>"),
}

_TOKEN = re.compile(r"\w+|[^\w\s]")


def story_tokens(text: str) -> list[str]:
    """Word tokens of a story or sentence: lowercased, ``\\w+|[^\\w\\s]`` (punctuation on its own)."""
    return _TOKEN.findall(text.lower())


def _recognise(tokens: tuple[str, ...]) -> bool:
    @lru_cache(maxsize=None)
    def match_symbol(symbol: str, pos: int) -> frozenset[int]:
        if symbol in _CLASSES:
            return frozenset({pos + 1}) if pos < len(tokens) and tokens[pos] in _CLASSES[symbol] else frozenset()
        if symbol in _RULES:
            ends: set[int] = set()
            for alt in _RULES[symbol]:
                ends |= match_sequence(alt, pos)
            return frozenset(ends)
        return frozenset({pos + 1}) if pos < len(tokens) and tokens[pos] == symbol else frozenset()

    def match_sequence(symbols: tuple[str, ...], pos: int) -> set[int]:
        positions = {pos}
        for sym in symbols:
            optional = sym.endswith("?") and len(sym) > 1
            name = sym[:-1] if optional else sym
            nxt: set[int] = set(positions) if optional else set()
            for p in positions:
                nxt |= match_symbol(name, p)
            positions = nxt
            if not positions:
                break
        return positions

    return len(tokens) in match_symbol("<s>", 0)


def is_grammatical(sentence: str) -> bool:
    """Whether one sentence belongs to the story grammar.

    Case and spacing do not matter ("lily found a red ball ." and "Lily found a red ball." are both
    accepted); the sentence must end with its full stop. Articles must agree ("an apple", "a red
    apple"). The check is per sentence: it does not know whether *she* has an antecedent.

    Args:
        sentence: one sentence (use :func:`split_sentences` on longer text).

    Returns:
        True when the grammar can produce the sentence's tokens.
    """
    if not isinstance(sentence, str):
        return False
    tokens = tuple(story_tokens(sentence))
    return bool(tokens) and _recognise(tokens)


def split_sentences(text: str) -> list[str]:
    """Split text (or a generated token stream) after each ``.``; a trailing fragment is kept.

    Returns:
        Sentences as space-joined lowercase tokens, e.g. ``["lily found a red ball .", "she smiled ."]``.
    """
    out: list[str] = []
    current: list[str] = []
    for tok in story_tokens(text):
        current.append(tok)
        if tok == ".":
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


def _vocab() -> frozenset[str]:
    words: set[str] = set()
    for cls in _CLASSES.values():
        words |= cls
    for alts in _RULES.values():
        for alt in alts:
            for sym in alt:
                name = sym[:-1] if sym.endswith("?") and len(sym) > 1 else sym
                if not name.startswith("<"):
                    words.add(name)
    return frozenset(words)


#: Every lowercase token the grammar can produce (names, words and the marks "." and ",").
STORY_VOCAB_HINT: frozenset[str] = _vocab()

# ---- reading pronouns back -----------------------------------------------------------------------


def pronoun_pairs(story_text: str, personal_only: bool = False) -> list[tuple[int, int]]:
    """Pronoun → antecedent links in a story, as word-token indices.

    Tokens are those of :func:`story_tokens` (lowercase, ``\\w+|[^\\w\\s]``). The antecedent is the
    most recent mention *by name* (or, for *it*, the most recent object noun) before the pronoun:

    * he/him → latest boy's name; she/her → latest girl's name;
    * it → latest object noun;
    * they → both names of the latest "NAME and NAME" (two pairs with the same pronoun index).

    A pronoun with no antecedent in the text (possible in a model's sample) is skipped.

    Args:
        story_text: a story (or any text written in the grammar).
        personal_only: only he/him/she/her (gendered, one antecedent each).

    Returns:
        ``[(pronoun_index, antecedent_index), ...]`` in text order.
    """
    tokens = story_tokens(story_text)
    last_by_gender: dict[str, int] = {}
    last_object: int | None = None
    last_pair: tuple[int, int] | None = None
    pairs: list[tuple[int, int]] = []
    objects = set(OBJECTS)
    names = {n.lower(): g for n, g in CHARACTERS.items()}
    for i, tok in enumerate(tokens):
        if tok in names:
            last_by_gender[names[tok]] = i
            if i >= 2 and tokens[i - 1] == "and" and tokens[i - 2] in names:
                last_pair = (i - 2, i)
        elif tok in objects:
            last_object = i
        elif tok in ("he", "him", "she", "her"):
            g = PRONOUN_GENDER[tok]
            if g in last_by_gender:
                pairs.append((i, last_by_gender[g]))
        elif personal_only:
            continue
        elif tok == "it" and last_object is not None:
            pairs.append((i, last_object))
        elif tok == "they" and last_pair is not None:
            pairs.extend((i, j) for j in last_pair)
    return pairs
