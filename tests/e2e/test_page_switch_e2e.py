"""The shared controls keep their values when the sidebar switches pages (Streamlit's ``persist_state``).

A browser dropped a widget's value when its page was left (the next page showed the token limit at its
minimum and an empty sentence); AppTest does not reproduce that, so this is checked in Chromium: the token
limit, layer and head chosen on Explore are the ones Heads and Step by step open with; and the sidebar's presenter
mode, compact view and download format (drawn by the entry point on every page) chosen on one page hold on the next.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from e2e_helpers import expect_idle, expect_no_exception, expect_view  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 20_000


def pick(page: Page, label: str, option: str, deadline_s: float = 60.0) -> None:
    """Choose ``option`` in a selectbox; a rerun that redraws the box closes an open list, so open it again
    until the choice shows (a deadline, not a sleep)."""
    box = page.get_by_role("combobox", name=label).first
    choice = page.get_by_role("option", name=option, exact=True)
    end = time.monotonic() + deadline_s
    while box.input_value() != option:
        assert time.monotonic() < end, f"could not pick {option} in {label}"
        expect_idle(page)
        box.click()
        try:
            choice.click(timeout=5_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    expect(box).to_have_value(option)


def token_limit(page: Page):
    """The "Token limit" field (its "Advanced" expander opened first)."""
    field = page.get_by_role("spinbutton", name="Token limit").first
    if not field.is_visible():
        page.get_by_text("Advanced", exact=True).first.click()
    return field


def test_shared_controls_follow_the_sidebar_to_other_pages(page: Page, app_url: str):
    page.goto(app_url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    expect_idle(page)
    limit = token_limit(page)
    limit.fill("48")
    limit.press("Enter")
    expect(page).to_have_url(re.compile(r"max_tokens=48"), timeout=REDRAW_MS)
    expect_idle(page)
    pick(page, "Layer", "2")
    page.get_by_role("button", name="Layer 2, head 3").click()  # Explore's view: the server learns it next
    expect_view(page, "Layer 2, head 3")
    expect(page).to_have_url(re.compile(r"head=3"), timeout=REDRAW_MS)
    expect_idle(page)
    for name, path in (("Heads", "heads"), ("Step by step", "step_by_step")):
        page.locator('[data-testid="stSidebarNav"]').get_by_text(name, exact=True).click()
        expect(page.get_by_role("heading", name=name, level=1)).to_be_visible(timeout=REDRAW_MS)
        expect(page).to_have_url(re.compile(rf"/{path}\?.*max_tokens=48"), timeout=REDRAW_MS)
        expect_idle(page)
        expect(token_limit(page)).to_have_value("48", timeout=REDRAW_MS)
        expect(page.get_by_role("combobox", name="Layer").first).to_have_value("2")
        expect(page.get_by_role("combobox", name="Head").first).to_have_value("3")
        expect_no_exception(page)


def test_the_sidebar_look_follows_the_sidebar_to_other_pages(page: Page, app_url: str):
    """Presenter mode, compact view and the chart-download format are drawn by the entry point on every page
    (``theme.init_presenter``, without ``persist_state``): a page switch keeps what was chosen."""
    page.goto(f"{app_url}/positional")
    expect(page.get_by_role("heading", name="Positional encodings", level=1)).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    toggles = sidebar.locator('[data-testid="stCheckbox"]')
    choices = (  # (what shows the choice, what is clicked to make it)
        (sidebar.get_by_role("radio", name="SVG"), sidebar.get_by_role("radio", name="SVG")),
        (sidebar.get_by_role("switch", name="Compact view"), toggles.get_by_text("Compact view", exact=True)),
        (sidebar.get_by_role("switch", name="Presenter mode"), toggles.get_by_text("Presenter mode", exact=True)),
    )
    for choice, control in choices:
        expect(choice).not_to_be_checked()
        control.click()
        expect(choice).to_be_checked(timeout=REDRAW_MS)
        expect_idle(page)
    page.get_by_test_id("stExpandSidebarButton").click()  # presenter mode folds the sidebar away
    sidebar.locator('[data-testid="stSidebarNav"]').get_by_text("Scaling", exact=True).click()
    expect(page.get_by_role("heading", name="Scaling laws, in miniature", level=1)).to_be_visible(timeout=REDRAW_MS)
    expect_idle(page)
    for choice, _ in choices:
        expect(choice).to_be_checked(timeout=REDRAW_MS)
    expect_no_exception(page)
