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

The grammar is split by idea: :mod:`.lexicon` (the word tables and vocabularies), :mod:`.sentence`
(tokens, sentence structure, rendering with the gold alignment), :mod:`.parse` (English → sentence,
:func:`translate`, :func:`alignment`, :func:`suggest`) and :mod:`.generator` (:func:`generate_pairs`).
"""

from __future__ import annotations

from engine.corpora.translation.generator import generate_pairs
from engine.corpora.translation.lexicon import (
    ADJECTIVES,
    EN_VOCAB,
    FR_VOCAB,
    NOUNS,
    PREPOSITIONS,
    SUBJECT_PRONOUNS,
    VERBS,
)
from engine.corpora.translation.parse import UnknownWordError, alignment, suggest, translate
from engine.corpora.translation.sentence import detokenize, tokenize

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
