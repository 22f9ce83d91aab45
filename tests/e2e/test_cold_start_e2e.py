"""A server's first seconds in Chromium: the sentence box takes a sentence before the model has loaded.

The server is started by the README's command (``python -m app``): its child process traces the landing page's
sentence while the server starts, and Explore draws its sentence box before it waits for the model. A teacher who
opens the page at once and types a sentence of their own gets the chart of that sentence, with no error, and the
layer and head pickers and the examples (which need the model) arrive beside it.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception, expect_view, expect_view_row, view_rows  # noqa: E402

pytestmark = pytest.mark.e2e

SENTENCE = "Lily found a red ball. She gave it to Tom."
LOAD_MS = 90_000  # a fresh server: the child's imports, then this process's own for a sentence not prefetched


def test_a_sentence_typed_as_soon_as_the_box_appears_is_the_one_charted(page: Page, fresh_app_url: str):
    page.goto(fresh_app_url)
    box = page.locator('[data-testid="stTextArea"] textarea')
    expect(box).to_be_visible(timeout=30_000)
    expect(box).to_have_value(re.compile("^The animal"))
    box.click()
    box.press("Control+a")
    box.press_sequentially(SENTENCE)
    box.press("Control+Enter")

    expect_view_row(page, r"^\d+ lily$", LOAD_MS)  # the layer's heads, in the browser
    expect_view(page, "Layer 0, head 0", LOAD_MS)
    expect(page.locator(PLOT)).to_have_count(0)  # nothing else drawn: every section starts closed
    expect_idle(page, LOAD_MS)
    texts = view_rows(page)
    assert not any(t.endswith(" animal") for t in texts), texts  # the landing sentence is gone
    expect(box).to_have_value(SENTENCE)
    pickers = page.locator('[data-testid="stSelectbox"]')
    expect(pickers.filter(has_text="Examples")).to_have_count(1)  # drawn once the model had loaded
    expect(pickers.filter(has_text="Layer")).to_have_count(1)
    expect(page.get_by_text("Causal mask", exact=True)).to_be_visible()
    expect_no_exception(page)
