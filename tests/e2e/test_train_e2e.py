"""Train live in a real browser: start with the defaults, watch the curves and the attention grid update,
pause, resume, stop; meanwhile a second browser session on Explore stays responsive."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from e2e_helpers import PLOT, expect_idle, expect_no_exception, expect_view, expect_view_row, log_file  # noqa: E402

pytestmark = pytest.mark.e2e

FIRST_DRAW_MS = 90_000  # fresh server, busy 2-core machine: imports + the first training steps + plotly.js
UPDATE_MS = 60_000
OTHER_SESSION_BOUND_S = 60  # Explore's first chart in a second session while the first one trains


def button(page: Page, name: str):
    return page.get_by_test_id("stMainBlockContainer").get_by_role("button", name=re.compile(rf"{name}$"))


def grid_step(page: Page) -> int:
    """The step the attention grid shows, read from its caption."""
    text = page.get_by_text(re.compile(r"on the probe input .* at step \d+")).first.inner_text()
    return int(re.search(r"at step (\d+)", text).group(1))


def finished_runs(page: Page) -> list:
    """A list that grows by one each time the server tells this page a script run ended (a full run or a
    polling fragment's), read from Streamlit's own websocket messages."""
    runs: list = []

    def read(payload) -> None:
        if isinstance(payload, bytes):
            msg = ForwardMsg()
            msg.ParseFromString(payload)
            if msg.WhichOneof("type") == "script_finished":
                runs.append(msg.script_finished)

    page.on("websocket", lambda ws: ws.on("framereceived", read))
    return runs


def wait_for_runs(page: Page, runs: list, more: int, timeout_s: float = UPDATE_MS / 1000) -> None:
    """Poll until ``more`` further script runs have ended on the server (the page's fragment polled)."""
    target, deadline = len(runs) + more, time.monotonic() + timeout_s
    while len(runs) < target:
        assert time.monotonic() < deadline, f"fewer than {more} more runs ended on the server"
        page.wait_for_timeout(100)


def test_train_live(page: Page, browser: Browser, app_url: str, artifacts: Path, publish_screenshot):
    runs = finished_runs(page)
    page.goto(f"{app_url}/train")
    expect(page.get_by_text("Train live").first).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.get_by_text(re.compile(r"parameters.*ms per step"))).to_be_visible(timeout=FIRST_DRAW_MS)
    steps = page.get_by_role("spinbutton", name="Steps")
    steps.fill("3000")  # the default (500) may finish before the test has paused it on a fast machine
    steps.press("Enter")
    expect(page.get_by_text(re.compile(r"3,000 steps in about.*the limit per job is"))).to_be_visible(timeout=UPDATE_MS)
    button(page, "Start").click()

    # the loss curve and the attention grid appear, and the grid moves on as training goes
    expect(page.locator(PLOT).nth(1)).to_be_visible(timeout=FIRST_DRAW_MS)  # the loss curve, after the grid
    expect(page.locator(PLOT).first).to_be_visible(timeout=FIRST_DRAW_MS)
    expect(page.get_by_text(re.compile(r"Training on \*?\*?c(pu|uda)|Training on (cpu|cuda)"))).to_be_visible(
        timeout=UPDATE_MS
    )
    first = grid_step(page)
    deadline = time.monotonic() + UPDATE_MS / 1000
    while grid_step(page) <= first:
        assert time.monotonic() < deadline, "the attention grid did not update"
        page.wait_for_timeout(300)
    expect_no_exception(page)

    # pause: the status says so and the step stands still
    button(page, "Pause").click()
    expect(page.get_by_text(re.compile(r"Paused at step \d+"))).to_be_visible(timeout=UPDATE_MS)
    # a snapshot the trainer was already making when the pause came (its evaluation, probe and scores run after
    # the step the pause is checked before) still lands: CI once saw "Paused at step 225", then 300, the next
    # snapshot (every 75 steps here). Two polls let it land; from then on the step must stand still
    wait_for_runs(page, runs, 2)
    paused_text = page.get_by_text(re.compile(r"Paused at step \d+")).inner_text()
    wait_for_runs(page, runs, 3)  # the live fragment polled the job three more times meanwhile
    assert page.get_by_text(re.compile(r"Paused at step \d+")).inner_text() == paused_text

    # resume; while it trains, a second session opens Explore and gets its chart (how soon, next to a class:
    # bench/bench_jobs.py)
    button(page, "Resume").click()
    expect(page.get_by_text(re.compile(r"Training on"))).to_be_visible(timeout=UPDATE_MS)
    other_context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        other = other_context.new_page()
        other.goto(app_url)
        expect_view(other, timeout_ms=OTHER_SESSION_BOUND_S * 1000)
        expect(other.locator('[data-testid="stException"]')).to_have_count(0)
    finally:
        other_context.close()
    assert page.get_by_text(re.compile(r"Training on")).is_visible()

    # stop: the status says so, the results section appears
    before_stop = grid_step(page)
    button(page, "Stop").click()
    expect(page.get_by_text(re.compile(r"Stopped at step \d+"))).to_be_visible(timeout=UPDATE_MS)
    expect(page.get_by_text("Try the trained model")).to_be_visible(timeout=UPDATE_MS)
    assert grid_step(page) >= before_stop
    # the probe grid, then loss, accuracy and head scores (Plotly, each at least 200 px tall)
    expect(page.locator(PLOT)).to_have_count(4, timeout=UPDATE_MS)
    heights = [box["height"] for box in (c.bounding_box() for c in page.locator(PLOT).all()[1:]) if box]
    assert len(heights) == 3 and min(heights) >= 200, heights
    expect_no_exception(page)
    expect_idle(page)
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")  # painted
    shot = artifacts / "train.png"
    page.screenshot(path=str(shot))
    publish_screenshot(shot, "train.png")

    # the model downloads as a zip, built only now that it is asked for (a deferred download)
    with page.expect_download(timeout=UPDATE_MS) as download:
        page.get_by_role("button", name=re.compile("Download the model")).click()
    import zipfile

    with zipfile.ZipFile(download.value.path()) as archive:
        names = archive.namelist()
    assert any(n.endswith(".safetensors") for n in names) and any(n.endswith(".json") for n in names), names

    # the trained model opens in Explore (this session only), on the probe input
    button(page, "Open this model in Explore").click()
    expect(page.get_by_text("Explore attention")).to_be_visible(timeout=UPDATE_MS)
    expect_view(page, timeout_ms=UPDATE_MS)
    expect(page.get_by_role("combobox", name="Model")).to_have_value(
        re.compile(r"^Trained here: reverse"), timeout=UPDATE_MS
    )
    expect_view_row(page, r"^\d+ <sep>$", UPDATE_MS)
    expect_no_exception(page)


@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
def test_closing_the_tab_stops_its_job(browser: Browser, app_url: str):
    """The server stops a closed session's job (it logs when it does; how soon: bench/bench_responsiveness.py)."""
    log = log_file("e2e-server.log")  # the session server's log of this xdist worker
    before = log.read_text(errors="replace").count("stopped: its session went away")
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.goto(f"{app_url}/train")
    steps = page.get_by_role("spinbutton", name="Steps")
    expect(steps).to_be_visible(timeout=FIRST_DRAW_MS)
    steps.fill("3000")  # long enough to be training when the tab closes, within the server's limit per job
    steps.press("Enter")
    expect(page.get_by_text(re.compile(r"3,000 steps in about"))).to_be_visible(timeout=UPDATE_MS)
    button(page, "Start").click()
    expect(page.get_by_text(re.compile(r"Training on"))).to_be_visible(timeout=UPDATE_MS)
    context.close()
    deadline = time.monotonic() + 30
    while log.read_text(errors="replace").count("stopped: its session went away") <= before:
        assert time.monotonic() < deadline, "the closed session's job was not stopped within 30 s"
        time.sleep(0.25)  # polling the server's log file
