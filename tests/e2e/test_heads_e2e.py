"""The Heads page in a real browser: the model view (every layer × head, drawn in the browser) and a metrics map,
another head picked in the grid with no message to the server, its exact CSV once the server has it.

Waits are on selectors or conditions (Playwright ``expect`` with timeouts), never sleeps.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from playwright.sync_api import Page, expect

import engine
from app.state import DEFAULT_TEXT
from e2e_helpers import expect_idle, expect_no_exception, section  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 60_000
REDRAW_MS = 30_000
LARGE_TITLE = '[data-testid="stPlotlyChart"] .gtitle'
HEAD = re.compile(r"^Layer \d+, head \d+$")


def heading(page: Page, name: str):
    return page.locator(".lv h3").filter(has_text=re.compile(f"^{re.escape(name)}$"))


def open_heads(page: Page, url: str) -> list:
    """Explore first (the model is warm when Heads opens; deep links: test_deep_links_e2e.py), then Heads; returns
    the list that collects every websocket frame the page sends from then on."""
    sent: list = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
    page.goto(url)
    expect(page.locator(".lv h3")).to_be_visible(timeout=FIRST_DRAW_MS)  # Explore drew
    page.goto(f"{url}/heads")
    expect(page.get_by_role("heading", name="Heads")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(heading(page, "Layer 0, head 0")).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    expect_no_exception(page)
    return sent


def params(page: Page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def test_heads_model_view_metrics_and_picking(page: Page, app_url: str, artifacts: Path, publish_screenshot):
    sent = open_heads(page, app_url)
    expect(page.get_by_text("the text is empty")).to_have_count(0)
    grid = page.get_by_role("toolbar", name="Heads")
    # MiniLM: 6 layers × 12 heads, a row a layer; no layer bar (the grid picks the layer too)
    expect(grid.get_by_role("button", name=HEAD)).to_have_count(72)
    assert grid.locator(":scope > div > span:first-child").all_text_contents() == [""] + [f"L{i}" for i in range(6)]
    expect(page.get_by_role("toolbar", name="Layers")).to_have_count(0)
    expect(grid.get_by_role("button", name="Layer 0, head 0")).to_have_attribute("aria-pressed", "true")

    png = artifacts / "heads-model-view.png"
    page.screenshot(path=str(png))
    publish_screenshot(png, "heads.png")

    # pick another head with the selectboxes: the server's run opens it
    page.get_by_role("combobox", name="Head").first.click()
    page.get_by_role("option", name="7", exact=True).click()
    expect(heading(page, "Layer 0, head 7")).to_be_visible(timeout=REDRAW_MS)
    expect_idle(page)

    # a head of another layer in the grid: opened at once, the URL follows, nothing sent to the server
    before = len(sent)
    grid.get_by_role("button", name="Layer 2, head 3").click()
    expect(heading(page, "Layer 2, head 3")).to_be_visible()
    expect(grid.get_by_role("button", name="Layer 2, head 3")).to_have_attribute("aria-pressed", "true")
    page.wait_for_function("() => new URL(location.href).searchParams.get('layer') === '2'")
    assert params(page)["head"] == "3"
    page.get_by_label(re.compile("^Attention map: arrow keys")).press("PageDown")  # the next layer
    expect(heading(page, "Layer 3, head 3")).to_be_visible()
    page.get_by_label(re.compile("^Attention map: arrow keys")).press("PageUp")
    expect(heading(page, "Layer 2, head 3")).to_be_visible()
    assert len(sent) == before, "picking a head in the grid sent a message to the server"

    # the exact CSV below is the server's: the click waits until it has the view's head
    with page.expect_download(timeout=REDRAW_MS) as download:
        page.locator(".st-key-heads_csv button").click()
    assert download.value.suggested_filename == "heads_L2_H3.csv"
    rows = list(csv.reader(open(download.value.path(), encoding="utf-8")))[1:]
    want = engine.trace(engine.load("minilm"), DEFAULT_TEXT, max_tokens=128).pattern(2, 3)  # the engine's own
    np.testing.assert_allclose(np.array([row[1:] for row in rows], dtype=float), want, atol=5e-4)
    expect_idle(page)
    expect_no_exception(page)

    # the metrics tab: a layer × head heatmap and the table
    section(page, "Per-head metrics").click()
    expect(page.locator(LARGE_TITLE).filter(has_text="entropy (nats)")).to_have_count(1, timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stDataFrame"]')).to_have_count(1, timeout=REDRAW_MS)
    heat = page.locator('[data-testid="stPlotlyChart"]').filter(has_text="entropy (nats)")
    expect(heat.locator(".heatmaplayer, .hm image, image")).not_to_have_count(0)
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "heads-metrics.png"))


def test_ablation_tab_switches_a_head_off(page: Page, app_url: str, artifacts: Path):
    """Open the Ablation tab, switch two MiniLM heads off: the cosine similarity drops below 1."""
    open_heads(page, app_url)
    section(page, "Ablation").click()
    cosine = (
        page.locator('[data-testid="stMetric"]')
        .filter(has_text="Cosine similarity")
        .locator('[data-testid="stMetricValue"]')
    )
    expect(cosine).to_have_text("1.0000", timeout=REDRAW_MS)  # nothing switched off yet
    picker = page.get_by_role("combobox", name=re.compile("Heads to switch off"))
    for label in ("L0 H0", "L2 H5"):  # typed to filter the list, then the exact option chosen
        picker.click()
        picker.press_sequentially(label)
        page.get_by_role("option", name=label, exact=True).click(timeout=REDRAW_MS)
        expect_idle(page)
    page.keyboard.press("Escape")
    expect(cosine).not_to_have_text("1.0000", timeout=REDRAW_MS)
    expect(page.get_by_text("2 of 72 heads switched off")).to_be_visible()  # exactly the two chosen
    value = float(cosine.text_content())
    assert 0.0 < value < 1.0, value
    expect_idle(page)
    expect_no_exception(page)
    page.screenshot(path=str(artifacts / "heads-ablation.png"))
