"""A shared link opens the page it names, through the entry point, even on a server nobody has visited.

Page files live in ``app/views/``, not ``app/pages/``: with a ``pages/`` folder next to the entry point,
Streamlit's automatic multipage discovery served ``/heads`` as a bare script on a fresh server (no
navigation, no wide layout, no shared state) until someone had opened ``/`` once.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

SENTENCE = "Lily found a red ball. She gave it to Tom."


def test_a_deep_link_on_a_fresh_server_runs_through_the_navigation(page: Page, fresh_app_url: str):
    page.goto(f"{fresh_app_url}/heads?text={SENTENCE.replace(' ', '+')}")
    expect(page.get_by_role("heading", name="Heads", level=1)).to_be_visible(timeout=60_000)
    nav = page.locator('[data-testid="stSidebarNav"]')
    for title in ("Explore", "Step by step", "Positional encodings", "Train live"):
        expect(nav.get_by_text(title, exact=True)).to_be_visible()
    expect(nav.get_by_text(re.compile("streamlit app", re.I))).to_have_count(0)
    expect(page.locator('[data-testid="stTextArea"] textarea').first).to_have_value(SENTENCE, timeout=20_000)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
