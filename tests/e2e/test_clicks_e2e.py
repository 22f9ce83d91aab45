"""A press of a button runs its callback once, on a page whose fragment reruns on a timer (app/ui/clicks.py).

The test page (``tests/e2e/apps/timed_fragment.py``) reruns a fragment every 20 ms and has two buttons that count
their presses: "Plain" with the bare callback, "Once" with it wrapped in ``once``. The press's message is held back
past a few of the timer's ticks (``SLOW_FLUSH``), as a busy browser does now and then; each tick's request carries
the press along.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from conftest import running_app
from e2e_helpers import IDLE_MS, SLOW_FLUSH, press_while_a_timer_ticks

PRESSES = 3
HOLD_MS = 200  # ten ticks of the page's 20 ms timer
RETRIES = 2  # a press Streamlit dropped (no run at all, upstream) is pressed again; a double count still fails


def _counts(page) -> tuple[int, int]:
    text = page.get_by_text(re.compile(r"^counts: ")).inner_text()
    found = re.search(r"plain=(\d+) once=(\d+)", text)
    return int(found.group(1)), int(found.group(2))


TICKS_JS = """n => [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .some(c => /^ticks: \\d+$/.test(c.textContent.trim()) && +c.textContent.trim().slice(7) >= n)"""


def _settled(page) -> None:
    """Three more ticks drawn: the server runs requests in turn, so any run a press asked for has drawn before them."""
    now = int(page.get_by_text(re.compile(r"^ticks: \d+$")).inner_text().split()[1])
    page.wait_for_function(TICKS_JS, arg=now + 3, timeout=IDLE_MS)


def test_a_press_runs_its_callback_once_while_a_fragment_ticks(browser):
    with running_app("e2e-clicks.log", script="tests/e2e/apps/timed_fragment.py") as url:
        page = browser.new_page()
        page.add_init_script(SLOW_FLUSH)
        page.goto(url)
        expect(page.get_by_text("counts: plain=0 once=0")).to_be_visible(timeout=IDLE_MS)
        # the bare callback: each press counted more than once, so the page reproduces Streamlit's double run
        for _ in range(RETRIES + 1):  # a press Streamlit drops (held back this long) is pressed again, as below
            press_while_a_timer_ticks(page, page.get_by_role("button", name="Plain"), HOLD_MS)
            _settled(page)
            if _counts(page)[0]:
                break
        expect(page.get_by_text(re.compile(r"^counts: plain=([2-9]|\d\d+) once=0$"))).to_be_visible(timeout=IDLE_MS)
        # (the bare callback may still count a late repeat of its press: only "Once" is counted from here on)
        for k in range(1, PRESSES + 1):
            for _ in range(RETRIES + 1):  # Streamlit now and then drops a press held back this long: press again
                press_while_a_timer_ticks(page, page.get_by_role("button", name="Once"), HOLD_MS)
                _settled(page)
                once = _counts(page)[1]
                assert once in (k - 1, k), once  # never twice for one press
                if once == k:
                    break
            assert _counts(page)[1] == k, "the press was dropped every time"
        _settled(page)
        assert _counts(page)[1] == PRESSES
        page.close()
