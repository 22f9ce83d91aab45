"""A pretrained captioner on the Captions page in a real browser: a tiny random ViT + GPT-2 folder typed into the
model field (inside the folder the server's admin allowed, ``AP_MODEL_DIRS``), a head picked, and a click on the
large map that picks a patch (AppTest cannot click a Plotly chart)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import click_cell, expect_idle, expect_no_exception, open_in_sidebar, type_model_folder  # noqa: E402
from tests.caption_hf_helpers import save_tiny_ved

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 30_000


def save_model(root: Path) -> Path:
    return save_tiny_ved(root / "tiny-vit-gpt2")


def test_type_a_captioner_folder_pick_a_head_and_click_a_patch(page: Page, folder_server, artifacts: Path):
    url, folder = folder_server
    open_in_sidebar(page, url, "Captions", FIRST_DRAW_MS)
    type_model_folder(page, "A pretrained captioner", folder)
    expect(page.get_by_text("Decoder layer 1, the mean over its heads")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.get_by_text("Weight on [CLS], not on a patch")).to_be_visible(timeout=REDRAW_MS)
    expect_idle(page)

    page.get_by_role("combobox", name="Head").click()
    page.get_by_role("option", name="head 2", exact=True).click()
    expect(page.get_by_text("Decoder layer 1, head 2")).to_be_visible(timeout=REDRAW_MS)
    expect_idle(page)

    # click the bottom-right patch of the 4×4 grid on the large map (number 15): its numbers are listed
    chart = page.locator('[data-testid="stPlotlyChart"]').filter(has_text="α for word 0")
    expect(chart).to_be_visible(timeout=REDRAW_MS)  # drawn again for the new head (a detached one failed once)
    click_cell(page, chart, 3, 3, 4)
    expect(page.get_by_label("Grid cell (or click one on the map)")).to_have_value("15", timeout=REDRAW_MS)
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "captions-pretrained.png"), full_page=True)
