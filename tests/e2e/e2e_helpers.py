"""What every browser test waits for and checks (``from e2e_helpers import ...``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from app.views.classroom.browser_cookie import TEACHER_COOKIE
from bench.serve import free_port, healthy  # noqa: F401 — one copy for the benchmarks and the browser tests

__all__ = [
    "ARTIFACTS",
    "GRID",
    "IDLE_MS",
    "PLOT",
    "SLOW_FLUSH",
    "click_cell",
    "press_while_a_timer_ticks",
    "expect_grid",
    "expect_idle",
    "expect_no_exception",
    "free_port",
    "healthy",
    "log_file",
    "open_in_sidebar",
    "pick_model",
    "section",
    "section_body",
    "start_class",
    "type_model_folder",
    "type_sentence",
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


def type_sentence(page: Page, text: str) -> Locator:
    """Type ``text`` into the page's (first) sentence box in place of what it held, and send it (Ctrl+Enter)."""
    box = page.locator('[data-testid="stTextArea"] textarea').first
    box.click()
    box.press("Control+a")
    box.press_sequentially(text)
    box.press("Control+Enter")
    return box


def pick_model(page: Page, name: str) -> None:
    """Pick the first model whose name in the page's "Model" list contains ``name`` (any case)."""
    page.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name=re.compile(re.escape(name), re.I)).first.click()


def open_in_sidebar(page: Page, url: str, name: str, timeout_ms: int = 60_000) -> None:
    """Open the app at ``url`` and wait for its first chart (the first page draws one once torch is imported: a page
    that imports scikit-learn while the background warm-up still imports torch can fail), then open page ``name``
    from the sidebar and wait for its first chart and the end of the rerun."""
    page.goto(url)
    expect(page.locator(PLOT).first).to_be_visible(timeout=timeout_ms)
    expect_idle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_text(name).click()
    expect(page.get_by_role("heading", name=name)).to_be_visible(timeout=timeout_ms)
    expect(page.locator(PLOT).first).to_be_visible(timeout=timeout_ms)
    expect_idle(page)


def type_model_folder(page: Page, choice: str, folder: str) -> None:
    """Open the model choice ``choice`` ("``choice`` (Hugging Face id or folder)") and type ``folder`` in its field."""
    page.get_by_text(re.compile(rf"^{re.escape(choice)} \(")).click()
    field = page.get_by_role("textbox", name=re.compile(r"folder$"))
    field.fill(folder)
    field.press("Enter")


def click_cell(page: Page, chart: Locator, row: int, col: int, side: int) -> None:
    """Click the middle of cell (``row``, ``col``) of a ``side`` × ``side`` grid drawn over ``chart``'s plot area."""
    chart.scroll_into_view_if_needed()
    area = chart.locator(".nsewdrag").first.bounding_box()
    assert area is not None
    page.mouse.click(area["x"] + area["width"] * (col + 0.5) / side, area["y"] + area["height"] * (row + 0.5) / side)


def section(page: Page, name: str) -> Locator:
    """The button that opens a page's section ``name`` (``app.controls.pickers.page_tabs``: a row of buttons, one
    pressed, named "Section" for screen readers; each button is a radio, ``aria-checked`` when open)."""
    return page.get_by_role("radiogroup", name="Section").get_by_role("radio", name=name, exact=True)


def section_body(page: Page) -> Locator:
    """Where the open section is drawn: the page's main area (only the open section runs, so nothing of a closed
    one is on the page)."""
    return page.locator('[data-testid="stMain"]')


def start_class(page: Page, url: str, present: bool = False, timeout_ms: int = 90_000) -> tuple[str, str]:
    """A class started on the Class page (``present``: in presenter mode); its code and the teacher's secret, as the
    browser keeps it in its teacher cookie (``CODE-TOKEN``)."""
    page.goto(f"{url}/classroom" + ("?present=1" if present else ""))
    page.get_by_role("button", name="Start a class").click(timeout=timeout_ms)
    code_box = page.get_by_test_id("stMarkdown").filter(has_text="Class code")
    expect(code_box).to_be_visible(timeout=timeout_ms)
    code = re.search(r"Class code:?\s*([A-Z0-9]{6})", code_box.inner_text()).group(1)
    kept = {c["name"]: c["value"] for c in page.context.cookies()}
    return code, kept[TEACHER_COOKIE].partition("-")[2]
