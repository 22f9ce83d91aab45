"""The patching page in Chromium, as a student opens it: both grids drawn with their numbers, the caption naming
the heads that carry the answer, and a bad pair of prompts answered with a message."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_no_exception, type_sentence  # noqa: E402, F401

pytestmark = pytest.mark.e2e
FIRST_MS = 90_000


def test_the_patching_page_draws_both_grids_and_names_the_heads(page: Page, app_url: str):
    page.goto(f"{app_url}/why")
    expect(page.locator(PLOT)).to_have_count(2, timeout=FIRST_MS)
    expect(page.get_by_text("The largest: head 0.3")).to_be_visible()
    expect(page.locator(PLOT).first.locator("text", has_text="0.70")).to_have_count(1)
    expect_no_exception(page)
    box = page.get_by_role("textbox", name="Corrupted prompt", exact=True)
    box.fill("He gave it to")
    box.press("Enter")
    expect(page.get_by_text("same number of tokens")).to_be_visible(timeout=FIRST_MS)
    expect(page.locator(PLOT)).to_have_count(0)
    expect_no_exception(page)
