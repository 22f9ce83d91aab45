"""A Swin on the Vision Transformer page in a real browser: a tiny random Swin folder typed into the model
field (inside the folder the server's admin allowed, ``AP_MODEL_DIRS``), a shifted block picked, and a click
on the window chart that makes the clicked patch the query (AppTest cannot click a Plotly chart)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import click_cell, expect_idle, expect_no_exception, open_in_sidebar, type_model_folder  # noqa: E402
from tests.swin_helpers import save_tiny_swin

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 30_000


def save_model(root: Path) -> Path:
    return save_tiny_swin(root / "tiny-swin", window=2)


def test_type_a_swin_folder_pick_a_shifted_block_and_click_a_patch(page: Page, folder_server, artifacts: Path):
    url, folder = folder_server
    open_in_sidebar(page, url, "Vision Transformer", FIRST_DRAW_MS)
    type_model_folder(page, "Another ViT", folder)
    expect(page.get_by_text("Patch 0 → its window, stage 0, block 0, head 0")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    expect(page.get_by_text("Where [CLS] looks")).to_have_count(0)

    page.get_by_role("combobox", name="Block").click()
    page.get_by_role("option", name="1: windows shifted by 1", exact=True).click()
    expect(page.get_by_text("Patch 0 → its window, stage 0, block 1, head 0")).to_be_visible(timeout=REDRAW_MS)
    expect(page.get_by_text("Shifted windows:")).to_be_visible(timeout=REDRAW_MS)
    expect_idle(page)

    # click the patch in row 2, column 5 of the 8×8 grid (number 21): it becomes the query
    click_cell(page, page.locator('[data-testid="stPlotlyChart"]').filter(has_text="its window"), 2, 5, 8)
    expect(page.get_by_text("Patch 21 → its window, stage 0, block 1, head 0")).to_be_visible(timeout=REDRAW_MS)
    expect(page.get_by_label("Patch (click one in the chart, or type its number)")).to_have_value("21")
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "vit-swin.png"), full_page=True)
