"""The classroom launch (``scripts/classroom.sh``): two Streamlit workers behind HAProxy, for real.

One launch serves the whole module (workers start in parallel, a few seconds): stickiness by the
SERVERID cookie, the Streamlit websocket through HAProxy, one page in Chromium, and, last, that a
SIGTERM to the script leaves nothing it started. The script runs in its own process group; only that
group is ever signalled. Its output is kept in ``test-artifacts/classroom.log`` (``classroom-gw0.log`` in xdist's
worker gw0). The module's tests share the launch, so they run on one xdist worker (tests/conftest.py).
"""

from __future__ import annotations

import os
import signal
import socket
import time
import urllib.request
from pathlib import Path

import pytest
from classroom_launch import (
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    Classroom,
    alive,
    get,
    launch,
    parse_log,
    script_running,
    wait_for_workers,
)
from playwright.sync_api import Page, expect
from websockets.sync.client import connect

from e2e_helpers import ARTIFACTS, expect_no_exception, expect_view, free_port, healthy, log_file

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
WORKERS = ("w0", "w1")


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def classroom():
    with launch("classroom.log", workers=len(WORKERS)) as room:
        yield room


def test_workers_keep_the_environment_and_get_an_id(classroom: Classroom):
    for name, pid in classroom.worker_pids.items():
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"AP_WORKER_ID={name[1:]}".encode() in environ
        assert b"HF_HUB_OFFLINE=1" in environ
        assert b"OMP_WAIT_POLICY=PASSIVE" in environ
    config = (classroom.run_dir / "haproxy.cfg").read_text(encoding="utf-8")
    assert "cookie SERVERID insert indirect nocache" in config
    assert "option httpchk GET /_stcore/health" in config
    assert f"bind 127.0.0.1:{classroom.port}" in config


def test_cookie_keeps_a_browser_on_one_worker_and_new_ones_are_spread(classroom: Classroom):
    wait_for_workers(classroom.url, WORKERS)
    page = f"{classroom.url}/"

    served_by, cookie = get(page)
    assert cookie in WORKERS and served_by == cookie  # HAProxy names the worker it chose in the cookie

    for name in WORKERS:
        for _ in range(4):
            served_by, new_cookie = get(page, cookie=name)
            assert served_by == name
            assert new_cookie is None  # "indirect": a valid cookie is not set again

    spread = {get(page)[0] for _ in range(6)}
    assert spread == set(WORKERS)


def test_streamlit_websocket_upgrades_on_the_cookies_worker(classroom: Classroom):
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    wait_for_workers(classroom.url, WORKERS)
    ws_url = classroom.url.replace("http://", "ws://") + "/_stcore/stream"
    for name in WORKERS:
        with connect(
            ws_url,
            subprotocols=["streamlit"],
            additional_headers={"Cookie": f"SERVERID={name}"},
            open_timeout=10,
            max_size=None,
        ) as ws:
            assert ws.response.status_code == 101
            assert ws.response.headers["X-AP-Worker"] == name
            rerun = BackMsg()
            rerun.rerun_script.query_string = ""
            ws.send(rerun.SerializeToString())
            kinds = []
            while "new_session" not in kinds:
                msg = ForwardMsg()
                msg.ParseFromString(ws.recv(timeout=30))
                kinds.append(msg.WhichOneof("type"))
            assert kinds[0] == "new_session"


def test_a_browser_gets_the_app_from_one_worker(classroom: Classroom, page: Page):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set E2E_CHROMIUM)")
    workers_seen: set[str] = set()
    # (a blob: URL is the page's own memory, e.g. a component's script: no worker answered it)
    page.on("response", lambda r: r.url.startswith("http") and workers_seen.add(r.headers.get("x-ap-worker")))
    page.goto(classroom.url)
    expect(page.get_by_role("heading", name="Explore attention")).to_be_visible(timeout=60_000)
    expect_view(page, timeout_ms=60_000)  # a whole rerun over the websocket
    expect_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "classroom.png"))
    sticky = [c["value"] for c in page.context.cookies() if c["name"] == "SERVERID"]
    assert len(sticky) == 1 and sticky[0] in WORKERS
    assert workers_seen == {sticky[0]}  # every HTTP response of the page came from the cookie's worker


def test_the_first_student_waits_for_a_worker_instead_of_an_error():
    """Issue 20: right after the launch HAProxy answered the first students with HTTP errors while the
    workers were still starting (HAProxy 2.6 counts a server UP until its first failed check, then 503).
    A request sent as soon as HAProxy listens, before its worker is healthy, must wait and get the page."""
    port = free_port()
    log_path = log_file("classroom-first-request.log")
    with script_running(port, log_path, workers=1) as proc:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(port):  # HAProxy listens: the first moment a student could come
            assert proc.poll() is None, log_path.read_text(encoding="utf-8")
            assert time.monotonic() < deadline, "HAProxy never listened"
            time.sleep(0.02)
        _pids, ports, _hap, _run_dir = parse_log(log_path.read_text(encoding="utf-8"))
        worker_ready_before = healthy(f"http://127.0.0.1:{ports['w0']}")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=START_TIMEOUT_S) as resp:
            status, body, served_by = resp.status, resp.read().decode(), resp.headers.get("X-AP-Worker")
        assert not worker_ready_before, "the worker was ready before the request: nothing was tested"
        assert status == 200 and served_by == "w0"
        assert "<title>Streamlit</title>" in body or "streamlit" in body.lower()
        assert "is starting" not in body  # not the fallback page either


def test_sigterm_stops_everything_it_started(classroom: Classroom):
    """Runs last in this module: it stops the launch the other tests share."""
    pids = [*classroom.worker_pids.values(), classroom.haproxy_pid]
    assert all(alive(pid) for pid in pids)
    classroom.proc.send_signal(signal.SIGTERM)  # the script only, not its group
    classroom.proc.wait(timeout=STOP_TIMEOUT_S)
    assert classroom.proc.returncode == 128 + signal.SIGTERM
    assert not [pid for pid in pids if alive(pid)]
    assert not alive(classroom.proc.pid, group=True)  # nothing else it started either
    assert not [p for p in [classroom.port, *classroom.worker_ports.values()] if _answers(p)]
    assert "stopped" in classroom.log_path.read_text(encoding="utf-8")
