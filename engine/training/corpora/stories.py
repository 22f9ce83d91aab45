"""Short children's stories from a small grammar, for a tiny GPT whose attention shows coreference.

Every story has two or three named characters and one object. The object is introduced with an
indefinite article and a colour or a size ("Lily found a red ball."), and later sentences refer back
to the characters and the object, either by name ("Tom threw the ball over the fence.") or by pronoun
("She gave it to Tom."). Names, nouns and adjectives repeat inside a story, so an induction head can
copy them, and a "pronoun head" can attend from *she* to *Lily*.

Pronouns are never ambiguous:

* *he/him* and *she/her* are used for a character only when no other character in the story has the
  same gender, and only after the character's name has appeared;
* *it* always means the story's single object, and only after the object has appeared;
* *they* (subject only) means the pair introduced together ("Lily and Tom went to the park.").

*her* is always the object pronoun (the grammar has no possessives), so the pronoun → antecedent
links can be read back from the text alone by :func:`pronoun_pairs`.

Sentences are written normally ("One day, Lily found a red ball."); tokenisation happens later. The
word tokens used here are those of the regular expression ``\\w+|[^\\w\\s]`` on lowercased text.

Public API: :func:`generate_stories`, :func:`story`, :func:`is_grammatical`,
:func:`split_sentences`, :func:`pronoun_pairs`, :data:`STORY_VOCAB_HINT`, :data:`CHARACTERS`.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache

__all__ = [
    "CHARACTERS",
    "COLOURS",
    "FEELINGS",
    "OBJECTS",
    "PLACES",
    "PRONOUN_GENDER",
    "SIZES",
    "STORY_VOCAB_HINT",
    "generate_stories",
    "is_grammatical",
    "pronoun_pairs",
    "split_sentences",
    "story",
    "story_tokens",
]

# ---- lexicon -------------------------------------------------------------------------------------

#: Name → gender ("f" or "m").
CHARACTERS: dict[str, str] = {
    "Lily": "f", "Tom": "m", "Anna": "f", "Ben": "m", "Mia": "f",
    "Sam": "m", "Emma": "f", "Max": "m", "Lucy": "f", "Jack": "m",
    "Sara": "f", "Leo": "m", "Zoe": "f", "Finn": "m", "Ella": "f",
    "Noah": "m", "Ruby": "f", "Omar": "m", "Nina": "f", "Theo": "m",
}  # fmt: skip

OBJECTS: tuple[str, ...] = (
    "ball", "kite", "book", "hat", "cup", "box", "toy", "car", "boat", "doll",
    "drum", "shoe", "sock", "bag", "key", "bell", "apple", "cake", "stick", "stone",
    "shell", "flower", "balloon", "train", "truck", "pen", "coin", "ring", "leaf", "egg",
)  # fmt: skip

COLOURS: tuple[str, ...] = ("red", "blue", "green", "yellow", "pink", "black", "white", "orange", "purple", "brown")
SIZES: tuple[str, ...] = ("big", "little", "small", "tiny", "old", "new")
PLACES: tuple[str, ...] = ("park", "garden", "kitchen", "forest", "yard", "shop", "house", "classroom", "hall", "barn")
FEELINGS: tuple[str, ...] = ("happy", "sad", "glad", "tired", "proud", "sorry")

#: Pronoun → gender of its antecedent ("f", "m", "n" for the object, "pl" for a pair).
PRONOUN_GENDER: dict[str, str] = {"he": "m", "him": "m", "she": "f", "her": "f", "it": "n", "they": "pl"}

_SUBJ_PRONOUN = {"f": "she", "m": "he"}
_OBJ_PRONOUN = {"f": "her", "m": "him"}
_VOWELS = tuple("aeiou")

# ---- the grammar (used by is_grammatical; the generator below writes a subset of it) --------------
# A symbol in <angle brackets> is a non-terminal; a trailing "?" makes a symbol optional; anything else
# is a word. Word classes are sets of words.

_NAMES_LC = tuple(n.lower() for n in CHARACTERS)


def _split_vowel(words: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(w for w in words if not w.startswith(_VOWELS)), tuple(w for w in words if w.startswith(_VOWELS))


_OBJ_C, _OBJ_V = _split_vowel(OBJECTS)
_COL_C, _COL_V = _split_vowel(COLOURS)
_SIZE_C, _SIZE_V = _split_vowel(SIZES)

_CLASSES: dict[str, frozenset[str]] = {
    "<name>": frozenset(_NAMES_LC),
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

# ---- generator -----------------------------------------------------------------------------------


class _Story:
    """State while writing one story: who is in it, what they call each other, who holds the object."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        names = list(CHARACTERS)
        a = rng.choice(names)
        if rng.random() < 0.8:  # usually a boy and a girl, so both can be pronouns
            b = rng.choice([n for n in names if CHARACTERS[n] != CHARACTERS[a]])
        else:
            b = rng.choice([n for n in names if n != a])
        self.chars = [a, b]
        if rng.random() < 0.2:
            self.chars.append(rng.choice([n for n in names if n not in self.chars]))
        self.mentioned: set[str] = set()
        self.pair_named = False  # "A and B" has appeared (so "they" may follow)
        self.noun = rng.choice(OBJECTS)
        self.colour = rng.choice(COLOURS) if rng.random() < 0.85 else None
        self.size = rng.choice(SIZES) if (self.colour is None or rng.random() < 0.3) else None
        self.obj_mentioned = False
        self.sentences: list[list[str]] = []

    # -- references --
    def gender_unique(self, name: str) -> bool:
        return sum(CHARACTERS[c] == CHARACTERS[name] for c in self.chars) == 1

    def subj(self, name: str) -> list[str]:
        if name in self.mentioned and self.gender_unique(name) and self.rng.random() < 0.65:
            return [_SUBJ_PRONOUN[CHARACTERS[name]]]
        self.mentioned.add(name)
        return [name]

    def person(self, name: str) -> list[str]:
        if name in self.mentioned and self.gender_unique(name) and self.rng.random() < 0.5:
            return [_OBJ_PRONOUN[CHARACTERS[name]]]
        self.mentioned.add(name)
        return [name]

    def adjectives(self) -> list[str]:
        return [w for w in (self.size, self.colour) if w]

    def definite(self) -> list[str]:
        adjs = self.adjectives() if self.rng.random() < 0.35 else []
        self.obj_mentioned = True
        return ["the", *adjs, self.noun]

    def thing(self) -> list[str]:
        if self.obj_mentioned and self.rng.random() < 0.65:
            return ["it"]
        return self.definite()

    def indefinite(self) -> list[str]:
        words = [*self.adjectives(), self.noun]
        self.obj_mentioned = True
        return ["an" if words[0].startswith(_VOWELS) else "a", *words]

    def loc(self, p: float = 0.35) -> list[str]:
        return ["in", "the", self.rng.choice(PLACES)] if self.rng.random() < p else []

    def say(self, *parts: list[str] | str) -> None:
        words: list[str] = []
        for part in parts:
            words.extend(part.split() if isinstance(part, str) else part)
        self.sentences.append(words)

    def other(self, name: str) -> str:
        return self.rng.choice([c for c in self.chars if c != name])


def _write(st: _Story, n_sentences: int) -> None:
    rng = st.rng
    a, b = st.chars[0], st.chars[1]
    holder: str | None = a
    last_exchange: tuple[str, str] | None = None  # (giver, receiver) of the latest give/throw/show

    # opening: one or two sentences
    style = rng.random()
    if style < 0.25 and n_sentences >= 3:
        st.mentioned.update((a, b))
        st.pair_named = True
        verb = rng.choice(["went to the", "played in the"])
        st.say([a, "and", b], verb, [rng.choice(PLACES)])
        st.say(st.subj(a), "found", st.indefinite())
    elif style < 0.4 and n_sentences >= 3:
        opener = ["one", "day", ","] if rng.random() < 0.5 else []
        st.say(opener, st.subj(a), "saw", st.person(b), st.loc(0.7))
        st.say(st.subj(a), rng.choice(["had", "found"]), st.indefinite())
    else:
        opener = ["one", "day", ","] if rng.random() < 0.4 else []
        st.say(opener, st.subj(a), rng.choice(["found", "had", "found", "saw"]), st.indefinite(), st.loc())

    while len(st.sentences) < n_sentences:
        last = len(st.sentences) == n_sentences - 1
        then = ["then"] if rng.random() < 0.15 else []
        if holder is None:  # the object is lost: someone looks for it or finds it
            finder = rng.choice(st.chars)
            if rng.random() < 0.35 and not last:
                st.say(then, st.subj(finder), "looked for", st.thing())
            else:
                st.say(then, st.subj(finder), "found", st.thing(), st.loc(0.3))
                holder = finder
            continue
        if last and rng.random() < 0.7:  # an ending
            r = rng.random()
            if last_exchange and r < 0.35:
                giver, receiver = last_exchange
                st.say(st.subj(receiver), rng.choice(["thanked", "thanked", "hugged"]), st.person(giver))
            elif st.pair_named and len(st.chars) == 2 and r < 0.55:
                st.say(["they"], "were", [rng.choice(FEELINGS[:3])])
            elif r < 0.8:
                who = rng.choice(st.chars if st.mentioned.issuperset(st.chars) else [holder])
                st.say(st.subj(who), "was", [rng.choice(FEELINGS)])
            else:
                st.say(st.subj(holder), rng.choice(["smiled", "laughed"]))
            continue
        r = rng.random()
        if r < 0.25:
            receiver = st.other(holder)
            if rng.random() < 0.25:
                st.say(then, st.subj(holder), "gave", st.person(receiver), st.definite())
            else:
                st.say(then, st.subj(holder), "gave", st.thing(), "to", st.person(receiver))
            last_exchange = (holder, receiver)
            holder = receiver
        elif r < 0.37:
            receiver = st.other(holder)
            if rng.random() < 0.6:
                st.say(then, st.subj(holder), "threw", st.thing(), "to", st.person(receiver))
                last_exchange = (holder, receiver)
                holder = receiver
            else:
                st.say(then, st.subj(holder), "threw", st.thing(), "over the fence")
                holder = None
        elif r < 0.45:
            receiver = st.other(holder)
            st.say(then, st.subj(holder), "showed", st.thing(), "to", st.person(receiver))
            last_exchange = (holder, receiver)
        elif r < 0.55:
            who = rng.choice(st.chars)
            st.say(st.subj(who), "liked", st.thing(), "very much" if rng.random() < 0.3 else [])
        elif r < 0.65:
            if st.pair_named and len(st.chars) == 2 and rng.random() < 0.5:
                st.say(then, ["they"], "played with", st.thing(), st.loc())
            else:
                st.say(then, st.subj(holder), "played with", st.thing(), st.loc())
        elif r < 0.73:
            st.say(then, st.subj(holder), rng.choice(["lost", "dropped"]), st.thing(), st.loc(0.3))
            holder = None
        elif r < 0.83:
            adj = rng.choice(st.adjectives())
            st.say(st.thing(), "was", [adj])
        elif r < 0.9:
            if rng.random() < 0.5:
                st.say(then, st.subj(holder), "took", st.thing(), "home")
            else:
                st.say(then, st.subj(holder), "kept", st.thing())
        else:
            other = st.other(holder)
            subject = st.subj(holder)
            verb = rng.choice(["saw", "said hello to"])
            st.say(subject, verb, st.person(other), st.loc(0.3) if rng.random() < 0.5 else [])


def _render(words: list[str]) -> str:
    out = ""
    for i, w in enumerate(words):
        text = w
        if w.lower() in _NAMES_LC:
            text = w.capitalize()
        if i == 0:
            text = text[0].upper() + text[1:]
        if w in {".", ","}:
            out += text
        else:
            out += (" " if out else "") + text
    return out


def story(rng: random.Random) -> str:
    """One story of 2–5 sentences, written with ``rng``.

    Example: ``"Lily found a red ball. She gave it to Tom. Tom threw the ball over the fence. Lily
    looked for it. She found the ball in the garden."``
    """
    n_sentences = rng.choice([2, 3, 3, 4, 4, 5, 5])
    st = _Story(rng)
    _write(st, n_sentences)
    return " ".join(_render([*s, "."]) for s in st.sentences)


def generate_stories(n: int, seed: int) -> list[str]:
    """``n`` stories; the same ``(n, seed)`` always gives the same stories."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    return [story(rng) for _ in range(n)]


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
