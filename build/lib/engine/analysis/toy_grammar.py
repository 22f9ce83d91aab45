"""What the translators were trained on, for display: the toy grammar's words by kind, and references.

The reference of a source text is the grammar's own translation (rule-based,
:func:`engine.corpora.translation.translate`) for an English sentence, or the ISO date
(:func:`engine.corpora.dates.normalise`) for a written date. Pure Python, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.corpora import dates
from engine.corpora import translation as grammar

#: Sentences of the grammar (and a date) for the example picker; each exercises something.
EXAMPLES: tuple[str, ...] = (
    "the red car is big",  # adjective after the noun in French: the map crosses
    "she sees the small black dog",  # "small" stays before the noun, "black" moves after it
    "the old tree is under the bridge",  # vieil before a vowel; a preposition
    "i have an umbrella",  # elision: j'ai
    "the girls are happy and tired",  # plural feminine agreement
    "the white cat likes the green apples",
    "21 November 2026",  # a date → ISO, digit by digit
)


@dataclass(frozen=True)
class Reference:
    """The expected output for a source text, or why there is none.

    Attributes:
        text: the reference translation ("" when none).
        kind: ``"sentence"``, ``"date"`` or ``""``.
        why: empty, or a sentence for the UI saying why there is no reference.
    """

    text: str
    kind: str
    why: str = ""

    def matches(self, output: str) -> bool:
        """True when ``output`` equals the reference (case, spacing and a final full stop aside)."""
        if not self.text:
            return False
        if self.kind == "date":
            return output.strip() == self.text
        clean = [t for t in grammar.tokenize(output) if t != "."]
        return clean == [t for t in grammar.tokenize(self.text) if t != "."]


def reference(text: str) -> Reference:
    """The grammar's translation of ``text`` (a date when it has digits), or why there is none."""
    text = text.strip()
    if not text:
        return Reference("", "", "there is no text")
    if any(ch.isdigit() for ch in text):
        try:
            return Reference(dates.normalise(text), "date")
        except ValueError as err:
            return Reference("", "", f"not a date the training data had ({err})")
    try:
        return Reference(grammar.translate(text), "sentence")
    except grammar.UnknownWordError as err:
        return Reference("", "", str(err))
    except ValueError as err:
        return Reference("", "", str(err))


def vocabulary_by_kind() -> dict[str, list[str]]:
    """The source words, grouped for a learner (sorted within each group)."""
    before = sorted(a for a, adj in grammar.ADJECTIVES.items() if adj.before)
    after = sorted(a for a, adj in grammar.ADJECTIVES.items() if not adj.before)
    return {
        "nouns (singular)": sorted(grammar.NOUNS),
        "nouns (plural)": sorted(n.en_pl for n in grammar.NOUNS.values()),
        "adjectives that move after the noun in French": after,
        "adjectives that stay before the noun": before,
        "verbs": sorted({v.en for v in grammar.VERBS.values()} | {v.en3 for v in grammar.VERBS.values()}),
        "pronouns (subjects)": sorted(grammar.SUBJECT_PRONOUNS),
        "prepositions": sorted(grammar.PREPOSITIONS),
        "other words": ["the", "a", "an", "and", "am", "is", "are", "."],
        "date months (full or 3 letters)": [m.lower() for m in dates.MONTHS],
    }
