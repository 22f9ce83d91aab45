"""The Class page on a projector (``?present=1``), as the room sees it while a poll runs (issue 21).

A teacher starts a class in Chromium; twenty students join and answer a multiple-choice poll through the class
store (the same store the server reads, another process: what the students' own browsers would write). At
1280×720 the room code, the join link, the QR code and the poll's answer distribution are all inside the first
screen, without scrolling (their bounding boxes in the viewport), and the teacher's controls (asking, the lesson,
ending the class) are folded away and the control link is not on the screen until the teacher asks for it. Screenshots at 1280×720 and 1920×1080 go to test-artifacts/.

Waits are on selectors or conditions, never sleeps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from app.store import Ask, open_store
from conftest import running_app  # the e2e conftest's (as the other e2e tests import it)
from e2e_helpers import PLOT, expect_idle, expect_no_exception, start_class

pytestmark = pytest.mark.e2e

LOAD_MS = 60_000
FOLDED = "Ask a question, run a lesson, end the class"  # the teacher's controls on the projector
STUDENTS = 20
PICKS = [0] * 11 + [1] * 6 + [2] * 3  # eleven for the keys, six for the values, three for the queries
SCREENS = ((1280, 720), (1920, 1080))


def overlap(a: list[float], b: list[float]) -> bool:
    return not (a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1])


def inside(page: Page, locator, name: str) -> dict:
    """``locator``'s box, asserted whole inside the viewport (no scrolling needed to see it). The page's answer
    counts refresh on a timer: an element redrawn between the visibility check and the measurement has no box for
    that moment (CI, once), so it is measured again."""
    box = None
    for _ in range(20):
        expect(locator).to_be_visible(timeout=LOAD_MS)
        box = locator.bounding_box()
        if box is not None:
            break
    view = page.viewport_size
    assert box is not None, name
    assert box["x"] >= 0 and box["y"] >= 0, (name, box)
    assert box["x"] + box["width"] <= view["width"] + 1, (name, box, view)
    assert box["y"] + box["height"] <= view["height"] + 1, (name, box, view)
    return box


def test_the_class_page_on_a_projector_shows_code_link_qr_and_answers_in_the_first_screen(
    browser: Browser, tmp_path: Path, artifacts: Path
):
    data = tmp_path / "data"
    with running_app("e2e-class-present.log", {"AP_DATA_DIR": str(data)}) as url:
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        page = context.new_page()
        try:
            code, token = start_class(page, url, present=True, timeout_ms=LOAD_MS)
            code_box = page.get_by_test_id("stMarkdown").filter(has_text="Class code")

            store = open_store(None, data)  # the server's store, from another process: the students' answers
            question = store.push_question(
                code,
                token,
                Ask(
                    "choice",
                    "Which vector does a query get compared with?",
                    ["the keys", "the values", "the queries"],
                    0,
                ),
            )
            for i, pick in enumerate(PICKS):
                store.join(code, f"student-{i:02d}")
                store.answer(code, question.id, f"student-{i:02d}", pick)
            expect(page.get_by_text(f"{STUDENTS} of {STUDENTS} answered")).to_be_visible(timeout=LOAD_MS)
            chart = page.locator(PLOT).filter(has=page.locator(".main-svg")).first
            expect(chart).to_be_visible(timeout=LOAD_MS)
            expect_idle(page, LOAD_MS)
            expect_no_exception(page)

            for width, height in SCREENS:
                page.set_viewport_size({"width": width, "height": height})
                expect(chart.locator(".main-svg").first).to_be_visible(timeout=LOAD_MS)
                page.screenshot(path=str(artifacts / f"class-present-{width}x{height}.png"))
            page.set_viewport_size({"width": 1280, "height": 720})
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

            inside(page, code_box, "the room code")
            link = page.get_by_test_id("stCode").filter(has_text=f"room={code}").first
            inside(page, link, "the join link")
            text, button = link.evaluate("""(el) => {
                const range = document.createRange(); range.selectNodeContents(el.querySelector('pre code'));
                const lines = Array.from(range.getClientRects()).map(r => [r.left, r.top, r.right, r.bottom]);
                const b = el.querySelector('button').getBoundingClientRect();
                return [lines, [b.left, b.top, b.right, b.bottom]];}""")
            box = link.bounding_box()
            for line in text:  # the whole address shows: no line under the copy button or out of its box
                assert not overlap(line, button), (line, button)
                assert line[2] <= box["x"] + box["width"] + 1, (line, box)
            qr = inside(page, page.get_by_role("img", name="QR code of the join link"), "the QR code")
            assert min(qr["width"], qr["height"]) >= 720 / 3, qr  # scannable from the back of a room
            inside(page, page.get_by_text(question.prompt), "the poll's question")
            bars = inside(page, chart.locator(".main-svg").first, "the answer distribution")
            assert bars["height"] >= 120, bars
            counts = chart.locator(".bars .point")  # one bar per option, drawn
            expect(counts).to_have_count(3)
            # the controls are folded: none of their fields is shown until the teacher opens them
            expect(page.get_by_label("Options, one per line (2 to 8)")).not_to_be_visible()
            expect(page.get_by_role("button", name="End the class")).not_to_be_visible()
            secret = page.get_by_test_id("stCode").filter(has_text=f"teacher={code}-")
            expect(secret).to_have_count(0)  # the control link is not on the projected screen, folded or not
            page.get_by_text("Ask a question, run a lesson, end the class").click()
            expect(page.get_by_role("button", name="End the class")).to_be_visible(timeout=LOAD_MS)
            expect(page.get_by_label("Options, one per line (2 to 8)")).to_be_visible()
            expect(secret).to_have_count(0)  # the controls open: still hidden until the teacher asks for it
            assert token not in page.inner_text("body")
            page.get_by_text("Show my control link on this screen").click()
            expect(secret).to_be_visible(timeout=LOAD_MS)
            expect_no_exception(page)
        finally:
            context.close()


LONG = (  # 30 words that MiniLM reads as 32 tokens, the most a "which token" poll offers
    "The old teacher told the students that she would give them more time because the exam was long and the room "
    "was very hot on that day in June."
)
EIGHT = ["the keys", "the values", "the queries", "the softmax", "the scale", "the mask", "the heads", "the output"]


def answered_by_all(page: Page, store, code: str, question, picks: list[int]) -> None:
    for i, pick in enumerate(picks):
        store.join(code, f"student-{i:02d}")
        store.answer(code, question.id, f"student-{i:02d}", pick)
    expect(page.get_by_text(f"{len(picks)} of {len(picks)} answered")).to_be_visible(timeout=LOAD_MS)
    expect_idle(page, LOAD_MS)


def settled(page: Page) -> None:
    """Drawn, and scrolled back to the top as a projector shows the page (a click may have scrolled it)."""
    page.evaluate("() => document.querySelectorAll('*').forEach(e => { if (e.scrollTop) e.scrollTop = 0; })")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def test_an_eight_option_poll_and_a_revealed_which_token_poll_on_a_long_sentence_fit_the_projector(
    browser: Browser, tmp_path: Path, artifacts: Path
):
    """The most options a teacher can give a multiple-choice poll (8: the Class page's form and the store agree),
    then a "which token" poll on a 30-word sentence (32 tokens, the most a poll offers), revealed: the head's real
    row beside the class's answers. At 1280×720 the question, both charts and the revealed answer are inside the
    first screen, and every bar is drawn."""
    from app.runtime.rooms import predict_question
    from app.store.rooms import MAX_OPTIONS

    assert MAX_OPTIONS["choice"] == len(EIGHT)  # the poll below is the largest multiple choice there is
    data = tmp_path / "data"
    with running_app("e2e-class-present-long.log", {"AP_DATA_DIR": str(data)}) as url:
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        page = context.new_page()
        try:
            code, token = start_class(page, url, present=True, timeout_ms=LOAD_MS)
            page.get_by_text(FOLDED).click()  # the teacher's form says 8 is its most
            options_max = page.get_by_label("Number of the right option (0: none)")
            expect(options_max).to_have_attribute("max", str(len(EIGHT)), timeout=LOAD_MS)
            page.get_by_text(FOLDED).click()
            expect(options_max).not_to_be_visible(timeout=LOAD_MS)

            store = open_store(None, data)
            choice = store.push_question(code, token, Ask("choice", "What does a query get compared with?", EIGHT, 0))
            answered_by_all(page, store, code, choice, [i % len(EIGHT) for i in range(STUDENTS)])
            page.get_by_role("button", name="Reveal the answer").click()
            revealed = page.get_by_text(f"The answer: {EIGHT[0]}")
            expect(revealed).to_be_visible(timeout=LOAD_MS)
            expect_idle(page, LOAD_MS)
            chart = page.locator(PLOT).filter(has=page.locator(".main-svg")).first
            expect(chart.locator(".bars .point")).to_have_count(len(EIGHT), timeout=LOAD_MS)
            settled(page)
            page.screenshot(path=str(artifacts / "class-present-eight-options.png"))
            inside(page, page.get_by_text(choice.prompt), "the 8-option question")
            inside(page, chart.locator(".main-svg").first, "the 8 options' answers")
            inside(page, revealed, "the revealed answer")

            asked = predict_question("minilm", LONG, 3, 1, "she")
            assert len(asked.options) == 32, asked.options
            predict = store.push_question(
                code, token, Ask("predict", asked.prompt, list(asked.options), asked.answer, asked.detail)
            )
            answered_by_all(page, store, code, predict, [(3 * i) % len(asked.options) for i in range(STUDENTS)])
            page.get_by_role("button", name="Reveal the answer").click()
            row = page.locator(PLOT).filter(has_text="The model: layer 3 head 1")
            expect(row).to_have_count(1, timeout=LOAD_MS)
            answers = page.locator(PLOT).filter(has_text="The class's answers")
            revealed = page.get_by_text(f"The answer: {asked.options[asked.answer]}", exact=True)
            expect(revealed).to_be_visible(timeout=LOAD_MS)
            expect_idle(page, LOAD_MS)
            expect_no_exception(page)
            for chart in (answers, row):
                expect(chart.locator(".bars .point")).to_have_count(len(asked.options), timeout=LOAD_MS)
            settled(page)
            page.screenshot(path=str(artifacts / "class-present-long-which-token.png"))
            inside(page, page.get_by_text(asked.prompt), "the which-token question")
            left = inside(page, answers.locator(".main-svg").first, "the class's answers")
            right = inside(page, row.locator(".main-svg").first, "the head's row")
            assert left["x"] + left["width"] <= right["x"] + 1, (left, right)  # side by side
            inside(page, revealed, "the revealed answer")
        finally:
            context.close()
