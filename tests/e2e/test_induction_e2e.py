"""Train live's "Induction heads" tab in Chromium: the shipped run at once, then a short live run drawn as yours."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception, section  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 20_000
RUN_MS = 120_000


def test_induction_tab_shows_the_phase_change_and_trains_a_short_run(
    page: Page, app_url: str, artifacts: Path, publish_screenshot
):
    page.goto(f"{app_url}/train")
    expect(page.get_by_role("heading", name="Train live", level=1)).to_be_visible(timeout=FIRST_DRAW_MS)
    section(page, "Induction heads").click()
    first = page.locator(PLOT).first
    expect(first.locator(".gtitle")).to_contain_text("Loss and in-context learning", timeout=FIRST_DRAW_MS)
    expect(page.get_by_text("Phase change at step")).to_be_visible(timeout=REDRAW_MS)
    expect(page.get_by_text(re.compile(r"^After the phase change \(step \d+\): every head"))).to_be_visible(
        timeout=REDRAW_MS
    )
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "train_induction_shipped.png"), full_page=True)
    publish_screenshot(artifacts / "train_induction_shipped.png", "induction.png")
    steps = page.get_by_role("spinbutton", name="Steps")
    steps.fill("60")
    steps.press("Enter")
    expect_idle(page)
    page.get_by_role("button", name="Train it here").click()
    expect(page.get_by_text("Your run", exact=True)).to_be_visible(timeout=RUN_MS)
    expect(page.locator(PLOT).first.locator(".gtitle")).to_contain_text(
        "Loss and in-context learning", timeout=REDRAW_MS
    )
    expect(page.get_by_text(re.compile(r"^At the end \(step 60\): every head"))).to_be_visible(
        timeout=REDRAW_MS
    )  # 60 steps: no phase change yet
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "train_induction_yours.png"), full_page=True)
