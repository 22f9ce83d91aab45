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
    "IDLE_MS",
    "PLOT",
    "SLOW_FLUSH",
    "VIEW",
    "click_cell",
    "press_while_a_timer_ticks",
    "expect_idle",
    "expect_no_exception",
    "expect_view",
    "expect_view_row",
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
    "view_cell",
    "view_header",
    "view_labelled",
    "view_outlined",
    "view_rows",
]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PLOT = '[data-testid="stPlotlyChart"] .js-plotly-plot'  # a Plotly chart that plotly.js has drawn
IDLE_MS = 30_000
VIEW = ".lv[data-draw-ms]"  # the in-browser layer view (engine/views/layer_view.js), drawn at least once
# (in page scripts) the view's root: Playwright's selectors reach into its shadow root, the page's own do not
FIND_VIEW = """() => [...document.querySelectorAll('[data-testid="stBidiComponentIsolated"]')]
  .map((host) => host.shadowRoot?.querySelector('.lv[data-draw-ms]')).find(Boolean)"""
# each row's name as the view's tooltip says it when the pointer is over that row (a mouse move it is sent)
ROWS = """(root) => {
  const labels = root.querySelector('canvas.labels'), cells = root.querySelector('canvas.cells');
  const box = cells.getBoundingClientRect(), tip = root.querySelector('.tip'), names = [];
  for (let row = 0; row < cells.height; row++) {
    const at = { clientX: box.left + box.width / cells.width / 2,
      clientY: box.top + (row + 0.5) * box.height / cells.height };
    labels.dispatchEvent(new MouseEvent('mousemove', at));
    names.push(tip.textContent.split(' → ')[0]);
  }
  labels.dispatchEvent(new MouseEvent('mouseleave'));
  return names;
}"""
# the map's geometry in the labels canvas's pixels, and whether any pixel of a box of it is drawn (``red``: in the
# red of the highlight's outline)
PIXELS = """(root) => {
  const labels = root.querySelector('canvas.labels'), cells = root.querySelector('canvas.cells');
  const a = labels.getBoundingClientRect(), b = cells.getBoundingClientRect(), s = labels.width / a.width;
  const g = { left: (b.left - a.left) * s, top: (b.top - a.top) * s, w: b.width * s / cells.width,
    h: b.height * s / cells.height, rows: cells.height, cols: cells.width, s };
  const ctx = labels.getContext('2d');
  g.drawn = (x0, y0, x1, y1, red = false) => {
    const [x, y] = [Math.max(0, Math.round(x0)), Math.max(0, Math.round(y0))];
    const px = ctx.getImageData(x, y, Math.max(1, Math.round(x1) - x), Math.max(1, Math.round(y1) - y)).data;
    for (let i = 0; i < px.length; i += 4)
      if (px[i + 3] > 200 && (!red || (px[i] > 170 && px[i + 1] < 90 && px[i + 2] < 90))) return true;
    return false;
  };
  return g;
}"""

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


def expect_view(page: Page, heading: str | re.Pattern | None = None, timeout_ms: int = IDLE_MS) -> Locator:
    """The page's one in-browser layer view drawn, with the title ``heading`` when given (the whole text, e.g.
    "Layer 0, head 5 · causal mask on", or a pattern); returns its root."""
    view = page.locator(VIEW)
    expect(view).to_have_count(1, timeout=timeout_ms)
    if heading is not None:
        expect(view.get_by_role("heading")).to_have_text(heading, timeout=timeout_ms)
    return view


def view_header(page: Page) -> dict:
    """The header of the bytes the view was sent (engine/views/layer_view.py: its labels, font, colours, ...)."""
    return page.locator(VIEW).evaluate("""(root) => { const bytes = root.parentNode.__layerViewData;
      const size = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
      return JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + size))); }""")


def view_rows(page: Page) -> list[str]:
    """The name of every row of the view's map, as its tooltip shows it (``"2 animal"``)."""
    return page.locator(VIEW).evaluate(ROWS)


def expect_view_row(page: Page, pattern: str, timeout_ms: int = IDLE_MS) -> None:
    """Wait until a row of the view's map is named to match the regular expression ``pattern`` (a new sentence's
    view drawn)."""
    named = f"({ROWS})(root).some((n) => new RegExp(pattern).test(n))"
    script = f"(pattern) => {{ const root = ({FIND_VIEW})(); return Boolean(root) && {named}; }}"
    page.wait_for_function(script, arg=pattern, timeout=timeout_ms)


def view_labelled(page: Page) -> tuple[list[bool], list[bool]]:
    """Which rows of the view's map have a name drawn left of them, and which columns one drawn just above them."""
    script = f"""(root) => {{ const g = ({PIXELS})(root);
      const rows = [...Array(g.rows).keys()].map((i) =>
        g.drawn(0, g.top + i * g.h + 1, g.left - 2, g.top + (i + 1) * g.h - 1));
      const cols = [...Array(g.cols).keys()].map((j) =>
        g.drawn(g.left + (j + 0.3) * g.w, g.top - 10 * g.s, g.left + (j + 0.7) * g.w, g.top - 2 * g.s));
      return [rows, cols]; }}"""
    rows, cols = page.locator(VIEW).evaluate(script)
    return rows, cols


def view_outlined(page: Page, row: int | None = None, col: int | None = None) -> bool:
    """Whether the view's map outlines ``row`` (a red line along its top edge) or ``col`` (along its left edge): the
    highlighted token's row and column."""
    script = """(root, [row, col]) => { const g = (PIXELS)(root);
      const [x, y] = row !== null ? [g.left + g.cols * g.w / 2, g.top + row * g.h]
        : [g.left + col * g.w, g.top + g.rows * g.h / 2];
      return g.drawn(x - 2, y - 2, x + 3, y + 3, true); }"""
    return page.locator(VIEW).evaluate(script.replace("(PIXELS)", f"({PIXELS})"), [row, col])


def view_cell(page: Page, row: int, col: int, click: bool = False) -> str:
    """Move the mouse to the middle of cell (``row``, ``col``) of the view's map (and click it); returns what the
    view's tooltip then says ("query → key: weight")."""
    cells = page.locator(f"{VIEW} canvas.cells")
    cells.scroll_into_view_if_needed()
    box = cells.bounding_box()
    cols, rows = cells.evaluate("c => [c.width, c.height]")  # one cell a pixel of the canvas
    x, y = box["x"] + (col + 0.5) * box["width"] / cols, box["y"] + (row + 0.5) * box["height"] / rows
    page.mouse.move(x, y)
    if click:
        page.mouse.click(x, y)
    return page.locator(f"{VIEW} .tip").text_content() or ""


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
    """Open the app at ``url`` and wait for Explore's view (the first page draws it once torch is imported: a page
    that imports scikit-learn while the background warm-up still imports torch can fail), then open page ``name``
    from the sidebar and wait for its first chart and the end of the rerun."""
    page.goto(url)
    expect_view(page, timeout_ms=timeout_ms)
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
