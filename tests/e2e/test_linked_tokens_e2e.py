"""Linked tokens in Chromium: click a token's row on Explore's view, its row and column are outlined; Step by step
opens on it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import expect_idle, expect_no_exception, expect_view, view_cell, view_outlined  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 20_000


def test_click_a_token_and_every_map_outlines_it(page: Page, app_url: str, artifacts: Path):
    page.goto(app_url)
    expect_view(page, "Layer 0, head 0", FIRST_DRAW_MS)
    expect_idle(page)
    assert not any(view_outlined(page, row=i) or view_outlined(page, col=i) for i in range(16))
    tip = view_cell(page, 10, 3, click=True)
    assert tip.startswith("10 it → 3 didn: "), tip  # a click on row "10 it"
    page.wait_for_function("() => new URL(location.href).searchParams.get('focus') === '10'", timeout=REDRAW_MS)
    assert view_outlined(page, row=10) and view_outlined(page, col=10)
    assert not view_outlined(page, row=3) and not view_outlined(page, col=3)
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "linked_tokens.png"), full_page=True)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Step by step").click()
    expect(page.get_by_role("heading", name="Step by step", level=1)).to_be_visible(timeout=REDRAW_MS)
    expect(page.get_by_role("combobox", name="Query token")).to_have_value(re.compile(r"^\d+ · it$"), timeout=REDRAW_MS)
