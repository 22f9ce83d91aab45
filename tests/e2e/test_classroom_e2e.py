"""The classroom launch (``scripts/classroom.sh``): two Streamlit workers behind HAProxy, for real.

One launch serves the whole module (workers start in parallel, a few seconds): stickiness by the
SERVERID cookie, the Streamlit websocket through HAProxy, one page in Chromium, and, last, that a
SIGTERM to the script leaves nothing it started. The script runs in its own process group; only that
group is ever signalled. Its output is kept in ``test-artifacts/classroom.log``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from websockets.sync.client import connect

from e2e_helpers import PLOT, expect_no_exception, free_port, healthy

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("E2E_CHROMIUM", "/usr/bin/chromium")
START_TIMEOUT_S = 60  # both workers healthy; measured 1.3–2.8 s on 2 busy cores
STOP_TIMEOUT_S = 15
WORKERS = ("w0", "w1")


@dataclass
class Classroom:
    url: str
    port: int
    proc: subprocess.Popen
    worker_pids: dict[str, int]  # "w0" -> pid
    worker_ports: dict[str, int]
    haproxy_pid: int
    run_dir: Path
    log_path: Path


def _get(url: str, cookie: str | None = None):
    """One request on a fresh connection, no cookie jar: (X-AP-Worker, SERVERID set by HAProxy or None)."""
    req = urllib.request.Request(url, headers={"Cookie": f"SERVERID={cookie}"} if cookie else {})
    with urllib.request.urlopen(req, timeout=5) as resp:
        resp.read()
        set_cookies = resp.headers.get_all("Set-Cookie") or []
        served_by = resp.headers.get("X-AP-Worker")
    sticky = [m.group(1) for c in set_cookies if (m := re.match(r"SERVERID=([^;]*)", c))]
    return served_by, (sticky[0] if sticky else None)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _parse_log(text: str) -> tuple[dict[str, int], dict[str, int], int | None, Path | None]:
    pids, ports = {}, {}
    for name, pid, port in re.findall(r"worker (w\d+) pid (\d+) on http://127\.0\.0\.1:(\d+)", text):
        pids[name], ports[name] = int(pid), int(port)
    hap = re.search(r"haproxy pid (\d+)", text)
    run_dir = re.search(r"configuration and logs in (\S+)", text)
    return pids, ports, int(hap.group(1)) if hap else None, Path(run_dir.group(1)) if run_dir else None


@pytest.fixture(scope="module")
def classroom():
    if not (shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists()):
        pytest.skip("haproxy is not installed (bash scripts/test.sh installs it: apt-get install haproxy)")
    ARTIFACTS.mkdir(exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "AP_WORKERS": "2", "AP_BIND": "127.0.0.1", "HF_HUB_OFFLINE": "1"}
    log_path = ARTIFACTS / "classroom.log"
    log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 — closed after the script stops
    proc = subprocess.Popen(
        ["bash", "scripts/classroom.sh", str(port)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        started = time.monotonic()
        while not healthy(url):
            if proc.poll() is not None:
                raise RuntimeError(f"classroom.sh exited with code {proc.returncode}; see {log_path}")
            if time.monotonic() - started > START_TIMEOUT_S:
                raise RuntimeError(f"no healthy worker behind HAProxy in {START_TIMEOUT_S} s; see {log_path}")
            time.sleep(0.2)
        pids, ports, haproxy_pid, run_dir = _parse_log(log_path.read_text(encoding="utf-8"))
        assert set(pids) == set(WORKERS) and haproxy_pid and run_dir, log_path.read_text(encoding="utf-8")
        yield Classroom(url, port, proc, pids, ports, haproxy_pid, run_dir, log_path)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=STOP_TIMEOUT_S)
        if _group_alive(proc.pid):  # our own group only: whatever the script left behind
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT_S)
        log.close()
        _keep_run_dir(_parse_log(log_path.read_text(encoding="utf-8"))[3])


def _keep_run_dir(run_dir: Path | None) -> None:
    """Move the script's haproxy.cfg and worker logs into test-artifacts/classroom/ (out of /tmp)."""
    if run_dir is None or not run_dir.is_dir():
        return
    dest = ARTIFACTS / "classroom"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(run_dir, dest)
    shutil.rmtree(run_dir)


def _wait_for_both_workers(url: str, timeout_s: float = START_TIMEOUT_S) -> None:
    """Cookie-less requests until each worker has answered once (they become healthy one by one)."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout_s
    while seen != set(WORKERS):
        assert time.monotonic() < deadline, f"only {sorted(seen)} answered in {timeout_s} s"
        served_by, _ = _get(f"{url}/_stcore/health")
        seen.add(served_by)
        time.sleep(0.1)


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
    _wait_for_both_workers(classroom.url)
    page = f"{classroom.url}/"

    served_by, cookie = _get(page)
    assert cookie in WORKERS and served_by == cookie  # HAProxy names the worker it chose in the cookie

    for name in WORKERS:
        for _ in range(4):
            served_by, new_cookie = _get(page, cookie=name)
            assert served_by == name
            assert new_cookie is None  # "indirect": a valid cookie is not set again

    spread = {_get(page)[0] for _ in range(6)}
    assert spread == set(WORKERS)


def test_streamlit_websocket_upgrades_on_the_cookies_worker(classroom: Classroom):
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    _wait_for_both_workers(classroom.url)
    ws_url = classroom.url.replace("http://", "ws://") + "/_stcore/stream"
    for name in WORKERS:
        with connect(
            ws_url, subprotocols=["streamlit"], additional_headers={"Cookie": f"SERVERID={name}"},
            open_timeout=10, max_size=None,
        ) as ws:  # fmt: skip
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
    page.on("response", lambda r: workers_seen.add(r.headers.get("x-ap-worker")))
    page.goto(classroom.url)
    expect(page.get_by_role("heading", name="Explore attention")).to_be_visible(timeout=60_000)
    expect(page.locator(PLOT).first).to_be_visible(timeout=60_000)  # a whole rerun over the websocket
    expect_no_exception(page)
    page.screenshot(path=str(ARTIFACTS / "classroom.png"))
    sticky = [c["value"] for c in page.context.cookies() if c["name"] == "SERVERID"]
    assert len(sticky) == 1 and sticky[0] in WORKERS
    assert workers_seen == {sticky[0]}  # every HTTP response of the page came from the cookie's worker


def test_the_first_student_waits_for_a_worker_instead_of_an_error():
    """Issue 20: right after the launch HAProxy answered the first students with HTTP errors while the
    workers were still starting (HAProxy 2.6 counts a server UP until its first failed check, then 503).
    A request sent as soon as HAProxy listens, before its worker is healthy, must wait and get the page."""
    if not (shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists()):
        pytest.skip("haproxy is not installed (bash scripts/test.sh installs it: apt-get install haproxy)")
    port = free_port()
    env = {**os.environ, "AP_WORKERS": "1", "AP_BIND": "127.0.0.1", "HF_HUB_OFFLINE": "1"}
    log_path = ARTIFACTS / "classroom-first-request.log"
    ARTIFACTS.mkdir(exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(["bash", "scripts/classroom.sh", str(port)], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while not _answers(port):  # HAProxy listens: the first moment a student could come
                assert proc.poll() is None, log_path.read_text(encoding="utf-8")
                assert time.monotonic() < deadline, "HAProxy never listened"
                time.sleep(0.02)
            _pids, ports, _hap, _run_dir = _parse_log(log_path.read_text(encoding="utf-8"))
            worker_ready_before = healthy(f"http://127.0.0.1:{ports['w0']}")
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=START_TIMEOUT_S) as resp:
                status, body, served_by = resp.status, resp.read().decode(), resp.headers.get("X-AP-Worker")
            assert not worker_ready_before, "the worker was ready before the request: nothing was tested"
            assert status == 200 and served_by == "w0"
            assert "<title>Streamlit</title>" in body or "streamlit" in body.lower()
            assert "is starting" not in body  # not the fallback page either
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=STOP_TIMEOUT_S)
            if _group_alive(proc.pid):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=STOP_TIMEOUT_S)


def test_sigterm_stops_everything_it_started(classroom: Classroom):
    """Runs last in this module: it stops the launch the other tests share."""
    pids = [*classroom.worker_pids.values(), classroom.haproxy_pid]
    assert all(_alive(pid) for pid in pids)
    classroom.proc.send_signal(signal.SIGTERM)  # the script only, not its group
    classroom.proc.wait(timeout=STOP_TIMEOUT_S)
    assert classroom.proc.returncode == 128 + signal.SIGTERM
    assert not [pid for pid in pids if _alive(pid)]
    assert not _group_alive(classroom.proc.pid)  # nothing else it started either
    assert not [p for p in [classroom.port, *classroom.worker_ports.values()] if _answers(p)]
    assert "stopped" in classroom.log_path.read_text(encoding="utf-8")
