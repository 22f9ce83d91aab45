"""A free-text question in Chromium (issue 44, item 2): the teacher asks it from the projector's folded controls, a
student types an answer on their own page and sends it, and the projector's words chart shows its word; a rude answer
sent meanwhile stays off the chart until the teacher shows it; the teacher's CSV, downloaded, holds both.

Waits are on selectors or conditions, never sleeps.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from app.store import open_store
from app.store.free_text import TextAnswers
from conftest import running_app  # the e2e conftest's (as the other e2e tests import it)
from e2e_helpers import expect_idle, start_class

pytestmark = pytest.mark.e2e

LOAD_MS = 90_000  # a fresh server: imports, MiniLM, plotly.js
POLL_MS = 15_000  # a change reaches a screen at its next poll (2 s for a student, 0.5 s for the teacher)
FOLDED = "Ask a question, run a lesson, end the class"
WORDS = '[class*="st-key-class_words_"] .js-plotly-plot'


def chart_words(page: Page, wanted: list[str]) -> None:
    """Wait until the projector's words chart has exactly the bars ``wanted``, in that order."""
    page.wait_for_function(
        """([sel, wanted]) => { const c = document.querySelectorAll(sel);
             return c.length === 1 && c[0].data && JSON.stringify(Array.from(c[0].data[0].y)) === JSON.stringify(wanted); }""",
        arg=[WORDS, wanted],
        timeout=POLL_MS,
    )


def test_a_students_answer_reaches_the_projectors_words_and_a_rude_one_waits(browser: Browser, tmp_path: Path):
    data = tmp_path / "data"
    with running_app("e2e-class-free-text.log", {"AP_DATA_DIR": str(data)}) as url:
        teacher_context, student_context = (
            browser.new_context(viewport={"width": 1280, "height": 720}),
            browser.new_context(),
        )
        teacher, pupil = teacher_context.new_page(), student_context.new_page()
        try:
            code, _ = start_class(teacher, url, present=True, timeout_ms=LOAD_MS)
            pupil.goto(f"{url}/?room={code}")
            expect(pupil.get_by_text("you are in")).to_be_visible(timeout=LOAD_MS)
            expect_idle(pupil, LOAD_MS)

            teacher.get_by_text(FOLDED).click()
            teacher.get_by_role("tab", name="Free text").click()
            teacher.locator(".st-key-class_t_prompt input").fill("One word for what a query looks for?")
            teacher.locator(".st-key-class_ask_text button").click()
            expect(teacher.get_by_text("0 of 1 answered · live")).to_be_visible(timeout=POLL_MS)

            box = pupil.get_by_label("Your answer")
            expect(box).to_be_visible(timeout=POLL_MS)
            box.fill("Matching keys")
            pupil.get_by_role("button", name="Send my answer").click()
            expect(pupil.get_by_text("Your answer is in: Matching keys.")).to_be_visible(timeout=POLL_MS)
            chart_words(teacher, ["keys", "matching"])

            store = open_store(None, data)  # a second student, through the store another worker would use
            store.join(code, "student-2")
            question = store.current_question(code)
            assert TextAnswers(store).answer(code, question.id, "student-2", "keys, damn it") is True  # held back
            expect(teacher.get_by_text("2 of 2 answered · live")).to_be_visible(timeout=POLL_MS)
            expect(teacher.get_by_text("1 answer hidden until the teacher shows them")).to_be_visible(timeout=POLL_MS)
            chart_words(teacher, ["keys", "matching"])  # the rude answer is not counted
            expect(teacher.get_by_text("damn")).to_have_count(0)  # nor printed on the projector

            teacher.get_by_role("button", name="Show").click()
            chart_words(teacher, ["keys", "damn", "matching"])

            with teacher.expect_download(timeout=POLL_MS) as got:  # the file is written from the store on the click
                teacher.get_by_role("button", name="Download the results (CSV)").click()
            rows = list(csv.reader(io.StringIO(Path(got.value.path()).read_text("utf-8-sig"), newline="")))
            assert got.value.suggested_filename == f"class_{code}_answers.csv"
            assert [(r[2], r[3], r[4], r[6]) for r in rows[1:]] == [
                ("free text", "S01", "Matching keys", ""),
                ("free text", "S02", "keys, damn it", ""),
            ]
        finally:
            teacher_context.close()
            student_context.close()
