"""The built-in lesson: the topics of a transformers lecture in order, each a short text, links and a knowledge check.

The lesson is a lesson file (``assets/lessons/attention-in-eleven-steps.toml``) read by the same code as a teacher's
own, so a teacher can download it, change it and open it again without touching Python. Its predict checks name
only the model, sentence, layer, head and word: tests/app/test_lessons.py checks each head's top key is still the
one the text talks about, so a retrained checkpoint that changes it fails a test instead of misleading a class.
What stays here is what the page's two inline demos draw (``page.DEMOS``): their sentence, head and scores.
"""

from __future__ import annotations

from app.state import DEFAULT_TEXT
from app.views.lessons.keys import BUILTIN_FILE
from app.views.lessons.lesson_file import Predict, Step, read_lesson

IT_SENTENCE = DEFAULT_TEXT  # "The animal didn't cross the street because it was too tired." (the "steps" demo)
QKV_HEAD = (3, 1)  # MiniLM: "it" → "animal" (measured: 0.68, the next key 0.10); the "steps" demo's head
SOFTMAX_SCORES = (2.0, 1.0, 0.5, -1.0)  # the softmax step's live chart: four keys' scores
SOFTMAX_KEYS = ("animal", "street", "tired", "the")

# read once per process; link values and model ids are checked by tests/unit/test_lesson_file.py, not on every
# start (reading them asks the model catalog)
LESSON = read_lesson(BUILTIN_FILE.read_bytes(), check_values=False)
STEPS: tuple[Step, ...] = LESSON.steps
STORY = next(s.check.text for s in STEPS if isinstance(s.check, Predict) and s.check.model == "tiny-gpt-stories")
