"""The Head finder in Chromium, as a student uses it: open the page, pick the induction model, pick a head from the
list, then click the highest point of the scatter (its strongest induction head, 1.2, as its card says), read that
head's snippets from the corpus and open it in Explore."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import PLOT, expect_idle, expect_no_exception, expect_view, pick_model  # noqa: E402

pytestmark = pytest.mark.e2e
FIRST_MS = 90_000
REDRAW_MS = 30_000
TABLE = Path(__file__).resolve().parents[2] / "assets" / "heads" / "induction-2l-attn-only.json"


def test_a_student_finds_the_induction_head_reads_its_snippets_and_opens_it_in_explore(page: Page, app_url: str):
    rows = json.loads(TABLE.read_text(encoding="utf-8"))["heads"]
    best = max(range(len(rows)), key=lambda i: rows[i]["induction"])
    assert (rows[best]["layer"], rows[best]["head"]) == (1, 2)
    page.goto(f"{app_url}/head_finder")
    expect(page.get_by_role("heading", name="Head finder")).to_be_visible(timeout=FIRST_MS)
    expect(page.locator(PLOT).first).to_be_visible(timeout=FIRST_MS)
    pick_model(page, "Induction heads: 2-layer")
    expect(page.get_by_text("Each point is one of the 8 heads")).to_be_visible(timeout=REDRAW_MS)
    expect_idle(page)
    page.get_by_role("combobox", name="Head", exact=True).click()
    page.get_by_role("option", name="Layer 0, head 1", exact=True).click()
    expect(page.get_by_text("Where layer 0, head 1 looks hardest")).to_be_visible(timeout=REDRAW_MS)
    expect_idle(page)

    scatter = page.locator(PLOT).first
    points = scatter.locator(".scatterlayer .trace").first.locator("path.point")
    expect(points).to_have_count(len(rows))
    box = points.nth(best).bounding_box()  # one point per head, in the table's order
    assert box is not None
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(page.get_by_text("Where layer 1, head 2 looks hardest")).to_be_visible(timeout=REDRAW_MS)
    t, q, k, weight = rows[best]["top"][0]
    expect(page.get_by_text(f"Text {t}, weight {weight:.2f} from position {q} to {k}")).to_be_visible()
    expect(page.get_by_text("Layer 1, head 2 on your sentence")).to_be_visible(timeout=REDRAW_MS)
    expect_no_exception(page)

    page.get_by_role("link", name="Open layer 1, head 2 in Explore").click()
    expect(page).to_have_url(re.compile(r"/explore\?.*layer=1.*head=2|/\?.*layer=1.*head=2"), timeout=REDRAW_MS)
    expect_view(page, re.compile(r"^Layer 1, head 2"), timeout_ms=FIRST_MS)  # Explore's view opens on that head
    expect_no_exception(page)
