"""Real-browser fixtures: the app started exactly as the README says, and Debian's Chromium.

The server runs ``python -m app`` (the README's command) from the repository root with the Hub
switched off, on a free port, for the whole session; only that process is stopped at the end, and its
log is kept in ``test-artifacts/e2e-server.log`` (``e2e-server-gw0.log`` in xdist's worker gw0). Playwright
never downloads a browser here: it launches ``/usr/bin/chromium`` (override with ``E2E_CHROMIUM``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.serve import local_flags
from e2e_helpers import ARTIFACTS, free_port, healthy, log_file

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
START_TIMEOUT_S = 60


@contextlib.contextmanager
def running_app(
    log_name: str, extra_env: dict[str, str] | None = None, *, prefetch: bool = False, script: str | None = None
):
    """Start the app as the README says (Hub off, free port); yield its URL; stop only this process.

    ``extra_env``: server settings for this server only (e.g. ``AP_MODEL_DIRS``). ``prefetch``: keep the
    launcher's child process (it traces the landing page while the server starts): the session's server and
    the fresh servers keep it, as users run the app; a server started for one page's test (captions, Swin, a
    class) goes without it (``AP_PREFETCH=off``), whose imports would take ~4 s of CPU from the two cores the
    test and its browser share. ``script``: a test page of its own (a path under ``tests/e2e/apps``), run with
    ``streamlit run`` and the repository on its import path, instead of the app.
    """
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set E2E_CHROMIUM)")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # app: the README's command (launcher, then run)
    cmd = [sys.executable, "-m", *(["streamlit", "run", script] if script else ["app"]), *local_flags(port)]
    # Train's tests run jobs of a few thousand steps: on a busy test machine their estimate can pass the
    # default 5-minute limit per job (whose own tests are AppTests and unit tests), so the limit is raised here
    env = {"AP_TRAIN_MAX_SECONDS": "3600", **os.environ, "HF_HUB_OFFLINE": "1", **(extra_env or {})}
    if script:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if not prefetch:
        env["AP_PREFETCH"] = "off"
    log_path = log_file(log_name)
    log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 — closed after the server stops
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with code {proc.returncode}; see {log_path}")
            if healthy(url):  # our process is alive and the port answers: it is ours
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not become healthy in {START_TIMEOUT_S} s; see {log_path}")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        log.close()


@pytest.fixture(scope="session")
def app_url():
    """The URL of a Streamlit server running the app for the whole test session."""
    with running_app("e2e-server.log", prefetch=True) as url:
        yield url


@pytest.fixture
def fresh_app_url():
    """A server of its own that no browser has visited yet (for deep links on a fresh server)."""
    with running_app("e2e-fresh-server.log", prefetch=True) as url:
        yield url


@pytest.fixture(scope="module")
def folder_server(request, tmp_path_factory):
    """A server of its own for a module whose test types a model folder: the module's ``save_model(root)`` saves the
    model under ``root``, the one folder the server's admin allows (``AP_MODEL_DIRS``); yields ``(url, its folder)``."""
    root = tmp_path_factory.mktemp("allowed")
    folder = request.module.save_model(root)
    with running_app(f"e2e-{Path(request.module.__file__).stem}.log", {"AP_MODEL_DIRS": str(root)}) as url:
        yield url, str(folder)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": ["--disable-gpu", "--disable-quic", "--disable-dev-shm-usage", "--no-sandbox"],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 1400}}


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def publish_screenshot():
    """Copy a screenshot into docs/screenshots/ for the README."""

    def publish(src: Path, name: str) -> Path:
        dest_dir = ROOT / "docs" / "screenshots"
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / name
        shutil.copyfile(src, dest)
        return dest

    return publish
