"""What every browser test waits for and checks (``from e2e_helpers import ...``)."""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from bench.serve import free_port, healthy  # noqa: F401 — one copy for the benchmarks and the browser tests

__all__ = [
    "ARTIFACTS",
    "GRID",
    "IDLE_MS",
    "PLOT",
    "SLOW_FLUSH",
    "press_while_a_timer_ticks",
    "expect_grid",
    "expect_idle",
    "expect_no_exception",
    "free_port",
    "healthy",
    "log_file",
    "section",
    "section_body",
]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PLOT = '[data-testid="stPlotlyChart"] .js-plotly-plot'  # a Plotly chart that plotly.js has drawn
IDLE_MS = 30_000
GRID = '[data-testid="stImage"] img[alt^="Thumbnails of the"]'  # Explore's grid of heads: one picture

# An init script (``page.add_init_script``): while ``window.__slowFlush`` holds a number of milliseconds, the page's
# zero-delay timeouts wait that long. Streamlit's browser code sends a button's press on such a timeout, so a timed
# fragment (``run_every``) asks for its rerun in between, every time, instead of now and then (app/ui/clicks.py).
SLOW_FLUSH = """(() => {
  const later = window.setTimeout;
  window.__slowFlush = 0;
  window.__slowFlushWaiting = 0;  // zero-delay timeouts held back and not run yet
  window.setTimeout = function (fn, delay, ...rest) {
    if (!window.__slowFlush || delay > 0 || typeof fn !== "function") return later.call(window, fn, delay, ...rest);
    window.__slowFlushWaiting += 1;
    return later.call(window, (...args) => { window.__slowFlushWaiting -= 1; fn(...args); }, window.__slowFlush, ...rest);
  };
})();"""


def log_file(name: str) -> Path:
    """``test-artifacts/NAME`` for a server's output, ``NAME-gw1.log`` in xdist's worker gw1: two workers that start
    the same server (the session's app, a module's classroom) never write into, or read back, each other's log."""
    ARTIFACTS.mkdir(exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return ARTIFACTS / (f"{Path(name).stem}-{worker}{Path(name).suffix}" if worker else name)


def press_while_a_timer_ticks(page: Page, button: Locator, hold_ms: int) -> None:
    """Press ``button`` with the press's message held back ``hold_ms`` (longer than the page's fragment timer), on a
    page that ran :data:`SLOW_FLUSH` before it loaded; once every timeout held back has run (the press's message
    sent), the page's timeouts run on time again."""
    page.evaluate(f"window.__slowFlush = {int(hold_ms)}")
    try:
        button.click()
        page.wait_for_function("window.__slowFlushWaiting === 0", timeout=hold_ms + IDLE_MS)
    finally:
        page.evaluate("window.__slowFlush = 0")


def expect_grid(page: Page, timeout_ms: int = IDLE_MS) -> Locator:
    """Explore's grid of heads shown and loaded (one picture, decoded, wider than it is tall a row); returns it."""
    grid = page.locator(GRID)
    expect(grid).to_have_count(1, timeout=timeout_ms)
    expect(grid).to_have_js_property("complete", True, timeout=timeout_ms)
    assert grid.evaluate("img => img.naturalWidth") > 0, "the grid's picture did not load"
    return grid


def expect_no_exception(page: Page) -> None:
    """No Streamlit exception box anywhere on the page, and no exception caught by the page's guard."""
    from app.ui.guard import MESSAGE

    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    expect(page.get_by_text(MESSAGE)).to_have_count(0)


def expect_idle(page: Page, timeout_ms: int = IDLE_MS) -> None:
    """The rerun is over: no "running" status widget and no spinner."""
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=timeout_ms)
    expect(page.locator('[data-testid="stSpinner"]')).to_have_count(0, timeout=timeout_ms)


def section(page: Page, name: str) -> Locator:
    """The button that opens a page's section ``name`` (``app.controls.pickers.page_tabs``: a row of buttons, one
    pressed, named "Section" for screen readers; each button is a radio, ``aria-checked`` when open)."""
    return page.get_by_role("radiogroup", name="Section").get_by_role("radio", name=name, exact=True)


def section_body(page: Page) -> Locator:
    """Where the open section is drawn: the page's main area (only the open section runs, so nothing of a closed
    one is on the page)."""
    return page.locator('[data-testid="stMain"]')
