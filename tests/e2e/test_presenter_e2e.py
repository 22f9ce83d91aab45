"""Classroom mode in a real browser: what a projector shows, and what a teacher can take away.

Measured, not assumed: the font size Explore's view draws its names in and the contrast of their colour
against the page (WCAG 2 formula), at 1920×1080 with ``?present=1`` and in the normal view;
bertviz's model view fitting its frame at a 1280 px window; a chart's SVG download parsed as XML;
the JSON download parsed and compared with what the view prints over each cell.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Browser, Frame, Page, expect

from e2e_helpers import (  # noqa: E402
    PLOT,
    VIEW,
    expect_idle,
    expect_no_exception,
    expect_view,
    section_body,
    view_header,
    view_rows,
)

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 90_000  # fresh server: torch import + MiniLM load + plotly.js
REDRAW_MS = 30_000

# the view's tooltip over every cell of its map, row by row (a mouse move it is sent over each)
TIPS = """(root) => {
  const labels = root.querySelector('canvas.labels'), cells = root.querySelector('canvas.cells');
  const box = cells.getBoundingClientRect(), tip = root.querySelector('.tip'), w = box.width / cells.width;
  const h = box.height / cells.height;
  return [...Array(cells.height).keys()].map((i) => [...Array(cells.width).keys()].map((j) => {
    labels.dispatchEvent(new MouseEvent('mousemove', { clientX: box.left + (j + 0.5) * w, clientY: box.top + (i + 0.5) * h }));
    return tip.textContent;
  }));
}"""
# what each test measured, written to test-artifacts/presenter-measurements.json for the report
MEASURED: dict[str, dict] = {}


def luminance(rgb: tuple[float, float, float]) -> float:
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def parse_rgb(css: str) -> tuple[float, float, float]:
    if re.fullmatch(r"#[0-9a-fA-F]{6}", css):
        return int(css[1:3], 16), int(css[3:5], 16), int(css[5:7], 16)
    values = [float(v) for v in re.findall(r"[\d.]+", css)[:3]]
    assert len(values) == 3, css
    return values[0], values[1], values[2]


def contrast(fg: str, bg: str) -> float:
    hi, lo = sorted((luminance(parse_rgb(fg)), luminance(parse_rgb(bg))), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def tick_style(page: Page) -> dict:
    """The font size and colour Explore's view draws its names in (its header), the page's colour behind it, and
    its rows' names (as its tooltip shows them)."""
    expect_view(page, timeout_ms=REDRAW_MS)
    header = view_header(page)
    paper = page.locator('[data-testid="stApp"]').evaluate("el => getComputedStyle(el).backgroundColor")
    style = {"size": header["font_px"], "fill": header["text_color"], "paper": paper}
    return {**style, "ticks": view_rows(page)}


def measure(page: Page, view: str) -> dict:
    """:func:`tick_style` with the ticks' ``contrast`` against the paper; kept in ``MEASURED[view]`` for the report."""
    style = tick_style(page)
    style["contrast"] = contrast(style["fill"], style["paper"])
    MEASURED[view] = {"tick_px": style["size"], "fill": style["fill"], "paper": style["paper"]}
    MEASURED[view]["contrast"] = round(style["contrast"], 2)
    return style


def open_explore(page: Page, url: str) -> None:
    page.goto(url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    expect_idle(page)
    expect_no_exception(page)


def test_presenter_mode_at_1920(browser: Browser, app_url: str, artifacts: Path):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    try:
        open_explore(page, app_url + "/?present=1")
        page.screenshot(path=str(artifacts / "presenter-explore-1920.png"))
        style = measure(page, "presenter")
        assert style["size"] >= 16, style
        assert style["contrast"] >= 4.5, style
        # the sidebar starts folded away and the page's controls sit in a closed expander
        sidebar = page.locator('[data-testid="stSidebar"]')
        box = sidebar.bounding_box() if sidebar.count() else None
        assert box is None or box["x"] + box["width"] <= 1, box  # folded off the screen
        expect(page.get_by_text("Sentence, model and mask")).to_be_visible()
    finally:
        context.close()
        (artifacts / "presenter-measurements.json").write_text(json.dumps(MEASURED, indent=1))


def test_normal_view_ticks_contrast_svg_and_json(page: Page, app_url: str, artifacts: Path):
    open_explore(page, app_url)
    style = measure(page, "normal")
    (artifacts / "presenter-measurements.json").write_text(json.dumps(MEASURED, indent=1))
    assert style["contrast"] >= 4.5, style

    # SVG: pick it in the sidebar, then the view's own download button
    page.locator('[data-testid="stSidebar"]').get_by_role("radio", name="SVG").click()
    expect_idle(page)
    button = page.locator(VIEW).get_by_role("button", name="Download SVG")
    expect(button).to_have_count(1, timeout=REDRAW_MS)
    with page.expect_download(timeout=REDRAW_MS) as info:
        button.click()
    svg_path = artifacts / "presenter-chart.svg"
    info.value.save_as(svg_path)
    assert info.value.suggested_filename == "attention_L0_H0.svg", info.value.suggested_filename
    root = ET.parse(svg_path).getroot()
    assert root.tag.endswith("svg")
    assert any("animal" in (el.text or "") for el in root.iter()), "the tick labels are in the SVG"

    # JSON: the numbers behind the head on screen
    with page.expect_download(timeout=REDRAW_MS) as info:
        page.get_by_role("button", name="Download the numbers as JSON").click()
    json_path = artifacts / "presenter-view.json"
    info.value.save_as(json_path)
    data = json.loads(json_path.read_text(encoding="utf-8"))
    labels = [f"{i} {t}" for i, t in enumerate(data["tokens"]["query"])]
    shown = [t.strip() for t in style["ticks"]]
    assert shown and all(t in labels for t in shown), (shown, labels)
    tips = page.locator(VIEW).evaluate(TIPS)  # what the view prints over each cell: 3 decimals, or ≈ a tiny one
    pattern = np.array(data["pattern"], dtype=float)
    assert np.array(tips).shape == pattern.shape
    for row, printed in zip(pattern, tips):
        for weight, tip in zip(row, printed):
            value = tip.rsplit(": ", 1)[1]
            if value.startswith("≈"):
                assert weight < 0.0005 and abs(float(value[1:]) - weight) <= 0.05 * weight, (tip, weight)
            else:
                assert value == f"{weight:.3f}", (tip, weight)
    np.testing.assert_allclose(pattern.sum(axis=1), 1.0, atol=1e-4)
    assert data["model_id"] == "minilm" and data["link"].startswith("http")
    expect_no_exception(page)


def fitted_view(page: Page, view: str, title: str) -> Frame:
    """Pick bertviz's ``view``; its frame (titled ``title``) once the drawing was fitted to it."""
    page.locator('[data-testid="stRadio"]').get_by_text(view, exact=True).click()
    frame_el = page.locator(f'iframe[title="{title}"]')
    expect(frame_el).to_be_visible(timeout=REDRAW_MS)
    frame = frame_el.element_handle().content_frame()
    frame.wait_for_selector("#vis > svg[data-fitted]", timeout=REDRAW_MS)
    return frame


def test_bertviz_model_view_shows_every_head_at_1280(page: Page, app_url: str, artifacts: Path):
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(app_url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("bertviz views", exact=True).click()
    fit = fitted_view(page, "Model view", "bertviz model view").evaluate("""() => {
        const svg = document.querySelector('#vis > svg');
        const width = document.documentElement.clientWidth;
        const heads = Array.from(svg.querySelectorAll('text'))
            .filter(t => /^\\d+$/.test(t.textContent) && t.getAttribute('y') === '20');
        return {width, svg_right: svg.getBoundingClientRect().right, heads: heads.length,
                visible: heads.filter(t => t.getBoundingClientRect().right <= width).length};
    }""")
    MEASURED["bertviz_model_1280"] = fit
    (artifacts / "presenter-measurements.json").write_text(json.dumps(MEASURED, indent=1))
    page.screenshot(path=str(artifacts / "presenter-bertviz-model-1280.png"))
    assert fit["heads"] == 12 and fit["visible"] == 12, fit  # MiniLM: 12 heads a layer
    assert fit["svg_right"] <= fit["width"] + 1, fit

    # the neuron view: its drawing, including the panel that opens with "+", fits the frame
    frame = fitted_view(page, "Neuron view (queries · keys)", "bertviz neuron view")
    neuron = frame.evaluate("""() => {
        const svg = document.querySelector('#vis > svg');
        return {width: document.documentElement.clientWidth, svg_right: svg.getBoundingClientRect().right,
                drawing_width: svg.viewBox.baseVal.width,
                scroll_width: document.documentElement.scrollWidth};
    }""")
    MEASURED["bertviz_neuron_1280"] = neuron
    (artifacts / "presenter-measurements.json").write_text(json.dumps(MEASURED, indent=1))
    page.screenshot(path=str(artifacts / "presenter-bertviz-neuron-1280.png"))
    assert neuron["drawing_width"] > 900, neuron  # the opened panel (q, k, q×k, q·k) is part of the drawing
    assert neuron["svg_right"] <= neuron["width"] + 1 and neuron["scroll_width"] <= neuron["width"] + 1, neuron
    expect_no_exception(page)


def test_order_blindness_maps_are_wide_and_their_labels_apart(page: Page, app_url: str, artifacts: Path):
    page.set_viewport_size({"width": 1280, "height": 1400})
    page.goto(app_url + "/positional?pos_tab=Order+blindness")
    charts = section_body(page).locator(PLOT)
    expect(charts).to_have_count(3, timeout=FIRST_DRAW_MS)
    expect_idle(page)
    layout = []
    for i in range(3):
        layout.append(
            charts.nth(i).evaluate("""(gd) => {
            const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
            // labels are rotated −60°: two neighbours are apart when their anchors are at least a line
            // (the font size) / sin 60° apart across the plot
            const ticks = Array.from(gd.querySelectorAll('.xtick text'));
            const font = ticks.length ? parseFloat(getComputedStyle(ticks[0]).fontSize) : 0;
            const xs = ticks.map(t => { const r = t.getBoundingClientRect(); return r.left + r.width / 2; })
                .sort((a, b) => a - b);
            let gap = Infinity;
            for (let j = 1; j < xs.length; j++) gap = Math.min(gap, xs[j] - xs[j - 1]);
            return {plot_width: plot.width, labels: xs.length, font_px: font, min_gap_px: gap,
                    needed_px: font / Math.sin(Math.PI / 3)};
        }""")
        )
    MEASURED["order_blindness_1280"] = layout
    (artifacts / "presenter-measurements.json").write_text(json.dumps(MEASURED, indent=1))
    page.screenshot(path=str(artifacts / "presenter-order-blindness-1280.png"))
    assert all(m["plot_width"] >= 200 and m["labels"] >= 4 for m in layout), layout
    assert all(m["min_gap_px"] >= m["needed_px"] for m in layout), layout  # no label on top of another
    expect_no_exception(page)


def test_vit_overlays_hide_the_picture_under_the_colour(page: Page, app_url: str, artifacts: Path):
    page.goto(app_url + "/vit")
    expect(page.locator(PLOT).nth(2)).to_be_visible(timeout=FIRST_DRAW_MS)
    expect_idle(page)
    opacities = [
        o
        for i in range(page.locator(PLOT).count())
        for o in page.locator(PLOT)
        .nth(i)
        .evaluate("(gd) => gd.data.filter(t => t.name === 'attention').map(t => t.opacity)")
    ]
    MEASURED["vit_overlay_opacity"] = opacities
    (artifacts / "presenter-measurements.json").write_text(json.dumps(MEASURED, indent=1))
    page.screenshot(path=str(artifacts / "presenter-vit.png"))
    assert opacities and min(opacities) >= 0.85, opacities  # at 0.6 white strokes read as attention
    expect_no_exception(page)
