"""Every student included (issue 44, items 5 and 8) in Chromium: a class on its own server, its students in browsers
of their own.

- axe-core (the npm package pinned in tests/e2e/axe, installed by scripts/test.sh) finds no serious or critical
  WCAG 2.1 A/AA violation on any page a student sees with a question on screen (Class, Explore, Lessons, Step by
  step), in the light theme, presenter mode (``?present=1``) and the phone view (``?compact=1`` at 390×844).
- A student answers a multiple-choice and a "which token" question with the keyboard alone (Tab to the answer,
  the arrow keys or typing to choose it, Space or Enter, Tab to "Send my answer", Enter); the class store gets
  exactly those answers.
- On a phone every answer control (each radio's row, the token list, Send) is a touch target of at least 44 px.
- On the projector a revealed "which token" question labels every token on both charts, their titles fit their
  charts and no toolbar covers them.

Waits are on selectors or conditions, never sleeps.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from app.store import Ask, open_store
from app.views.classroom.keys import ROOM
from conftest import running_app  # the e2e conftest's (as the other e2e tests import it)
from e2e_helpers import PLOT, VIEW, expect_idle, expect_no_exception, start_class

pytestmark = pytest.mark.e2e

AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
LOAD_MS = 120_000  # a fresh server: imports, MiniLM, plotly.js
POLL_MS = 15_000  # a change reaches a student's panel at its next poll (2 s) on a busy two-core machine
PAGES = ("classroom", "", "lessons", "step_by_step")  # "": Explore, where a join link lands
MODES = {"light": "", "present": "&present=1", "compact": "&compact=1"}
PHONE = {"width": 390, "height": 844}
TOUCH_PX = 44
PICK = f'[class*="st-key-{ROOM.pick}"]'
LIST = f'[class*="st-key-{ROOM.token_list}"]'
SEND = f'[class*="st-key-{ROOM.send}"] button'
WHICH_TOKEN = "Which token does a head look at?"  # the teacher's tab
#: a drawn Plotly bar chart's y labels (text, boxes, font size), its title's, whole picture's and plot area's boxes,
#: and its toolbar's buttons
DRAWN = """(chart) => {
  const box = (el) => { const r = el.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  const labels = Array.from(chart.querySelectorAll('.yaxislayer-above .ytick text'));
  return {labels: labels.map((t) => t.textContent), boxes: labels.map(box),
          size: labels.length ? parseFloat(getComputedStyle(labels[0]).fontSize) : 0,
          title: box(chart.querySelector('.gtitle')), svg: box(chart.querySelector('.main-svg')),
          area: box(chart.querySelector('.nsewdrag')), toolbar: chart.querySelectorAll('.modebar-btn').length};
}"""


@pytest.fixture(scope="module")
def room(browser: Browser, tmp_path_factory):
    """A server with a class store of its own, and a class started by a teacher whose page stays open:
    yields (url, code, token, the store, the teacher's page)."""
    if not AXE.exists():
        pytest.fail(f"no axe-core at {AXE}: run scripts/test.sh (npm ci --prefix tests/e2e/axe)")
    data = tmp_path_factory.mktemp("class-access") / "data"
    with running_app("e2e-class-access.log", {"AP_DATA_DIR": str(data)}) as url:
        context = browser.new_context()
        teacher = context.new_page()
        try:
            code, token = start_class(teacher, url, timeout_ms=LOAD_MS)
            yield url, code, token, open_store(None, data), teacher
        finally:
            context.close()


def ask_choice(room) -> object:
    _url, code, token, store, _teacher = room
    return store.push_question(code, token, Ask("choice", "Which vector is compared with the query?", OPTIONS, 0))


OPTIONS = ["the keys", "the values", "the queries"]


def ask_which_token(room) -> object:
    """The teacher's "which token" form as it opens (MiniLM layer 3 head 1, from "it"), asked on the teacher's page
    (the server reads the model); the question the store then holds."""
    _url, code, _token, store, teacher = room
    before = store.current_question(code)
    teacher.get_by_role("tab", name=WHICH_TOKEN).click()
    teacher.locator(f".st-key-{ROOM.ask_predict} button").click()
    deadline = time.monotonic() + LOAD_MS / 1000
    while (question := store.current_question(code)) is None or (before is not None and question.id == before.id):
        assert time.monotonic() < deadline, "the teacher's question never reached the class store"
        teacher.wait_for_timeout(200)
    assert question.kind == "predict" and "animal" in [o.strip() for o in question.options]
    return question


def join(page: Page, url: str, code: str, path: str = "classroom", mode: str = "") -> None:
    """Open ``path`` with the join link (and the mode's parameter) and wait for the question and the page drawn."""
    page.goto(f"{url}/{path}?room={code}{mode}")
    expect(page.get_by_text("a question from your teacher")).to_be_visible(timeout=LOAD_MS)
    expect(page.locator(PICK)).to_be_visible(timeout=LOAD_MS)
    expect_idle(page, LOAD_MS)
    expect_no_exception(page)


def serious_findings(page: Page) -> list[tuple[str, str, list[str]]]:
    """axe-core's serious and critical WCAG 2.1 A/AA violations on the page: (rule, impact, the elements' HTML)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    found = page.evaluate("async (tags) => (await axe.run(document, {runOnly: tags})).violations", WCAG)
    return [
        (v["id"], v["impact"], [n["html"][:120] for n in v["nodes"]])
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("mode", list(MODES))
def test_axe_finds_nothing_serious_on_any_page_a_student_sees(room, browser: Browser, mode: str, artifacts: Path):
    url, code, *_ = room
    question = ask_which_token(room)  # the richest student view: the question, the sentence's tokens and the list
    viewport = PHONE if mode == "compact" else {"width": 1280, "height": 900}
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    try:
        findings = {}
        for path in PAGES:
            join(page, url, code, path, MODES[mode])
            expect(page.locator(LIST).get_by_role("combobox")).to_be_visible(timeout=POLL_MS)
            if path == "":  # Explore's in-browser view of the layer's heads
                expect(page.locator(VIEW)).to_be_visible(timeout=LOAD_MS)
            findings[path or "explore"] = serious_findings(page)
            page.screenshot(path=str(artifacts / f"class-access-{path or 'explore'}-{mode}.png"))
        page.locator(PICK).get_by_text(question.options[1].strip(), exact=True).click()  # an answer sent: its note
        page.locator(SEND).click()
        expect(page.get_by_text("Your answer is in")).to_be_visible(timeout=POLL_MS)
        findings["answered"] = serious_findings(page)
        assert not any(findings.values()), findings
    finally:
        context.close()


def tab_to(page: Page, selector: str, most: int = 150) -> None:
    """Press Tab until the focused element is inside ``selector`` (at most ``most`` presses)."""
    for _ in range(most):
        if page.evaluate("(s) => !!document.activeElement && !!document.activeElement.closest(s)", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{most} presses of Tab never reached {selector}")


def test_a_student_answers_each_kind_of_question_with_the_keyboard_alone(room, browser: Browser):
    url, code, _token, store, _teacher = room
    context = browser.new_context()
    page = context.new_page()
    try:
        choice = ask_choice(room)
        join(page, url, code)
        tab_to(page, PICK)  # the first option has the focus; the arrow key moves to the next and picks it
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Space")
        expect(page.locator(PICK).get_by_role("radio", name=OPTIONS[1])).to_be_checked(timeout=POLL_MS)
        expect(page.locator(SEND)).to_be_enabled(timeout=POLL_MS)
        tab_to(page, SEND)
        page.keyboard.press("Enter")
        expect(page.get_by_text(f"Your answer is in: {OPTIONS[1]}")).to_be_visible(timeout=POLL_MS)
        assert store.distribution(choice) == [0, 1, 0]

        which = ask_which_token(room)
        tokens = [o.strip() for o in which.options]
        expect(page.locator(LIST).get_by_role("combobox")).to_be_visible(timeout=POLL_MS)
        tab_to(page, LIST)
        page.keyboard.type("animal")
        page.keyboard.press("Enter")
        animal = tokens.index("animal")
        radio = page.locator(PICK).get_by_role("radio", name=which.options[animal].strip(), exact=True)
        expect(radio).to_be_checked(timeout=POLL_MS)  # the sentence shows the token the list picked
        expect(page.locator(SEND)).to_be_enabled(timeout=POLL_MS)
        tab_to(page, SEND)
        page.keyboard.press("Enter")
        expect(page.get_by_text("Your answer is in: animal")).to_be_visible(timeout=POLL_MS)
        counts = store.distribution(which)
        assert counts[animal] == 1 and sum(counts) == 1
        expect_no_exception(page)
    finally:
        context.close()


def test_on_a_phone_every_answer_control_is_a_44_px_touch_target(room, browser: Browser):
    url, code, *_ = room
    question = ask_which_token(room)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        join(page, url, code, mode=MODES["compact"])
        rows = page.locator(f"{PICK} label[data-testid='stRadioOption']")
        expect(rows).to_have_count(len(question.options))
        controls = [("the token list", page.locator(f"{LIST} [role='group']").filter(has=page.get_by_role("combobox")))]
        controls += [(f"option {i + 1}", rows.nth(i)) for i in range(len(question.options))]
        page.locator(PICK).get_by_text(question.options[2].strip(), exact=True).tap()  # a tap picks, Send opens
        expect(page.locator(SEND)).to_be_enabled(timeout=POLL_MS)
        controls.append(("Send my answer", page.locator(SEND)))
        small = []
        for name, control in controls:
            control.scroll_into_view_if_needed()
            box = control.bounding_box()
            assert box is not None, name
            if box["height"] < TOUCH_PX or box["width"] < TOUCH_PX:
                small.append((name, round(box["width"]), round(box["height"])))
        assert not small, small
        page.locator(SEND).tap()
        expect(page.get_by_text("Your answer is in")).to_be_visible(timeout=POLL_MS)
    finally:
        context.close()


def test_a_revealed_which_token_question_on_the_projector_labels_every_token_without_a_toolbar(
    room, browser: Browser, artifacts: Path
):
    url, *_ = room
    question = ask_which_token(room)
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    projector = context.new_page()
    try:
        _url, code, token, *_ = room  # the teacher's class in presenter mode on a second screen (its control link)
        projector.goto(f"{url}/classroom?present=1&teacher={code}-{token}")
        projector.get_by_role("button", name="Reveal the answer").click(timeout=LOAD_MS)
        charts = [projector.locator(PLOT).filter(has_text=t) for t in ("The class's answers", "The model: layer 3")]
        for chart in charts:
            expect(chart.locator(".bars .point")).to_have_count(len(question.options), timeout=LOAD_MS)
        expect_idle(projector, LOAD_MS)
        projector.screenshot(path=str(artifacts / "class-access-projector-which-token.png"))
        for chart in charts:
            drawn = chart.evaluate(DRAWN)  # measured in one go: the live view redraws its charts twice a second
            assert drawn["labels"] == [f"{i + 1}. {o}" for i, o in enumerate(question.options)]  # every token
            assert drawn["toolbar"] == 0  # no toolbar over the title
            svg, title, area = drawn["svg"], drawn["title"], drawn["area"]
            assert svg["left"] <= title["left"] and title["right"] <= svg["right"] + 1, (svg, title)  # not clipped
            assert svg["top"] <= title["top"] and title["bottom"] <= area["top"], drawn  # whole, above the bars
            middles = [(box["top"] + box["bottom"]) / 2 for box in drawn["boxes"]]  # in order, a capital apart
            assert all(b - a >= 0.7 * drawn["size"] for a, b in zip(middles, middles[1:])), drawn
        expect_no_exception(projector)
    finally:
        context.close()


def test_the_full_screen_qr_code_opens_from_a_share_box_just_opened(room, browser: Browser):
    """The share box's first run comes before the page writes its link: the button must not wait for another run."""
    url, *_ = room
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        page.goto(f"{url}/?present=1")
        expect(page.locator(VIEW)).to_be_visible(timeout=LOAD_MS)
        expect_idle(page, LOAD_MS)
        page.get_by_test_id("stExpandSidebarButton").click()
        page.get_by_text("Share this view").click()
        expect(page.get_by_test_id("stSidebar").get_by_test_id("stCode")).to_contain_text("http", timeout=POLL_MS)
        button = page.get_by_role("button", name="Show the QR code full screen")
        expect(button).to_be_enabled()
        button.click()
        image = page.get_by_role("dialog").get_by_role("img", name="QR code of the shared link, full screen")
        expect(image).to_be_visible(timeout=POLL_MS)
        expect_no_exception(page)
    finally:
        context.close()
