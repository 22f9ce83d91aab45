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

The module is split by idea: :mod:`.lexicon` (names, objects, colours, sizes, places, feelings),
:mod:`.grammar` (the rules, :func:`is_grammatical`, tokens, the vocabulary and :func:`pronoun_pairs`)
and :mod:`.generator` (:func:`story`, :func:`generate_stories`).
"""

from __future__ import annotations

from engine.corpora.stories.generator import generate_stories, story
from engine.corpora.stories.grammar import (
    STORY_VOCAB_HINT,
    is_grammatical,
    pronoun_pairs,
    split_sentences,
    story_tokens,
)
from engine.corpora.stories.lexicon import (
    CHARACTERS,
    COLOURS,
    FEELINGS,
    OBJECTS,
    PLACES,
    PRONOUN_GENDER,
    SIZES,
)

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
