"""A shared link restores the view in another browser, and a reload keeps the typed sentence.

The teacher's complaint this pins: typing a sentence removed ``text=`` from the URL, so a copied link or
a reload brought back the default sentence, and the causal mask was not carried at all. Layer and head
are changed last on purpose: they live in Explore's fragment, whose reruns run neither the page nor the
entry point, so the link in the share box and the address bar must be written by the fragment itself.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from e2e_helpers import VIEW, expect_idle, expect_no_exception, expect_view, section, type_sentence  # noqa: E402

pytestmark = pytest.mark.e2e

SENTENCE = "Lily found a red ball. She gave it to Tom."
FIRST_DRAW_MS = 60_000
REDRAW_MS = 20_000
TITLE = "Layer 2, head 3 · causal mask on"


def chart_title(page: Page):
    return page.locator(VIEW).get_by_role("heading")


def pick(page: Page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label).first.click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(page.get_by_role("combobox", name=label).first).to_have_value(option)


def share_code(page: Page):
    """The link in the sidebar's "Share this view" box (opened first)."""
    sidebar = page.locator('[data-testid="stSidebar"]')
    code = sidebar.locator('[data-testid="stCode"] code')
    if not code.first.is_visible():
        sidebar.get_by_text("Share this view").click()
    return code.first


def type_the_sentence(page: Page, url: str) -> None:
    """Open Explore at ``url`` and type :data:`SENTENCE`: the address bar then holds it."""
    page.goto(url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    expect_idle(page)
    type_sentence(page, SENTENCE)
    expect(page).to_have_url(re.compile(r"text=Lily\+found"), timeout=REDRAW_MS)


def expect_restored(page: Page) -> None:
    """The sentence, layer 2, head 3 and the causal mask, in the widgets and in the view (its title, its pressed
    head)."""
    expect(page.locator('[data-testid="stTextArea"] textarea').first).to_have_value(SENTENCE, timeout=FIRST_DRAW_MS)
    expect(page.get_by_role("combobox", name="Layer").first).to_have_value("2", timeout=REDRAW_MS)
    expect(page.get_by_role("button", name="Layer 2, head 3")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_role("switch", name="Causal mask")).to_be_checked()
    expect(chart_title(page)).to_have_text(TITLE, timeout=REDRAW_MS)
    expect_no_exception(page)


def test_a_shared_link_restores_the_view_in_a_new_browser(page: Page, app_url: str, browser: Browser, artifacts: Path):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url)
    type_the_sentence(page, app_url)
    page.locator('[data-testid="stCheckbox"]').get_by_text("Causal mask", exact=True).click()
    expect(chart_title(page)).to_contain_text("causal mask on", timeout=REDRAW_MS)
    expect_idle(page)
    pick(page, "Layer", "2")  # a fragment rerun
    expect(chart_title(page)).to_have_text("Layer 2, head 0 · causal mask on", timeout=REDRAW_MS)
    page.get_by_role("button", name="Layer 2, head 3").click()  # in the browser: the server learns it next
    expect(chart_title(page)).to_have_text(TITLE, timeout=REDRAW_MS)
    expect_idle(page)

    code = share_code(page)
    expect(code).to_contain_text("head=3", timeout=REDRAW_MS)  # opening the box told the server the view's head
    link = code.text_content().strip()
    assert link.startswith(app_url + "/?"), link
    for part in ("text=Lily+found+a+red+ball.+She+gave+it+to+Tom.", "layer=2", "head=3", "causal=1"):
        assert part in link, (part, link)
    assert page.url == link, "the address bar and the share box agree"
    expect(page.locator('[data-testid="stSidebar"] img[alt="QR code of the link above"]')).to_be_visible()

    page.frame_locator('iframe[title="Copy link"]').get_by_role("button", name="Copy link of this view").click()
    expect(page.frame_locator('iframe[title="Copy link"]').get_by_text("Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == link
    page.screenshot(path=str(artifacts / "share-link-box.png"))

    other = browser.new_context(viewport={"width": 1280, "height": 1400})  # nothing shared with the first
    try:
        fresh = other.new_page()
        fresh.goto(link)
        expect_restored(fresh)
        fresh.screenshot(path=str(artifacts / "share-link-opened.png"))
    finally:
        other.close()


def test_a_reload_keeps_the_typed_sentence(page: Page, app_url: str):
    type_the_sentence(page, app_url)
    expect_idle(page)
    page.reload()
    expect(page.locator('[data-testid="stTextArea"] textarea').first).to_have_value(SENTENCE, timeout=FIRST_DRAW_MS)
    expect_view(page, timeout_ms=REDRAW_MS)
    expect_no_exception(page)
    # and the sentence follows to another page through the sidebar (whose navigation drops the query string)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Step by step", exact=True).click()
    expect(page.get_by_role("heading", name="Step by step", level=1)).to_be_visible(timeout=REDRAW_MS)
    expect(page.locator('[data-testid="stTextArea"] textarea').first).to_have_value(SENTENCE, timeout=REDRAW_MS)
    expect(page).to_have_url(re.compile(r"/step_by_step\?.*text=Lily\+found"), timeout=REDRAW_MS)


def test_a_link_inside_the_app_opens_the_tab_it_names(page: Page, app_url: str):
    """``st.page_link(..., query_params=...)`` in a running session (Explore → Positional's Learned tab; the
    Lessons page links to views the same way): the new page reads the link's values, then writes its own."""
    page.goto(app_url)
    expect_view(page, timeout_ms=FIRST_DRAW_MS)
    expect_idle(page)
    page.get_by_text("See the positional encodings this model adds to this sentence").click()
    expect(section(page, "Learned")).to_have_attribute("aria-checked", "true", timeout=REDRAW_MS)
    expect(page).to_have_url(re.compile(r"/positional\?pos_tab=learned$"), timeout=REDRAW_MS)
    section(page, "RoPE").click()
    expect(page).to_have_url(re.compile(r"/positional\?pos_tab=rope$"), timeout=REDRAW_MS)
    expect_no_exception(page)


def test_a_locked_link_hides_its_controls(page: Page, app_url: str):
    """A teacher's link with ``hide=``: the model picker and the mask toggle are gone, their values still apply."""
    page.goto(f"{app_url}/?model=tiny-gpt-stories&causal=0&layer=1&hide=model,causal")
    expect(chart_title(page)).to_have_text("Layer 1, head 0", timeout=FIRST_DRAW_MS)  # stories model, mask off
    expect(page.get_by_role("combobox", name="Layer").first).to_have_value("1")
    expect(page.get_by_role("combobox", name="Model")).to_have_count(0)
    expect(page.get_by_role("switch", name="Causal mask")).to_have_count(0)
    expect(page.locator('[data-testid="stCaptionContainer"]').filter(has_text="4 heads")).not_to_have_count(0)
    expect_no_exception(page)
