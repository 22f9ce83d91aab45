"""Reading English in the toy grammar: the parser, :func:`translate`, :func:`alignment`, and
:func:`suggest` (close known words, for :class:`UnknownWordError`)."""

from __future__ import annotations

from engine.corpora.translation.lexicon import (
    ADJECTIVES,
    BE_EN,
    EN_VOCAB,
    NOUN_BY_FORM,
    PREPOSITIONS,
    SUBJECT_PRONOUNS,
    VERB_BY_FORM,
)
from engine.corpora.translation.sentence import (
    NP,
    Sentence,
    agreement_of,
    detokenize,
    person_of,
    render,
    tokenize,
)
from engine.text import MAX_UNKNOWN_LISTED, WORD_LIMIT, quote_input

# ---- parsing English -----------------------------------------------------------------------------


class UnknownWordError(ValueError):
    """English words outside the toy vocabulary; ``words`` and ``suggestions`` (word → close words)."""

    def __init__(self, words: list[str]) -> None:
        self.words = list(dict.fromkeys(words))
        self.suggestions = {w: suggest(w) for w in self.words}
        parts = []
        for w in self.words[:MAX_UNKNOWN_LISTED]:  # the message repeats user input: bounded
            hint = f" (did you mean {', '.join(repr(s) for s in self.suggestions[w])}?)" if self.suggestions[w] else ""
            parts.append(f"{quote_input(w, WORD_LIMIT)}{hint}")
        more = " …" if len(self.words) > MAX_UNKNOWN_LISTED else ""
        super().__init__(
            f"Unknown word{'s' if len(self.words) > 1 else ''} for the toy grammar: {'; '.join(parts)}{more}"
        )


class _Parser:
    def __init__(self, tokens: list[str], text: str) -> None:
        self.toks = tokens
        self.i = 0
        self.text = text

    def fail(self, why: str) -> ValueError:
        return ValueError(f"Not a sentence of the toy grammar ({why}): {self.text!r}")

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise self.fail("it ends too early")
        self.i += 1
        return tok

    def np(self) -> NP:
        det = self.take()
        if det not in ("the", "a", "an"):
            raise self.fail(f"expected 'the', 'a' or 'an' before a noun, got {det!r}")
        pre = post = None
        tok = self.peek()
        if tok in ADJECTIVES and ADJECTIVES[tok].before:
            pre = ADJECTIVES[self.take()]
            tok = self.peek()
        if tok in ADJECTIVES and not ADJECTIVES[tok].before:
            post = ADJECTIVES[self.take()]
            tok = self.peek()
        if tok not in NOUN_BY_FORM:
            raise self.fail(f"expected a noun after {det!r}, got {tok!r}" if tok else "a noun is missing")
        noun, plural = NOUN_BY_FORM[self.take()]
        if plural and det != "the":
            raise self.fail(f"plural {noun.en_pl!r} takes 'the' only")
        return NP("the" if det == "the" else "a", noun, plural, pre, post)

    def sentence(self) -> Sentence:
        if not self.toks:
            raise self.fail("it is empty")
        tok = self.peek()
        subject: NP | str = self.take() if tok in SUBJECT_PRONOUNS else self.np()
        person = person_of(subject)
        word = self.take()
        if word in VERB_BY_FORM:
            verb, third = VERB_BY_FORM[word]
            if third != (person == 2) and verb.en != verb.en3:
                expected = verb.en3 if person == 2 else verb.en
                raise self.fail(f"the verb should be {expected!r} here")
            s = Sentence(subject, "verb", verb=verb, obj=self.np())
        elif word in ("am", "is", "are"):
            if word != BE_EN[person]:
                raise self.fail(f"the verb should be {BE_EN[person]!r} here")
            tok = self.peek()
            if tok in PREPOSITIONS:
                prep = self.take()
                s = Sentence(subject, "prep", prep=prep, obj=self.np())
            elif tok in ADJECTIVES:
                if agreement_of(subject) is None:
                    raise self.fail(f"an adjective after {subject!r} needs a gender the grammar does not give")
                adjs = [ADJECTIVES[self.take()]]
                if self.peek() == "and":
                    self.take()
                    nxt = self.take()
                    if nxt not in ADJECTIVES:
                        raise self.fail(f"expected an adjective after 'and', got {nxt!r}")
                    adjs.append(ADJECTIVES[nxt])
                s = Sentence(subject, "adj", adjs=tuple(adjs))
            else:
                raise self.fail(f"expected an adjective or a preposition after {quote_input(word, WORD_LIMIT)}")
        else:
            raise self.fail(f"expected a verb after the subject, got {quote_input(word, WORD_LIMIT)}")
        period = False
        if self.peek() == ".":
            self.take()
            period = True
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()!r} at the end")
        return Sentence(s.subject, s.kind, s.verb, s.obj, s.adjs, s.prep, period)


def _parse(english: str) -> Sentence:
    if not isinstance(english, str):
        raise ValueError(f"Expected a sentence, got {type(english).__name__}")
    tokens = tokenize(english)
    unknown = [t for t in tokens if t not in EN_VOCAB]
    if unknown:
        raise UnknownWordError(unknown)
    return _Parser(tokens, english).sentence()


def translate(english: str) -> str:
    """The French translation of a sentence of the toy grammar (rule-based, deterministic).

    Case, spacing and the final full stop are free ("The red car is fast" → "la voiture rouge est
    rapide"); *a/an* are both accepted before any word.

    Raises:
        UnknownWordError: (a ValueError) a word outside :data:`EN_VOCAB`, named with suggestions.
        ValueError: known words in an order the grammar does not produce.
    """
    _, fr, _ = render(_parse(english))
    return detokenize(fr)


def alignment(english: str, french: str | None = None) -> list[tuple[int, int]]:
    """The gold word alignment ``[(en_token_index, fr_token_index), ...]`` (one-to-one, every word).

    Indices are over :func:`tokenize` tokens (``l'`` and ``j'`` are tokens of their own and align to
    *the* and *I*). Sorted by English index; ``[(i, j) for ...]`` crossing pairs show the word-order
    changes.

    Args:
        english: a sentence of the grammar.
        french: its translation; checked against :func:`translate` when given.

    Raises:
        ValueError: the English is not in the grammar, or ``french`` is not its translation.
    """
    _, fr, align = render(_parse(english))
    if french is not None and tokenize(french) != fr:
        raise ValueError(f"{french!r} is not the grammar's translation of {english!r} ({detokenize(fr)!r})")
    return sorted(align)


# ---- suggestions ---------------------------------------------------------------------------------


def _edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def suggest(word: str, k: int = 3) -> list[str]:
    """Up to ``k`` known English words closest to ``word`` (Levenshtein distance ≤ 2, or ≤ 1 for
    words of up to 3 letters; ties broken by a longer shared prefix, then alphabetically).

    ``suggest("ca") == ["car", "cat", "a"]``; an empty list when nothing is close.
    """
    w = word.lower().strip()
    if not w:
        return []
    limit = 1 if len(w) <= 3 else 2
    scored = []
    for cand in EN_VOCAB:
        if not cand.isalpha() or cand == w:
            continue
        d = _edit_distance(w, cand)
        if d <= limit:
            prefix = next((i for i, (x, y) in enumerate(zip(w, cand)) if x != y), min(len(w), len(cand)))
            scored.append((d, -prefix, cand))
    return [c for _, _, c in sorted(scored)[:k]]
