"""The layer view in a notebook: a real kernel (nbclient + ipykernel) runs ``engine.views.show(trace)`` and the
trace's own display; the output, saved as a page of its own, is drawn offline in Chromium (every request that
is not the page itself is refused and counted) and hovers the weights the engine computes in this process."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import Page, expect

import engine

pytestmark = pytest.mark.e2e
TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> list[str]:
    """The HTML of the notebook's two displays: ``show(trace, layer=2, head=3)``, then the trace itself."""
    cells = [
        "import engine, engine.views",
        f"trace = engine.trace(engine.load('minilm'), {TEXT!r})",
        "engine.views.show(trace, layer=2, head=3)",
        "trace",
    ]
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(book, timeout=300, kernel_name="python3").execute()
    return [book.cells[i].outputs[0]["data"]["text/html"] for i in (2, 3)]


def open_output(page: Page, html: str, folder) -> list[str]:
    """The output as a file:// page; returns the list of refused requests (must stay empty: nothing fetched)."""
    path = folder / "out.html"
    path.write_text(f"<!doctype html><meta charset='utf-8'><body>{html}</body>", encoding="utf-8")
    refused: list[str] = []

    def refuse(route):
        refused.append(route.request.url)
        route.abort()

    page.route("http*://**", refuse)
    page.goto(path.as_uri())
    return refused


def test_show_draws_every_layer_offline_with_the_engines_weights(page: Page, outputs, tmp_path):
    refused = open_output(page, outputs[0], tmp_path)
    expect(page.get_by_role("heading", name="Layer 2, head 3")).to_be_visible()
    page.get_by_role("button", name="Layer 4", exact=True).click()
    page.get_by_role("button", name="Layer 4, head 7").click()
    expect(page.get_by_role("heading", name="Layer 4, head 7")).to_be_visible()
    trace = engine.trace(engine.load("minilm"), TEXT)
    weights, labels = trace.pattern(4, 7), trace.tokens.labels()
    box = page.locator(".lv canvas.cells").bounding_box()
    side = box["width"] / len(labels)
    for row, col in ((3, 0), (5, len(labels) - 1)):
        page.mouse.move(box["x"] + (col + 0.5) * side, box["y"] + (row + 0.5) * side)
        expect(page.locator(".lv .tip")).to_have_text(f"{labels[row]} → {labels[col]}: {weights[row, col]:.3f}")
    assert refused == [] and page.url.startswith("file://")


def test_a_trace_displays_itself_as_the_view(page: Page, outputs, tmp_path):
    open_output(page, outputs[1], tmp_path)
    expect(page.get_by_role("heading", name="Layer 0, head 0")).to_be_visible()
    expect(page.get_by_role("button", name=r"Layer 5")).to_be_visible()
