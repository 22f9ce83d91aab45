"""The built-in lesson: the topics of a transformers lecture in order, each a short text, links and a knowledge check.

The lesson itself is a lesson file, ``assets/lessons/attention-in-eleven-steps.toml``, read by the same code as a
teacher's own lesson (``app/views/lessons/lesson_file.py``: the data classes :class:`Link`, :class:`Predict`, :class:`Choice`,
:class:`Step` and :class:`Lesson` live there and are re-exported here), so a teacher can download it, change it
and open it again without touching Python. Links name a page of ``app/views/`` and the URL parameters that open
it in the right state (the widgets' session keys: text, model, layer, head, causal, step_query, explore_tab,
heads_tab, explore_block, pos_tab, bahdanau_text, vit_source, pretraining_tab, fill_text).

Predict-then-reveal checks name only the model, sentence, layer, head and query word; the answer is computed
from the real trace when the student answers (never written in the file). The heads were chosen by measuring
(see tests/app/test_lessons.py, which checks that each one's top key is still the one the text talks about,
so a retrained checkpoint that changes it fails a test instead of misleading a class).

What stays here is what the page's two inline demos draw (``lessons.DEMOS``): their sentence, head and scores.
"""

from __future__ import annotations

import functools

from app.state import DEFAULT_TEXT
from app.views.lessons.keys import BUILTIN_FILE
from app.views.lessons.lesson_file import Choice, Lesson, Link, Look, Predict, Step, read_lesson

__all__ = [
    "BUILTIN_FILE",
    "IT_SENTENCE",
    "LESSON",
    "QKV_HEAD",
    "SOFTMAX_KEYS",
    "SOFTMAX_SCORES",
    "STEPS",
    "STORY",
    "Choice",
    "Lesson",
    "Link",
    "Look",
    "Predict",
    "Step",
    "builtin_lesson",
]


IT_SENTENCE = DEFAULT_TEXT  # "The animal didn't cross the street because it was too tired." (the "steps" demo)
QKV_HEAD = (3, 1)  # MiniLM: "it" → "animal" (measured: 0.68, the next key 0.10); the "steps" demo's head
SOFTMAX_SCORES = (2.0, 1.0, 0.5, -1.0)  # the softmax step's live chart: four keys' scores
SOFTMAX_KEYS = ("animal", "street", "tired", "the")


@functools.cache
def builtin_lesson() -> Lesson:
    """The built-in lesson, read once per process. Link values and model ids are checked by the tests
    (tests/unit/test_lesson_file.py), not on every start: reading them asks the model catalog."""
    return read_lesson(BUILTIN_FILE.read_bytes(), check_values=False)


LESSON = builtin_lesson()
STEPS: tuple[Step, ...] = LESSON.steps
STORY = next(s.check.text for s in STEPS if isinstance(s.check, Predict) and s.check.model == "tiny-gpt-stories")
