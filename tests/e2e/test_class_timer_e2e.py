"""A timed question in Chromium (issue 44, item 1): the teacher asks with a time limit, the student's panel counts
down in the browser, the question closes on time on both screens with the answer already in kept; the teacher
reopens it, closes it again and resets its answers after a confirmation.

Waits are on selectors or conditions, never sleeps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from app.store import RoomError, open_store
from conftest import running_app  # the e2e conftest's (as the other e2e tests import it)
from e2e_helpers import expect_idle, expect_no_exception, start_class

pytestmark = pytest.mark.e2e

LOAD_MS = 90_000  # a fresh server: imports, MiniLM, plotly.js
LIMIT_S = 15  # the question's time limit: room for the student to answer first on a busy two-core machine
POLL_MS = 10_000  # a change reaches a screen at its next poll (2 s for a student, 0.5 s for the teacher)
PICK = '[class*="st-key-class_pick_"]'
SEND = '[class*="st-key-class_send_"] button'
COUNT = ".ap-countdown b"


def expect_counts(page: Page, wanted: list[int]) -> None:
    page.wait_for_function(
        """(wanted) => { const c = document.querySelectorAll('[class*="st-key-class_answers_"] .js-plotly-plot');
             return c.length === 1 && c[0].data && JSON.stringify(Array.from(c[0].data[0].x)) === JSON.stringify(wanted); }""",
        arg=wanted,
        timeout=POLL_MS,
    )


def test_a_timed_question_counts_down_closes_on_time_and_is_reopened_closed_and_reset(browser: Browser, tmp_path: Path):
    data = tmp_path / "data"
    with running_app("e2e-class-timer.log", {"AP_DATA_DIR": str(data)}) as url:
        teacher_context, student_context = browser.new_context(), browser.new_context()
        teacher, pupil = teacher_context.new_page(), student_context.new_page()
        try:
            code, _ = start_class(teacher, url, timeout_ms=LOAD_MS)
            pupil.goto(f"{url}/?room={code}")
            expect(pupil.get_by_text("you are in")).to_be_visible(timeout=LOAD_MS)
            expect_idle(pupil, LOAD_MS)

            teacher.locator(".st-key-class_q_prompt input").fill("Which vector is compared with the query?")
            teacher.get_by_label("Options, one per line (2 to 8)").fill("the keys\nthe values")
            teacher.locator(".st-key-class_q_seconds input").fill(str(LIMIT_S))
            teacher.locator(".st-key-class_ask_choice button").click()
            expect(teacher.locator(COUNT)).to_be_visible(timeout=POLL_MS)

            count = pupil.locator(COUNT)
            expect(count).to_be_visible(timeout=POLL_MS)
            first = int(count.inner_text())
            assert 0 < first <= LIMIT_S
            # counting down in the browser: an element shows less than the server's count it was drawn with
            pupil.wait_for_function(
                """() => Array.from(document.querySelectorAll('.ap-countdown')).some((el) =>
                     Number(el.querySelector('b').textContent) < Math.ceil(parseFloat(el.dataset.left)))""",
                timeout=POLL_MS,
            )
            pupil.locator(PICK).get_by_text("the keys", exact=True).click()
            pupil.locator(SEND).click()
            expect(pupil.get_by_text("Your answer is in")).to_be_visible(timeout=POLL_MS)

            closed = pupil.get_by_text("This question is closed")  # on time: the limit and one poll at most
            expect(closed).to_be_visible(timeout=(LIMIT_S + 5) * 1000)
            expect(pupil.locator(PICK)).to_have_count(0)
            expect(teacher.get_by_text("1 of 1 answered · closed: no more answers")).to_be_visible(timeout=POLL_MS)
            expect_counts(teacher, [1, 0])  # the answer already in is kept
            store = open_store(None, data)  # a late student, through the store another worker would use
            question = store.current_question(code)
            store.join(code, "late-student")
            with pytest.raises(RoomError, match="This question is closed"):
                store.answer(code, question.id, "late-student", 1)

            teacher.get_by_role("button", name="Reopen").click()
            expect(pupil.locator(PICK)).to_be_visible(timeout=POLL_MS)
            expect(pupil.locator(COUNT)).to_have_count(0)  # reopened without a time limit
            pupil.locator(PICK).get_by_text("the values", exact=True).click()
            pupil.locator(SEND).click()
            expect_counts(teacher, [0, 1])
            teacher.get_by_role("button", name="Close").click()
            expect(closed).to_be_visible(timeout=POLL_MS)

            teacher.get_by_role("button", name="Reset answers").click()
            expect(teacher.get_by_text("Clear the 1 answer to this question?")).to_be_visible(timeout=POLL_MS)
            teacher.get_by_role("button", name="Clear the answers").click()
            expect_counts(teacher, [0, 0])
            expect(
                teacher.get_by_text("0 of 2 answered · closed")
            )  # the late student joined.to_be_visible(timeout=POLL_MS)
            expect_no_exception(teacher)
            expect_no_exception(pupil)
        finally:
            teacher_context.close()
            student_context.close()
