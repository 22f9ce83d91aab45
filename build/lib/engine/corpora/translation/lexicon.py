"""The toy grammar's lexicon: nouns, adjectives and verbs with their French forms, gender and
agreement, the subject pronouns, *to be* and the prepositions, and the English and French
vocabularies they make up (:data:`EN_VOCAB`, :data:`FR_VOCAB`)."""

from __future__ import annotations

from dataclasses import dataclass

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


def _nouns(table: str) -> tuple[Noun, ...]:
    """Nouns from a table: ``en en_pl fr fr_pl gender kind [elide]`` a line; ``#`` lines are comments."""
    rows = [line.split() for line in table.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return tuple(
        Noun(en, en_pl, fr, fr_pl, gender, elide == ["elide"], kind)
        for en, en_pl, fr, fr_pl, gender, kind, *elide in rows
    )


_ALL = frozenset({"person", "animal", "vehicle", "thing", "food", "place", "plant"})


def _k(spec: str) -> frozenset[str]:
    """Noun kinds (or nouns) from "thing food", or all kinds but some from "-person"."""
    if spec.startswith("-"):
        return _ALL - set(spec[1:].split())
    return frozenset(spec.split())


#: one noun a line: English singular and plural, French singular and plural, gender, kind, and ``elide`` where
#: le/la becomes l'
NOUN_LIST: tuple[Noun, ...] = _nouns("""
# animals and people
dog      dogs      chien      chiens      m animal
cat      cats      chat       chats       m animal
bird     birds     oiseau     oiseaux     m animal  elide
horse    horses    cheval     chevaux     m animal
cow      cows      vache      vaches      f animal
mouse    mice      souris     souris      f animal
elephant elephants éléphant   éléphants   m animal  elide
girl     girls     fille      filles      f person
boy      boys      garçon     garçons     m person
man      men       homme      hommes      m person  elide
woman    women     femme      femmes      f person
child    children  enfant     enfants     m person  elide
friend   friends   ami        amis        m person  elide
king     kings     roi        rois        m person
queen    queens    reine      reines      f person
# things and places
car      cars      voiture    voitures    f vehicle
house    houses    maison     maisons     f place
tree     trees     arbre      arbres      m plant   elide
school   schools   école      écoles      f place   elide
book     books     livre      livres      m thing
table    tables    table      tables      f thing
chair    chairs    chaise     chaises     f thing
apple    apples    pomme      pommes      f food
flower   flowers   fleur      fleurs      f plant
boat     boats     bateau     bateaux     m vehicle
bike     bikes     vélo       vélos       m vehicle
bag      bags      sac        sacs        m thing
ball     balls     balle      balles      f thing
cake     cakes     gâteau     gâteaux     m food
letter   letters   lettre     lettres     f thing
key      keys      clé        clés        f thing
bed      beds      lit        lits        m thing
box      boxes     boîte      boîtes      f thing
hat      hats      chapeau    chapeaux    m thing
shirt    shirts    chemise    chemises    f thing
shoe     shoes     chaussure  chaussures  f thing
plane    planes    avion      avions      m vehicle elide
train    trains    train      trains      m vehicle
hotel    hotels    hôtel      hôtels      m place   elide
island   islands   île        îles        f place   elide
egg      eggs      œuf        œufs        m food    elide
picture  pictures  image      images      f thing   elide
city     cities    ville      villes      f place
garden   gardens   jardin     jardins     m place
river    rivers    rivière    rivières    f place
bridge   bridges   pont       ponts       m place
lamp     lamps     lampe      lampes      f thing
cup      cups      tasse      tasses      f thing
pen      pens      stylo      stylos      m thing
computer computers ordinateur ordinateurs m thing   elide
umbrella umbrellas parapluie  parapluies  m thing
""")

_A = Adjective
ADJ_LIST: tuple[Adjective, ...] = (
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
VERB_LIST: tuple[Verb, ...] = (
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
    _V(
        "open", "opens", ("ouvre", "ouvres", "ouvre", "ouvrons", "ouvrent"), _k("box bag book letter computer umbrella")
    ),
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
BE_EN = ("am", "are", "is", "are", "are")
BE_FR = ("suis", "es", "est", "sommes", "sont")
PREPOSITIONS: dict[str, str] = {"in": "dans", "on": "sur", "under": "sous", "behind": "derrière", "with": "avec"}
# the nouns (or noun kinds) each preposition takes in generated sentences
PREP_OBJECTS: dict[str, frozenset[str]] = {
    "in": _k("house school garden city hotel car boat train plane box bag bed"),
    "on": _k("table chair bed bridge boat train island box"),
    "under": _k("table chair bed tree bridge umbrella car"),
    "behind": _k("house school hotel tree car chair bridge man woman"),
    "with": _k("person animal"),
}

NOUNS: dict[str, Noun] = {n.en: n for n in NOUN_LIST}
ADJECTIVES: dict[str, Adjective] = {a.en: a for a in ADJ_LIST}
VERBS: dict[str, Verb] = {v.en: v for v in VERB_LIST}
NOUN_BY_FORM: dict[str, tuple[Noun, bool]] = {
    **{n.en: (n, False) for n in NOUN_LIST},
    **{n.en_pl: (n, True) for n in NOUN_LIST},
}
VERB_BY_FORM: dict[str, tuple[Verb, bool]] = {
    **{v.en: (v, False) for v in VERB_LIST},
    **{v.en3: (v, True) for v in VERB_LIST},
}

VOWELS_EN = tuple("aeiou")
VOWELS_FR = tuple("aeiouyhàâäéèêëîïôöûùüœ")

# ---- vocabulary ----------------------------------------------------------------------------------


def _en_vocab() -> frozenset[str]:
    words = {"the", "a", "an", "and", ".", *SUBJECT_PRONOUNS, *BE_EN, *PREPOSITIONS, *ADJECTIVES}
    words |= set(NOUN_BY_FORM) | set(VERB_BY_FORM)
    return frozenset(words)


def _fr_vocab() -> frozenset[str]:
    words = {"le", "la", "l'", "les", "un", "une", "et", ".", "j'", *BE_FR, *PREPOSITIONS.values()}
    words |= {v[0] for v in SUBJECT_PRONOUNS.values()}
    for n in NOUN_LIST:
        words |= {n.fr, n.fr_pl}
    for a in ADJ_LIST:
        words |= {a.m, a.f, a.mp, a.fp} | ({a.m_vowel} if a.m_vowel else set())
    for v in VERB_LIST:
        words |= set(v.fr)
    return frozenset(words)


#: Every English token the grammar uses (lowercase; includes ".").
EN_VOCAB: frozenset[str] = _en_vocab()
#: Every French token the grammar produces (lowercase; ``l'`` and ``j'`` are tokens).
FR_VOCAB: frozenset[str] = _fr_vocab()
