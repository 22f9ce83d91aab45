"""A class in one room in real browsers, across the two workers of the classroom launch (issue 21).

One launch (``scripts/classroom.sh``, 2 workers behind HAProxy, a class store of its own in a temporary
``AP_DATA_DIR``) serves the module. Every person is a separate Chromium context whose HAProxy cookie
(SERVERID) is set before its first request, so who sits on which worker is chosen, and each page checks it
from the X-AP-Worker header of the responses it got.

- A student who reloads (with or without the join link) is the same student: one member, the same answer.
- A teacher and three students on two workers: join by link, a question pushed, each answer on the
  teacher's page (how soon is written to test-artifacts/class-room-seen.json; the promise is 2 s), the
  distribution; then the worker of the teacher
  and one student is killed: their pages reconnect to the other worker and still show every answer.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from classroom_launch import Classroom, launch, wait_for_workers
from playwright.sync_api import Browser, BrowserContext, Page, expect

from e2e_helpers import expect_idle, expect_no_exception

pytestmark = pytest.mark.e2e

CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
WORKERS = ("w0", "w1")
FIRST_DRAW_MS = 90_000  # a fresh worker: imports, MiniLM, plotly.js
ANSWER_SEEN_MS = 15_000  # an answer reaches the teacher's page (the promise is 2 s: timed, not asserted, below)
RECONNECT_MS = 60_000  # a killed worker: HAProxy marks it down, the page reconnects to the other one
PICK = '[class*="st-key-class_pick_"]'
SEND = '[class*="st-key-class_send_"] button'
ANSWERS_CHART = '[class*="st-key-class_answers_"] .js-plotly-plot'


@dataclass
class Person:
    context: BrowserContext
    page: Page
    worker: str
    served_by: set = field(default_factory=set)  # X-AP-Worker of every HTTP response the page got


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set E2E_CHROMIUM)")
    data = tmp_path_factory.mktemp("class-store")
    with launch("class-room.log", workers=len(WORKERS), extra_env={"AP_DATA_DIR": str(data)}) as room:
        wait_for_workers(room.url, WORKERS)
        yield room


def person(browser: Browser, classroom: Classroom, worker: str) -> Person:
    """A browser of its own, pinned to ``worker`` by HAProxy's cookie."""
    context = browser.new_context(viewport={"width": 1280, "height": 1400})
    context.add_cookies([{"name": "SERVERID", "value": worker, "url": classroom.url}])
    page = context.new_page()
    who = Person(context, page, worker)
    # HTTP responses only: a blob: URL is the page's own memory (a component's script), no worker answered it
    page.on("response", lambda r: r.url.startswith("http") and who.served_by.add(r.headers.get("x-ap-worker")))
    return who


def start_class(teacher: Person, classroom: Classroom) -> str:
    teacher.page.goto(f"{classroom.url}/classroom")
    teacher.page.get_by_role("button", name="Start a class").click(timeout=FIRST_DRAW_MS)
    invite = teacher.page.locator('[data-testid="stMarkdown"]', has_text="Class code:")
    expect(invite).to_be_visible(timeout=FIRST_DRAW_MS)
    code = re.search(r"Class code:\s*([A-Z0-9]{6})", invite.inner_text()).group(1)
    return code


def join(student: Person, classroom: Classroom, code: str) -> None:
    student.page.goto(f"{classroom.url}/?room={code}")
    expect(student.page.get_by_text("you are in")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(student.page, FIRST_DRAW_MS)  # the page under the panel is drawn (the first one loads MiniLM)


def expect_joined(teacher: Person, n: int, timeout_ms: int = 10_000) -> None:
    expect(teacher.page.locator('[data-testid="stMetricValue"]').first).to_have_text(str(n), timeout=timeout_ms)


def push_choice(teacher: Person, prompt: str, options: list[str]) -> None:
    page = teacher.page
    page.locator(".st-key-class_q_prompt input").fill(prompt)  # the multiple-choice form's "Question"
    page.get_by_label("Options, one per line (2 to 8)").fill("\n".join(options))
    page.locator(".st-key-class_ask_choice button").click()
    expect(page.get_by_text(prompt)).to_be_visible(timeout=10_000)


def answer(student: Person, option: str) -> None:
    """Pick ``option`` in the room's panel and send it; returns when the page says it is in."""
    page = student.page
    page.locator(PICK).get_by_text(option, exact=True).click(timeout=10_000)
    send = page.locator(SEND)
    expect(send).to_be_enabled(timeout=10_000)
    send.click()


def expect_counts(teacher: Person, counts: list[int], timeout_ms: float) -> None:
    """Wait until the teacher's page shows one answers chart with these bars (a rerun of the live fragment
    can show the old chart next to the new one for a moment)."""
    teacher.page.wait_for_function(
        """([selector, counts]) => {
             const charts = document.querySelectorAll(selector);
             return charts.length === 1 && charts[0].data
               && JSON.stringify(Array.from(charts[0].data[0].x)) === JSON.stringify(counts);
           }""",
        arg=[ANSWERS_CHART, counts],
        timeout=timeout_ms,
    )


def test_a_student_who_reloads_is_the_same_student(browser: Browser, classroom: Classroom):
    teacher, student = person(browser, classroom, "w0"), person(browser, classroom, "w1")
    try:
        code = start_class(teacher, classroom)
        join(student, classroom, code)
        expect_joined(teacher, 1)
        push_choice(teacher, "Reload question?", ["yes", "no"])
        expect(student.page.locator(PICK)).to_be_visible(timeout=10_000)
        answer(student, "no")
        expect(student.page.get_by_text("Your answer is in")).to_be_visible(timeout=10_000)

        student.page.goto(f"{classroom.url}/")  # a reload without the join link: the panel comes back
        expect(student.page.get_by_text("Your answer is in")).to_be_visible(timeout=FIRST_DRAW_MS)
        expect(student.page.locator(PICK).locator("input[type=radio]").nth(1)).to_be_checked()
        for _ in range(12):  # the join link again and again: more than the join limit (10 a minute)
            student.page.goto(f"{classroom.url}/?room={code}")
            expect(student.page.get_by_text("Your answer is in")).to_be_visible(timeout=FIRST_DRAW_MS)
        expect_no_exception(student.page)
        teacher.page.reload()  # a teacher's reload keeps the class too (its cookie)
        expect(teacher.page.get_by_text("Reload question?")).to_be_visible(timeout=FIRST_DRAW_MS)
        expect_joined(teacher, 1)
        expect(teacher.page.get_by_text("1 of 1 answered")).to_be_visible()
        cookies = {c["name"]: c["value"] for c in student.context.cookies()}
        assert re.fullmatch(r"[0-9a-f]{32}", cookies["ap_browser"])  # a random id, nothing else
    finally:
        teacher.context.close()
        student.context.close()


def test_a_class_across_two_workers_sees_every_answer_even_when_a_worker_dies(browser: Browser, classroom: Classroom):
    teacher = person(browser, classroom, "w0")
    students = [person(browser, classroom, w) for w in ("w0", "w1", "w1")]
    everyone = [teacher, *students]
    try:
        code = start_class(teacher, classroom)
        for n, student in enumerate(students, start=1):
            join(student, classroom, code)
            expect_joined(teacher, n)
        for who in everyone:  # each page was served by the worker its cookie names, and only by it
            assert who.served_by == {who.worker}, (who.worker, who.served_by)
        assert {who.worker for who in everyone} == set(WORKERS)

        push_choice(teacher, "Which vector is compared with the query?", ["the keys", "the values", "the queries"])
        picks = ["the keys", "the values", "the keys"]
        seen: list[float] = []  # seconds from a student's "Your answer is in" to the teacher's count
        for n, (student, pick) in enumerate(zip(students, picks, strict=True), start=1):
            expect(student.page.locator(PICK)).to_be_visible(timeout=10_000)
            answer(student, pick)
            # the "an answer on a student's page appears on the teacher's within 2 s": the clock starts when
            # the student's page shows the answer in (its own rerun, which wrote it, is over); how long the teacher's
            # page took is written to test-artifacts/class-room-seen.json. The assertion is that it arrives, not how
            # fast: four Chromium pages on the server's own 2 cores made CI miss 2 s twice (the teacher's page polls
            # every 0.5 s; bench/bench_polls.py times a class's answers without browsers on the machine)
            expect(student.page.get_by_text(f"Your answer is in: {pick}")).to_be_visible(timeout=10_000)
            start = time.perf_counter()
            expect(teacher.page.get_by_text(f"{n} of 3 answered")).to_be_visible(timeout=ANSWER_SEEN_MS)
            seen.append(round(time.perf_counter() - start, 3))
        expect_counts(teacher, [2, 1, 0], 10_000)
        artifacts = Path(__file__).resolve().parents[2] / "test-artifacts"
        (artifacts / "class-room-seen.json").write_text(json.dumps({"seconds_to_the_teacher": seen}))
        print(f"answers on the teacher's page after {seen} s")

        os.kill(classroom.worker_pids["w0"], signal.SIGKILL)  # the teacher's and the first student's worker
        expect(teacher.page.get_by_text("3 of 3 answered")).to_be_visible(timeout=RECONNECT_MS)
        expect_counts(teacher, [2, 1, 0], RECONNECT_MS)
        expect_joined(teacher, 3)
        teacher.page.reload()  # a fresh page load now comes from the worker left: the class is still there
        expect(teacher.page.get_by_text("3 of 3 answered")).to_be_visible(timeout=FIRST_DRAW_MS)
        assert "w1" in teacher.served_by
        students[0].page.reload()
        expect(students[0].page.get_by_text("Your answer is in: the keys")).to_be_visible(timeout=FIRST_DRAW_MS)
        for who in everyone:
            expect_no_exception(who.page)
        teacher.page.screenshot(path=str(Path(__file__).resolve().parents[2] / "test-artifacts" / "class-room.png"))
    finally:
        for who in everyone:
            who.context.close()
