"""The Vision Transformer page in a real browser: default digit, a real PNG photo upload, a fake PNG.

Waits are on selectors (Playwright ``expect``), never sleeps. The photo is made in the test with
Pillow and uploaded through the real file input (``set_input_files``), so the bytes travel through
Streamlit's upload endpoint to the engine's validation exactly as a user's would.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, click_cell, expect_no_exception  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 30_000
NOT_A_DIGIT = "only learned the hand-written digits"


def expect_settled(page: Page, charts: int = 7) -> None:
    expect(page.locator(PLOT)).to_have_count(charts, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stSpinner"]')).to_have_count(0, timeout=REDRAW_MS)


def open_vit(page: Page, url: str) -> None:
    page.goto(url)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Vision Transformer").click()
    expect(page.get_by_role("heading", name="Vision Transformer")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.locator(PLOT).first).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_settled(page)
    expect_no_exception(page)


def photo_png(tmp_path: Path) -> Path:
    """A real photo-like PNG: a sky gradient, a dark hill, a red sun, noise."""
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:240, 0:320]
    img = np.zeros((240, 320, 3), dtype=np.float64)
    img[..., 0] = 120 + 60 * y / 240
    img[..., 1] = 170 + 40 * y / 240
    img[..., 2] = 255 - 30 * y / 240
    hill = y > 160 + 30 * np.sin(x / 40)
    img[hill] = [40, 90, 30]
    img[np.hypot(y - 60, x - 240) < 25] = [230, 60, 40]
    img += rng.normal(0, 6, img.shape)
    path = tmp_path / "holiday.png"
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(path)
    return path


def test_vit_default_upload_and_bad_file(page: Page, app_url: str, artifacts: Path, publish_screenshot, tmp_path: Path):
    open_vit(page, app_url)
    # default: a digit sample, overlays drawn, no "not a digit" note
    expect(page.get_by_text("[CLS] → patches, layer 0, head 0")).to_be_visible()
    expect(page.locator(".heatmaplayer").first).to_be_attached()
    expect(page.get_by_text(NOT_A_DIGIT)).to_have_count(0)
    shot = artifacts / "vit-default.png"
    page.screenshot(path=str(shot))
    publish_screenshot(shot, "vit.png")

    # click a patch (bottom-right, number 15) in the patch chart: it becomes the query
    click_cell(page, page.locator('[data-testid="stPlotlyChart"]').filter(has_text="Patch 0 → patches"), 3, 3, 4)
    expect(page.get_by_text("Patch 15 → patches, layer 0, head 0")).to_be_visible(timeout=REDRAW_MS)
    expect(page.get_by_label("Patch (click one in the chart, or type its number)")).to_have_value("15")
    expect_settled(page)
    expect_no_exception(page)

    # rollout controls: heads fused by max
    page.get_by_role("heading", name="Attention rollout").scroll_into_view_if_needed()
    page.locator('[data-testid="stRadio"]').filter(has_text="Head fusion").get_by_text("max", exact=True).click()
    expect(page.get_by_text("Rollout, heads fused by max, discard 0.0")).to_be_visible(timeout=REDRAW_MS)
    expect_settled(page)
    expect_no_exception(page)
    page.get_by_text("Occlusion check").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "vit-rollout.png"))

    # upload a real PNG photo
    page.get_by_text("Upload your own").click()
    uploader = page.locator('[data-testid="stFileUploader"] input[type="file"]')
    expect(uploader).to_be_attached(timeout=REDRAW_MS)
    uploader.set_input_files(str(photo_png(tmp_path)))
    expect(page.get_by_text(NOT_A_DIGIT)).to_be_visible(timeout=REDRAW_MS)
    expect_settled(page)
    expect(page.get_by_text("[CLS] → patches, layer 0, head 0")).to_be_visible()
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "vit-upload.png"))

    # a text file renamed .png: the engine's message, no charts, no traceback
    fake = tmp_path / "notes.png"
    fake.write_bytes(b"This is a text file, not a picture.\n" * 20)
    uploader.set_input_files(str(fake))
    error = page.locator('[data-testid="stAlertContentError"]')
    expect(error).to_contain_text("not an image", timeout=REDRAW_MS)
    expect(error).to_contain_text("notes.png")
    expect(page.locator(PLOT)).to_have_count(0, timeout=REDRAW_MS)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "vit-bad-upload.png"))
