"""Writing stories: :func:`story` and :func:`generate_stories` keep track of who is in a story,
who holds the object, and when a pronoun is safe to use."""

from __future__ import annotations

import random

from engine.corpora.stories.grammar import NAMES_LC
from engine.corpora.stories.lexicon import (
    CHARACTERS,
    COLOURS,
    FEELINGS,
    OBJ_PRONOUN,
    OBJECTS,
    PLACES,
    SIZES,
    SUBJ_PRONOUN,
    VOWELS,
)

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
            return [SUBJ_PRONOUN[CHARACTERS[name]]]
        self.mentioned.add(name)
        return [name]

    def person(self, name: str) -> list[str]:
        if name in self.mentioned and self.gender_unique(name) and self.rng.random() < 0.5:
            return [OBJ_PRONOUN[CHARACTERS[name]]]
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
        return ["an" if words[0].startswith(VOWELS) else "a", *words]

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
        if w.lower() in NAMES_LC:
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
