"""Seeded, varied English sentences for the load benchmarks: what students in a class might type.

``sentence(rng, words)`` joins clauses built from small word lists until the sentence has about
``words`` words (MiniLM's tokenizer makes ~1.1–1.3 tokens of a word here, plus [CLS] and [SEP]), so
every student sends text the server has not traced before. The same seed gives the same sentences.
"""

from __future__ import annotations

import random

SUBJECTS = [
    "the teacher",
    "my little brother",
    "a tired farmer",
    "the old captain",
    "our neighbour",
    "the new student",
    "a curious cat",
    "the museum guide",
    "my grandmother",
    "the bus driver",
    "a young scientist",
    "the baker",
    "the football team",
    "a quiet girl",
    "the mayor",
    "two old friends",
    "the doctor",
    "a lost tourist",
    "the librarian",
    "my best friend",
    "the robot",
    "a hungry fox",
    "the pilot",
    "the gardener",
]
VERBS = [
    "found",
    "painted",
    "forgot",
    "carried",
    "explained",
    "repaired",
    "borrowed",
    "discovered",
    "cooked",
    "described",
    "watched",
    "sold",
    "opened",
    "lost",
    "cleaned",
    "measured",
    "wrote",
    "planted",
    "hid",
    "translated",
    "photographed",
    "counted",
    "built",
    "noticed",
]
OBJECTS = [
    "a red umbrella",
    "the broken bicycle",
    "an old map of the city",
    "the last piece of cake",
    "a letter from Spain",
    "the heavy wooden box",
    "three yellow tulips",
    "the strange noise",
    "a poem about the sea",
    "the kitchen window",
    "a small silver key",
    "the science project",
    "the train timetable",
    "a bag of apples",
    "the missing homework",
    "an interesting question",
    "the tallest tree in the park",
    "a picture of the mountains",
    "the dusty piano",
    "the answer",
]
PLACES = [
    "in the garden",
    "at the station",
    "near the river",
    "behind the school",
    "in the library",
    "on the roof",
    "at the market",
    "under the bridge",
    "in the kitchen",
    "on the beach",
    "in a small village",
    "at the top of the hill",
    "in the classroom",
    "outside the bakery",
]
TIMES = [
    "Yesterday",
    "Last summer",
    "Early this morning",
    "On Tuesday",
    "After the storm",
    "Before lunch",
    "Every winter",
    "Late at night",
    "During the holidays",
    "A long time ago",
]
REASONS = [
    "because it was raining",
    "although nobody had asked",
    "since the shops were closed",
    "because it was too tired",
    "even though it was late",
    "so that everyone could see it",
    "while the others were sleeping",
    "before anyone noticed",
    "because the road was blocked",
]
JOINERS = [", and then", ", but", "; meanwhile", ", so", ", while", ". Later", ". After that", ", although"]


def _clause(rng: random.Random, first: bool) -> str:
    parts = []
    if first and rng.random() < 0.5:
        parts.append(rng.choice(TIMES) + ",")
    parts += [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)]
    if rng.random() < 0.7:
        parts.append(rng.choice(PLACES))
    if rng.random() < 0.4:
        parts.append(rng.choice(REASONS))
    return " ".join(parts)


def sentence(rng: random.Random, words: int) -> str:
    """A sentence (or two) of about ``words`` words (at least one clause)."""
    text = _clause(rng, first=True)
    while len(text.split()) < words:
        text += rng.choice(JOINERS) + " " + _clause(rng, first=False)
    text = text[0].upper() + text[1:]
    return text + "."


def student_sentences(seed: int, count: int, low_words: int = 14, high_words: int = 38) -> list[str]:
    """``count`` different sentences of ``low_words``–``high_words`` words from one seed."""
    rng = random.Random(seed)
    seen: list[str] = []
    while len(seen) < count:
        text = sentence(rng, rng.randint(low_words, high_words))
        if text not in seen:
            seen.append(text)
    return seen
