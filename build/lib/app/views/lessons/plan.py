"""The built-in lesson, read from its lesson file like a teacher's own, and what the page's two demos draw."""

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
