"""A toy English → French grammar with real words, where the word order changes.

Sentences look like::

    the red car is fast .               →  la voiture rouge est rapide .
    she sees the small black dog .      →  elle voit le petit chien noir .
    the old tree is under the bridge .  →  le vieil arbre est sous le pont .
    i have an umbrella .                →  j'ai un parapluie .

What the grammar exercises:

* **adjective order**: most adjectives (colours, *fast*, *happy*, …) go after the noun in French, so
  the alignment crosses ("red car" → "voiture rouge"); eight common ones (*big, small, good, old,
  new, beautiful, young, pretty*) stay before it, so it does not ("small dog" → "petit chien");
* **gender and number agreement** of determiners and adjectives (le/la/les, un/une, noir/noire/
  noirs/noires; *marron* never changes; *vieux/beau/nouveau* become *vieil/bel/nouvel* before a
  masculine noun starting with a vowel);
* **elision**: *le/la* → *l'* before a vowel-initial noun (l'arbre, l'école, l'hôtel), *je* → *j'*
  before a vowel-initial verb (j'aime, j'ai);
* **verb agreement** with the subject (je vois, tu vois, il voit, nous voyons, ils voient).

Every word maps to exactly one word, so the gold alignment (:func:`alignment`) is a permutation.

Conventions (the grammar is deterministic): *you* → *tu*; *they* → *ils*; adjectives after *is/are*
are used only with *he*, *she*, *they* and noun subjects (the gender of *I/you/we* is unknown);
plural nouns take *the* only (*les*). :func:`generate_pairs` also avoids odd meanings (only animals
and people see, like or are happy), but :func:`translate` accepts the whole structural grammar.

Tokens: lowercase, a word with its apostrophe (``l'``, ``j'``) is one token, punctuation is its own
token (:func:`tokenize`). Sentences are written with spaces between tokens except after ``'``
("la voiture rouge est rapide .", "l'arbre est vert .").

Public API: :func:`generate_pairs`, :func:`translate`, :func:`alignment`, :func:`suggest`,
:func:`tokenize`, :func:`detokenize`, :data:`EN_VOCAB`, :data:`FR_VOCAB`, :data:`NOUNS`,
:data:`ADJECTIVES`, :data:`VERBS`, :class:`UnknownWordError`.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

__all__ = [
    "ADJECTIVES",
    "EN_VOCAB",
    "FR_VOCAB",
    "NOUNS",
    "PREPOSITIONS",
    "SUBJECT_PRONOUNS",
    "VERBS",
    "UnknownWordError",
    "alignment",
    "detokenize",
    "generate_pairs",
    "suggest",
    "tokenize",
    "translate",
]

# ---- lexicon -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Noun:
    en: str
    en_pl: str
    fr: str
    fr_pl: str
    gender: str  # "m" | "f"
    elide: bool  # le/la → l' (vowel or mute h)
    kind: str  # person | animal | vehicle | thing | food | place | plant (used by the generator only)

    @property
    def animate(self) -> bool:
        return self.kind in ("person", "animal")


@dataclass(frozen=True)
class Adjective:
    en: str
    m: str
    f: str
    mp: str
    fp: str
    before: bool  # placed before the noun in French
    m_vowel: str | None = None  # masculine singular before a vowel (bel, vieil, nouvel)
    kinds: frozenset[str] = frozenset()  # noun kinds it describes sensibly (generator only)

    def form(self, gender: str, plural: bool) -> str:
        return (self.mp if gender == "m" else self.fp) if plural else (self.m if gender == "m" else self.f)


@dataclass(frozen=True)
class Verb:
    en: str  # base form: I/you/we/they/plural nouns
    en3: str  # he/she/it/singular nouns
    fr: tuple[str, str, str, str, str]  # je, tu, il/elle, nous, ils/elles
    objects: frozenset[str] = frozenset()  # noun kinds or nouns it takes as objects (generator only)


def _n(en: str, en_pl: str, fr: str, fr_pl: str, gender: str, kind: str, elide: bool = False) -> Noun:
    return Noun(en, en_pl, fr, fr_pl, gender, elide, kind)


_ALL = frozenset({"person", "animal", "vehicle", "thing", "food", "place", "plant"})


def _k(spec: str) -> frozenset[str]:
    """Noun kinds (or nouns) from "thing food", or all kinds but some from "-person"."""
    if spec.startswith("-"):
        return _ALL - set(spec[1:].split())
    return frozenset(spec.split())


_NOUN_LIST: tuple[Noun, ...] = (
    # animals and people
    _n("dog", "dogs", "chien", "chiens", "m", "animal"),
    _n("cat", "cats", "chat", "chats", "m", "animal"),
    _n("bird", "birds", "oiseau", "oiseaux", "m", "animal", elide=True),
    _n("horse", "horses", "cheval", "chevaux", "m", "animal"),
    _n("cow", "cows", "vache", "vaches", "f", "animal"),
    _n("mouse", "mice", "souris", "souris", "f", "animal"),
    _n("elephant", "elephants", "éléphant", "éléphants", "m", "animal", elide=True),
    _n("girl", "girls", "fille", "filles", "f", "person"),
    _n("boy", "boys", "garçon", "garçons", "m", "person"),
    _n("man", "men", "homme", "hommes", "m", "person", elide=True),
    _n("woman", "women", "femme", "femmes", "f", "person"),
    _n("child", "children", "enfant", "enfants", "m", "person", elide=True),
    _n("friend", "friends", "ami", "amis", "m", "person", elide=True),
    _n("king", "kings", "roi", "rois", "m", "person"),
    _n("queen", "queens", "reine", "reines", "f", "person"),
    # things and places
    _n("car", "cars", "voiture", "voitures", "f", "vehicle"),
    _n("house", "houses", "maison", "maisons", "f", "place"),
    _n("tree", "trees", "arbre", "arbres", "m", "plant", elide=True),
    _n("school", "schools", "école", "écoles", "f", "place", elide=True),
    _n("book", "books", "livre", "livres", "m", "thing"),
    _n("table", "tables", "table", "tables", "f", "thing"),
    _n("chair", "chairs", "chaise", "chaises", "f", "thing"),
    _n("apple", "apples", "pomme", "pommes", "f", "food"),
    _n("flower", "flowers", "fleur", "fleurs", "f", "plant"),
    _n("boat", "boats", "bateau", "bateaux", "m", "vehicle"),
    _n("bike", "bikes", "vélo", "vélos", "m", "vehicle"),
    _n("bag", "bags", "sac", "sacs", "m", "thing"),
    _n("ball", "balls", "balle", "balles", "f", "thing"),
    _n("cake", "cakes", "gâteau", "gâteaux", "m", "food"),
    _n("letter", "letters", "lettre", "lettres", "f", "thing"),
    _n("key", "keys", "clé", "clés", "f", "thing"),
    _n("bed", "beds", "lit", "lits", "m", "thing"),
    _n("box", "boxes", "boîte", "boîtes", "f", "thing"),
    _n("hat", "hats", "chapeau", "chapeaux", "m", "thing"),
    _n("shirt", "shirts", "chemise", "chemises", "f", "thing"),
    _n("shoe", "shoes", "chaussure", "chaussures", "f", "thing"),
    _n("plane", "planes", "avion", "avions", "m", "vehicle", elide=True),
    _n("train", "trains", "train", "trains", "m", "vehicle"),
    _n("hotel", "hotels", "hôtel", "hôtels", "m", "place", elide=True),
    _n("island", "islands", "île", "îles", "f", "place", elide=True),
    _n("egg", "eggs", "œuf", "œufs", "m", "food", elide=True),
    _n("picture", "pictures", "image", "images", "f", "thing", elide=True),
    _n("city", "cities", "ville", "villes", "f", "place"),
    _n("garden", "gardens", "jardin", "jardins", "m", "place"),
    _n("river", "rivers", "rivière", "rivières", "f", "place"),
    _n("bridge", "bridges", "pont", "ponts", "m", "place"),
    _n("lamp", "lamps", "lampe", "lampes", "f", "thing"),
    _n("cup", "cups", "tasse", "tasses", "f", "thing"),
    _n("pen", "pens", "stylo", "stylos", "m", "thing"),
    _n("computer", "computers", "ordinateur", "ordinateurs", "m", "thing", elide=True),
    _n("umbrella", "umbrellas", "parapluie", "parapluies", "m", "thing"),
)

_A = Adjective
_ADJ_LIST: tuple[Adjective, ...] = (
    # after the noun
    _A("red", "rouge", "rouge", "rouges", "rouges", False, kinds=_k("vehicle thing food place plant")),
    _A("black", "noir", "noire", "noirs", "noires", False, kinds=_k("-person")),
    _A("white", "blanc", "blanche", "blancs", "blanches", False, kinds=_k("-person")),
    _A("green", "vert", "verte", "verts", "vertes", False, kinds=_k("vehicle thing food place plant")),
    _A("blue", "bleu", "bleue", "bleus", "bleues", False, kinds=_k("vehicle thing place plant")),
    _A("grey", "gris", "grise", "gris", "grises", False, kinds=_k("-person")),
    _A("yellow", "jaune", "jaune", "jaunes", "jaunes", False, kinds=_k("vehicle thing food place plant")),
    _A("brown", "marron", "marron", "marron", "marron", False, kinds=_k("-person")),
    _A("pink", "rose", "rose", "roses", "roses", False, kinds=_k("vehicle thing place plant")),
    _A("fast", "rapide", "rapide", "rapides", "rapides", False, kinds=_k("person animal vehicle")),
    _A("slow", "lent", "lente", "lents", "lentes", False, kinds=_k("person animal vehicle")),
    _A("heavy", "lourd", "lourde", "lourds", "lourdes", False, kinds=_k("animal vehicle thing food")),
    _A("round", "rond", "ronde", "ronds", "rondes", False, kinds=_k("thing food")),
    _A("clean", "propre", "propre", "propres", "propres", False, kinds=_k("-food plant")),
    _A("dirty", "sale", "sale", "sales", "sales", False, kinds=_k("-food plant")),
    _A("cold", "froid", "froide", "froids", "froides", False, kinds=_k("thing food place")),
    _A("happy", "heureux", "heureuse", "heureux", "heureuses", False, kinds=_k("person animal")),
    _A("sad", "triste", "triste", "tristes", "tristes", False, kinds=_k("person animal")),
    _A("tired", "fatigué", "fatiguée", "fatigués", "fatiguées", False, kinds=_k("person animal")),
    _A("funny", "drôle", "drôle", "drôles", "drôles", False, kinds=_k("person animal thing")),
    # before the noun
    _A("big", "grand", "grande", "grands", "grandes", True, kinds=_ALL),
    _A("small", "petit", "petite", "petits", "petites", True, kinds=_ALL),
    _A("good", "bon", "bonne", "bons", "bonnes", True, kinds=_k("person animal food thing")),
    _A("old", "vieux", "vieille", "vieux", "vieilles", True, m_vowel="vieil", kinds=_k("-food")),
    _A("new", "nouveau", "nouvelle", "nouveaux", "nouvelles", True, m_vowel="nouvel", kinds=_k("-food plant")),
    _A("beautiful", "beau", "belle", "beaux", "belles", True, m_vowel="bel", kinds=_k("-food")),
    _A("young", "jeune", "jeune", "jeunes", "jeunes", True, kinds=_k("person animal plant")),
    _A("pretty", "joli", "jolie", "jolis", "jolies", True, kinds=_k("-food")),
)

_V = Verb
_VERB_LIST: tuple[Verb, ...] = (
    _V("see", "sees", ("vois", "vois", "voit", "voyons", "voient"), _ALL),
    _V("like", "likes", ("aime", "aimes", "aime", "aimons", "aiment"), _ALL),
    _V("have", "has", ("ai", "as", "a", "avons", "ont"), _k("animal vehicle thing food")),
    _V("want", "wants", ("veux", "veux", "veut", "voulons", "veulent"), _k("animal vehicle thing food")),
    _V("buy", "buys", ("achète", "achètes", "achète", "achetons", "achètent"), _k("vehicle thing food plant")),
    _V("find", "finds", ("trouve", "trouves", "trouve", "trouvons", "trouvent"), _k("-place")),
    _V("watch", "watches", ("regarde", "regardes", "regarde", "regardons", "regardent"), _ALL),
    _V("take", "takes", ("prends", "prends", "prend", "prenons", "prennent"), _k("vehicle thing food")),
    _V("carry", "carries", ("porte", "portes", "porte", "portons", "portent"), _k("thing food")),
    _V("hear", "hears", ("entends", "entends", "entend", "entendons", "entendent"), _k("person animal vehicle")),
    _V("love", "loves", ("adore", "adores", "adore", "adorons", "adorent"), _ALL),
    _V("wash", "washes", ("lave", "laves", "lave", "lavons", "lavent"), _k("animal vehicle thing food")),
    _V("push", "pushes", ("pousse", "pousses", "pousse", "poussons", "poussent"), _k("vehicle thing")),
    _V("draw", "draws", ("dessine", "dessines", "dessine", "dessinons", "dessinent"), _ALL),
    _V("open", "opens", ("ouvre", "ouvres", "ouvre", "ouvrons", "ouvrent"), _k("box bag book letter computer umbrella")),
    _V("visit", "visits", ("visite", "visites", "visite", "visitons", "visitent"), _k("person place")),
)

#: English subject pronoun → (French pronoun, person index 0–4, gender/number for agreement).
SUBJECT_PRONOUNS: dict[str, tuple[str, int, str | None]] = {
    "i": ("je", 0, None),
    "you": ("tu", 1, None),
    "he": ("il", 2, "m"),
    "she": ("elle", 2, "f"),
    "we": ("nous", 3, None),
    "they": ("ils", 4, "mp"),
}
_BE_EN = ("am", "are", "is", "are", "are")
_BE_FR = ("suis", "es", "est", "sommes", "sont")
PREPOSITIONS: dict[str, str] = {"in": "dans", "on": "sur", "under": "sous", "behind": "derrière", "with": "avec"}
# the nouns (or noun kinds) each preposition takes in generated sentences
_PREP_OBJECTS: dict[str, frozenset[str]] = {
    "in": _k("house school garden city hotel car boat train plane box bag bed"),
    "on": _k("table chair bed bridge boat train island box"),
    "under": _k("table chair bed tree bridge umbrella car"),
    "behind": _k("house school hotel tree car chair bridge man woman"),
    "with": _k("person animal"),
}

NOUNS: dict[str, Noun] = {n.en: n for n in _NOUN_LIST}
ADJECTIVES: dict[str, Adjective] = {a.en: a for a in _ADJ_LIST}
VERBS: dict[str, Verb] = {v.en: v for v in _VERB_LIST}
_NOUN_BY_FORM: dict[str, tuple[Noun, bool]] = {
    **{n.en: (n, False) for n in _NOUN_LIST},
    **{n.en_pl: (n, True) for n in _NOUN_LIST},
}
_VERB_BY_FORM: dict[str, tuple[Verb, bool]] = {
    **{v.en: (v, False) for v in _VERB_LIST},
    **{v.en3: (v, True) for v in _VERB_LIST},
}

_VOWELS_EN = tuple("aeiou")
_VOWELS_FR = tuple("aeiouyhàâäéèêëîïôöûùüœ")

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


def _person(subject: NP | str) -> int:
    if isinstance(subject, str):
        return SUBJECT_PRONOUNS[subject][1]
    return 4 if subject.plural else 2


def _agreement(subject: NP | str) -> tuple[str, bool] | None:
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
        det_en = "an" if en_words[0].startswith(_VOWELS_EN) else "a"
    en = [det_en, *en_words]

    g, pl = n.gender, np_.plural
    pre_fr = None
    if np_.pre is not None:
        pre_fr = np_.pre.form(g, pl)
        if g == "m" and not pl and n.elide and np_.pre.m_vowel:
            pre_fr = np_.pre.m_vowel
    first_vowel = n.elide if pre_fr is None else pre_fr.startswith(_VOWELS_FR)
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


def _render(s: Sentence) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    """English tokens, French tokens and the gold alignment of a sentence."""
    en: list[str] = []
    fr: list[str] = []
    align: list[tuple[int, int]] = []

    def add(e: list[str], f: list[str], a: list[tuple[int, int]]) -> None:
        align.extend((i + len(en), j + len(fr)) for i, j in a)
        en.extend(e)
        fr.extend(f)

    person = _person(s.subject)
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
        if person == 0 and verb_fr.startswith(_VOWELS_FR):
            fr[-1] = "j'"
        add([s.verb.en3 if person == 2 else s.verb.en], [verb_fr], [(0, 0)])
        add(*_render_np(s.obj))
    else:
        add([_BE_EN[person]], [_BE_FR[person]], [(0, 0)])
        if s.kind == "prep":
            assert s.prep is not None and s.obj is not None
            add([s.prep], [PREPOSITIONS[s.prep]], [(0, 0)])
            add(*_render_np(s.obj))
        else:
            agr = _agreement(s.subject)
            assert agr is not None and s.adjs
            for k, adj in enumerate(s.adjs):
                if k:
                    add(["and"], ["et"], [(0, 0)])
                add([adj.en], [adj.form(*agr)], [(0, 0)])
    if s.period:
        add(["."], ["."], [(0, 0)])
    return en, fr, align


# ---- parsing English -----------------------------------------------------------------------------


class UnknownWordError(ValueError):
    """English words outside the toy vocabulary; ``words`` and ``suggestions`` (word → close words)."""

    def __init__(self, words: list[str]) -> None:
        self.words = list(dict.fromkeys(words))
        self.suggestions = {w: suggest(w) for w in self.words}
        parts = []
        for w in self.words:
            hint = f" (did you mean {', '.join(repr(s) for s in self.suggestions[w])}?)" if self.suggestions[w] else ""
            parts.append(f"{w!r}{hint}")
        super().__init__(f"Unknown word{'s' if len(self.words) > 1 else ''} for the toy grammar: {'; '.join(parts)}")


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
        if tok not in _NOUN_BY_FORM:
            raise self.fail(f"expected a noun after {det!r}, got {tok!r}" if tok else "a noun is missing")
        noun, plural = _NOUN_BY_FORM[self.take()]
        if plural and det != "the":
            raise self.fail(f"plural {noun.en_pl!r} takes 'the' only")
        return NP("the" if det == "the" else "a", noun, plural, pre, post)

    def sentence(self) -> Sentence:
        if not self.toks:
            raise self.fail("it is empty")
        tok = self.peek()
        subject: NP | str = self.take() if tok in SUBJECT_PRONOUNS else self.np()
        person = _person(subject)
        word = self.take()
        if word in _VERB_BY_FORM:
            verb, third = _VERB_BY_FORM[word]
            if third != (person == 2) and verb.en != verb.en3:
                expected = verb.en3 if person == 2 else verb.en
                raise self.fail(f"the verb should be {expected!r} here")
            s = Sentence(subject, "verb", verb=verb, obj=self.np())
        elif word in ("am", "is", "are"):
            if word != _BE_EN[person]:
                raise self.fail(f"the verb should be {_BE_EN[person]!r} here")
            tok = self.peek()
            if tok in PREPOSITIONS:
                prep = self.take()
                s = Sentence(subject, "prep", prep=prep, obj=self.np())
            elif tok in ADJECTIVES:
                if _agreement(subject) is None:
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
                raise self.fail(f"expected an adjective or a preposition after {word!r}")
        else:
            raise self.fail(f"expected a verb after the subject, got {word!r}")
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
    _, fr, _ = _render(_parse(english))
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
    _, fr, align = _render(_parse(english))
    if french is not None and tokenize(french) != fr:
        raise ValueError(f"{french!r} is not the grammar's translation of {english!r} ({detokenize(fr)!r})")
    return sorted(align)


# ---- vocabulary and suggestions ------------------------------------------------------------------


def _en_vocab() -> frozenset[str]:
    words = {"the", "a", "an", "and", ".", *SUBJECT_PRONOUNS, *_BE_EN, *PREPOSITIONS, *ADJECTIVES}
    words |= set(_NOUN_BY_FORM) | set(_VERB_BY_FORM)
    return frozenset(words)


def _fr_vocab() -> frozenset[str]:
    words = {"le", "la", "l'", "les", "un", "une", "et", ".", "j'", *_BE_FR, *PREPOSITIONS.values()}
    words |= {v[0] for v in SUBJECT_PRONOUNS.values()}
    for n in _NOUN_LIST:
        words |= {n.fr, n.fr_pl}
    for a in _ADJ_LIST:
        words |= {a.m, a.f, a.mp, a.fp} | ({a.m_vowel} if a.m_vowel else set())
    for v in _VERB_LIST:
        words |= set(v.fr)
    return frozenset(words)


#: Every English token the grammar uses (lowercase; includes ".").
EN_VOCAB: frozenset[str] = _en_vocab()
#: Every French token the grammar produces (lowercase; ``l'`` and ``j'`` are tokens).
FR_VOCAB: frozenset[str] = _fr_vocab()


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


# ---- generator -----------------------------------------------------------------------------------

_SUBJECT_NOUNS = tuple(n for n in _NOUN_LIST if n.animate)
_PRE = tuple(a for a in _ADJ_LIST if a.before)
_POST = tuple(a for a in _ADJ_LIST if not a.before)


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


def _random_np(rng: random.Random, nouns: tuple[Noun, ...] | list[Noun] = _NOUN_LIST) -> NP:
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
        verb = rng.choice(_VERB_LIST)
        objects = [n for n in _NOUN_LIST if _fits(n, verb.objects)]
        return Sentence(subject, "verb", verb=verb, obj=_random_np(rng, objects))
    if r < 0.8:  # subject is adjective (and adjective)
        if rng.random() < 0.3:
            subject = rng.choice(("he", "she", "they"))
            kind = "person"
        else:
            subject = _random_np(rng)
            kind = subject.noun.kind
        used = (subject.pre, subject.post) if isinstance(subject, NP) else ()
        pool = [a for a in _ADJ_LIST if kind in a.kinds and not _clash(a, used)]
        first = rng.choice(pool)
        adjs: tuple[Adjective, ...] = (first,)
        if rng.random() < 0.2:
            adjs = (first, rng.choice([a for a in pool if not _clash(a, (first,))]))
        return Sentence(subject, "adj", adjs=adjs)
    prep = rng.choice(tuple(PREPOSITIONS))
    objects = [n for n in _NOUN_LIST if _fits(n, _PREP_OBJECTS[prep])]
    if prep == "with" or rng.random() < 0.4:
        subject = rng.choice(tuple(SUBJECT_PRONOUNS)) if rng.random() < 0.5 else _random_np(rng, _SUBJECT_NOUNS)
    else:
        subject = _random_np(rng, [n for n in _NOUN_LIST if n.kind in ("person", "animal", "thing", "food")])
    obj = _random_np(rng, [n for n in objects if not (isinstance(subject, NP) and n == subject.noun)] or objects)
    return Sentence(subject, "prep", prep=prep, obj=obj)


def generate_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` (English, French) sentence pairs; the same ``(n, seed)`` always gives the same pairs.

    Both sides are written as tokens separated by spaces (no space after ``l'``/``j'``) and end with
    " ." — e.g. ``("she sees the small black dog .", "elle voit le petit chien noir .")``.
    Duplicates are possible (short sentences like "he is happy ." recur); split with
    :func:`engine.training.corpora.train_test_split`, which keeps them on one side.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        en, fr, _ = _render(_random_sentence(rng))
        out.append((detokenize(en), detokenize(fr)))
    return out
