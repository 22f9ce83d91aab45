"""What every browser test waits for and checks (``from e2e_helpers import ...``)."""

from __future__ import annotations

import socket
import urllib.request

from playwright.sync_api import Page, expect

PLOT = '[data-testid="stPlotlyChart"] .js-plotly-plot'  # a Plotly chart that plotly.js has drawn
IDLE_MS = 30_000


def expect_no_exception(page: Page) -> None:
    """No Streamlit exception box anywhere on the page."""
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def expect_idle(page: Page, timeout_ms: int = IDLE_MS) -> None:
    """The rerun is over: no "running" status widget and no spinner."""
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=timeout_ms)
    expect(page.locator('[data-testid="stSpinner"]')).to_have_count(0, timeout=timeout_ms)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def healthy(url: str) -> bool:
    """Streamlit's health endpoint at ``url`` answers ``ok``."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
            return resp.status == 200 and resp.read().decode().strip() == "ok"
    except OSError:
        return False
