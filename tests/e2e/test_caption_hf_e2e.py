"""A pretrained captioner on the Captions page in a real browser: a tiny random ViT + GPT-2 folder typed into the
model field (inside the folder the server's admin allowed, ``AP_MODEL_DIRS``), a head picked, and a click on the
large map that picks a patch (AppTest cannot click a Plotly chart)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from conftest import running_app
from e2e_helpers import PLOT, expect_idle, expect_no_exception  # noqa: E402
from tests.caption_hf_helpers import save_tiny_ved

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 30_000


@pytest.fixture(scope="module")
def captioner_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("allowed")
    folder = save_tiny_ved(root / "tiny-vit-gpt2")
    with running_app("e2e-caption-hf-server.log", {"AP_MODEL_DIRS": str(root)}) as url:
        yield url, str(folder)


def test_type_a_captioner_folder_pick_a_head_and_click_a_patch(page: Page, captioner_server, artifacts: Path):
    url, folder = captioner_server
    page.goto(url)
    expect(page.locator(PLOT).first).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Captions").click()
    expect(page.get_by_role("heading", name="Captions")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.locator(PLOT).first).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    page.get_by_text(re.compile(r"^A pretrained captioner \(")).click()  # "(Hugging Face id or folder)"
    field = page.get_by_role("textbox", name=re.compile(r"folder$"))
    field.fill(folder)
    field.press("Enter")
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
    chart.scroll_into_view_if_needed()
    area = chart.locator(".nsewdrag").first.bounding_box()
    assert area is not None
    page.mouse.click(area["x"] + area["width"] * 3.5 / 4, area["y"] + area["height"] * 3.5 / 4)
    expect(page.get_by_label("Grid cell (or click one on the map)")).to_have_value("15", timeout=REDRAW_MS)
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "captions-pretrained.png"), full_page=True)
