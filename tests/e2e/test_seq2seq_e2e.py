"""A pretrained encoder-decoder in a real browser: a T5 folder typed into Explore's model field.

Offline, a Hub id cannot be fetched, so the same code runs on a tiny random T5 saved like a download
(``tests/seq2seq_models.py``) inside the folder the server's admin allowed (``AP_MODEL_DIRS``). A
student types the folder, sees the decoded output, switches the attention block to cross-attention
and the map turns into output rows × source columns; Step by step then walks a cross-attention query.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, VIEW, expect_idle, expect_no_exception, expect_view, type_model_folder, type_sentence  # noqa: E402
from tests.seq2seq_models import save_tiny_seq2seq

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 20_000


def save_model(root: Path) -> Path:
    return save_tiny_seq2seq("t5", root / "tiny-t5")


def pick(page: Page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.get_by_role("combobox", name=label)).to_have_value(option)


def test_type_a_t5_folder_and_read_cross_attention(page: Page, folder_server, artifacts: Path):
    url, folder = folder_server
    page.goto(url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    type_sentence(page, "the cat sat on the mat")
    expect_idle(page)
    type_model_folder(page, "Another model", folder)
    expect(page.get_by_text("Output:")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.get_by_role("combobox", name="Attention block")).to_have_value("Encoder self-attention")
    expect_idle(page)
    expect_no_exception(page)
    cells = page.locator(f"{VIEW} canvas.cells")  # one cell a pixel: its width the columns, its height the rows
    n_src, rows = cells.evaluate("c => [c.width, c.height]")
    assert rows == n_src  # the encoder's self-attention: source × source
    pick(page, "Attention block", "Cross-attention")
    expect_idle(page)
    expect(cells).not_to_have_js_property("height", n_src, timeout=REDRAW_MS)
    cols, rows = cells.evaluate("c => [c.width, c.height]")
    assert cols == n_src and rows > 1  # output tokens × source tokens
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "seq2seq_explore.png"), full_page=True)

    page.locator('[data-testid="stSidebarNav"]').get_by_text("Step by step").click()
    expect(page.get_by_role("heading", name="Step by step", level=1)).to_be_visible(timeout=REDRAW_MS)
    expect(page.get_by_role("combobox", name="Attention block")).to_be_visible(timeout=REDRAW_MS)
    pick(page, "Attention block", "Cross-attention")
    expect_idle(page)
    expect(page.locator(PLOT).first.locator(".gtitle")).to_contain_text("looks", timeout=REDRAW_MS)
    expect_no_exception(page)
