"""User text is shown literally: markdown, HTML and script payloads through every text input, in Chromium.

A student types (or names a file) ``[click](http://evil.example/x) ![pic](…) <img src=…> <script>…``
into each page's text fields. Wherever the app quotes it (messages, captions, notices, chart labels)
the page must show the characters as typed, create no link, image or script element from them, and
make no request to the payload's host (every request leaving 127.0.0.1 is recorded and aborted).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import expect_idle, expect_no_exception, expect_view, pick_model, section, view_rows

pytestmark = [pytest.mark.e2e, pytest.mark.reliability]

LINK = "[click](http://evil.example/x)"
PAYLOAD = (
    f"{LINK} ![pic](http://evil.example/p.png) <img src=http://evil.example/q.png> "
    "<script>alert(1)</script> **bold** $x^2$ www.evil.example"
)
FIRST_MS = 60_000
REDRAW_MS = 30_000


@pytest.fixture
def guarded(page: Page):
    """The page, with every request that would leave the machine recorded and aborted."""
    outside: list[str] = []

    def route(r):
        host = re.match(r"^[a-z]+://([^/:]+)", r.request.url)
        if host and host.group(1) not in ("127.0.0.1", "localhost"):
            outside.append(r.request.url)
            return r.abort()
        return r.continue_()

    page.context.route("**/*", route)
    yield page, outside


def assert_inert(page: Page, outside: list[str]) -> None:
    """No element and no request came out of the payload, and no traceback."""
    expect_idle(page)
    expect_no_exception(page)
    assert page.locator('a[href*="evil.example"]').count() == 0, "a link was made from user text"
    assert page.locator('img[src*="evil.example"]').count() == 0, "an image was made from user text"
    assert page.locator("script", has_text="alert(1)").count() == 0
    assert page.locator("b", has_text=re.compile("^bold$")).count() == 0, "**bold** was rendered as bold"
    # KaTeX keeps the source of what it rendered in an annotation
    assert page.locator(".katex annotation", has_text=re.compile(r"^x\^2$")).count() == 0, "$x^2$ became maths"
    assert not outside, f"requests left the machine: {outside}"


def open_page(page: Page, url: str, path: str = "") -> None:
    page.goto(f"{url}/{path}")
    expect(page.locator('[data-testid="stAppViewContainer"]')).to_be_visible(timeout=FIRST_MS)
    expect_idle(page, FIRST_MS)


def test_model_field_quotes_the_id_literally(guarded, app_url: str, artifacts: Path):
    page, outside = guarded
    open_page(page, app_url)
    expect_view(page, timeout_ms=FIRST_MS)
    page.get_by_text(re.compile(r"^Another model \(")).click()  # what it accepts follows the server's policy
    field = page.get_by_role("textbox", name="Hugging Face id")
    field.fill(PAYLOAD)
    field.press("Enter")
    error = page.locator('[data-testid="stAlertContentError"]')
    expect(error).to_contain_text(LINK, timeout=REDRAW_MS)  # as typed, cut to ~80 characters
    assert len(error.inner_text()) < 400
    assert_inert(page, outside)
    page.screenshot(path=str(artifacts / "user-text-model-field.png"))


def test_explore_sentence_with_a_closed_vocabulary_model(guarded, app_url: str, artifacts: Path):
    """tiny-gpt-stories names the unknown words of the sentence in a notice: they are the payload's."""
    page, outside = guarded
    open_page(page, app_url)
    expect_view(page, timeout_ms=FIRST_MS)
    pick_model(page, "GPT trained on stories")
    box = page.locator('[data-testid="stTextArea"] textarea')
    box.fill(PAYLOAD)
    box.press("Control+Enter")
    expect(page.locator('[data-testid="stAlertContentInfo"]').filter(has_text="evil")).not_to_have_count(
        0, timeout=REDRAW_MS
    )
    view = expect_view(page, timeout_ms=REDRAW_MS)
    rows = " ".join(view_rows(page))  # the view's names are drawn and hovered as text: no markup made from them
    assert "<script" not in view.inner_html() or "&lt;" in rows
    assert view.locator("script, img, a").count() == 0, "an element was made from user text"
    assert_inert(page, outside)
    page.screenshot(path=str(artifacts / "user-text-explore.png"))


def test_bahdanau_sentence_is_quoted_literally(guarded, app_url: str, artifacts: Path):
    page, outside = guarded
    open_page(page, app_url, "bahdanau")
    field = page.get_by_role("textbox", name="English sentence or a date")
    expect(field).to_be_visible(timeout=FIRST_MS)
    field.fill(PAYLOAD)
    field.press("Enter")
    expect(page.get_by_text("No reference translation", exact=False)).to_be_visible(timeout=REDRAW_MS)
    assert_inert(page, outside)
    page.screenshot(path=str(artifacts / "user-text-bahdanau.png"))


@pytest.mark.parametrize(
    "path, tab, label",
    [("heads", "Compare", "Sentence A"), ("positional", "Order blindness", "Sentence (story words work best)")],
)
def test_heads_compare_and_positional_sentences(guarded, app_url: str, path: str, tab: str, label: str):
    page, outside = guarded
    open_page(page, app_url, path)
    section(page, tab).click()
    field = page.get_by_label(label)
    expect(field).to_be_visible(timeout=REDRAW_MS)
    field.fill(PAYLOAD)
    field.press("Enter")
    expect_idle(page)
    assert_inert(page, outside)


def test_an_uploaded_file_name_is_quoted_literally(guarded, app_url: str, artifacts: Path):
    page, outside = guarded
    open_page(page, app_url, "vit")
    page.get_by_text("Upload your own").click()
    uploader = page.locator('[data-testid="stFileUploader"] input[type="file"]')
    expect(uploader).to_be_attached(timeout=REDRAW_MS)
    name = "[click](http=evil.example) ![pic](http=evil.example) $x$ **b**.png"
    uploader.set_input_files(files=[{"name": name, "mimeType": "image/png", "buffer": b"not an image at all\n" * 8}])
    error = page.locator('[data-testid="stAlertContentError"]')
    expect(error).to_contain_text("[click](http=evil.example)", timeout=REDRAW_MS)
    expect(error).to_contain_text("not an image")
    assert_inert(page, outside)
    page.screenshot(path=str(artifacts / "user-text-upload.png"))
