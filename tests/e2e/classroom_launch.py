"""The classroom launch (``scripts/classroom.sh``) started for a test: HAProxy in front of N Streamlit workers.

``launch(log_name, workers, extra_env)`` runs the script in its own process group on a free port, waits until
HAProxy answers through a healthy worker, yields a :class:`Classroom` (the workers' pids and ports, read from
the script's own output) and stops only that group at the end; the script's haproxy.cfg and worker logs move
into ``test-artifacts/<log_name without .log>/``. The log is this xdist worker's own (:func:`log_file`): when
two workers each launched a module's classroom into one ``classroom.log``, one read the other's run dir from
it, which the other removed when it stopped (a FileNotFoundError on haproxy.cfg in CI). Used by ``test_classroom_e2e.py`` (the launch itself) and
``test_class_room_e2e.py`` (a class across two workers).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from e2e_helpers import ARTIFACTS, free_port, healthy, log_file

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60  # both workers healthy; measured 1.3–2.8 s on 2 busy cores
STOP_TIMEOUT_S = 15


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


def get(url: str, cookie: str | None = None):
    """One request on a fresh connection, no cookie jar: (X-AP-Worker, SERVERID set by HAProxy or None)."""
    req = urllib.request.Request(url, headers={"Cookie": f"SERVERID={cookie}"} if cookie else {})
    with urllib.request.urlopen(req, timeout=5) as resp:
        resp.read()
        set_cookies = resp.headers.get_all("Set-Cookie") or []
        served_by = resp.headers.get("X-AP-Worker")
    sticky = [m.group(1) for c in set_cookies if (m := re.match(r"SERVERID=([^;]*)", c))]
    return served_by, (sticky[0] if sticky else None)


def alive(pid: int, *, group: bool = False) -> bool:
    """Whether the process ``pid`` (``group``: any process of the group it leads) still exists."""
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return False
    return True


def parse_log(text: str) -> tuple[dict[str, int], dict[str, int], int | None, Path | None]:
    pids, ports = {}, {}
    for name, pid, port in re.findall(r"worker (w\d+) pid (\d+) on http://127\.0\.0\.1:(\d+)", text):
        pids[name], ports[name] = int(pid), int(port)
    hap = re.search(r"haproxy pid (\d+)", text)
    run_dir = re.search(r"configuration and logs in (\S+)", text)
    return pids, ports, int(hap.group(1)) if hap else None, Path(run_dir.group(1)) if run_dir else None


def wait_for_workers(url: str, workers: tuple[str, ...], timeout_s: float = START_TIMEOUT_S) -> None:
    """Cookie-less requests until each worker has answered once (they become healthy one by one)."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout_s
    while seen != set(workers):
        assert time.monotonic() < deadline, f"only {sorted(seen)} answered in {timeout_s} s"
        served_by, _ = get(f"{url}/_stcore/health")
        seen.add(served_by)
        time.sleep(0.1)


@contextlib.contextmanager
def script_running(port: int, log_path: Path, workers: int, extra_env: dict[str, str] | None = None):
    """``bash scripts/classroom.sh PORT`` with ``AP_WORKERS=workers`` on 127.0.0.1, its output in ``log_path``, in a
    process group of its own; yields the process at once; after, SIGTERM to the script, then SIGKILL to its group
    (only that group) for whatever it left behind."""
    if not (shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists()):
        pytest.skip("haproxy is not installed (bash scripts/test.sh installs it: apt-get install haproxy)")
    env = {**os.environ, "AP_WORKERS": str(workers), "AP_BIND": "127.0.0.1", "HF_HUB_OFFLINE": "1", **(extra_env or {})}
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            ["bash", "scripts/classroom.sh", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=STOP_TIMEOUT_S)
            if alive(proc.pid, group=True):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def launch(log_name: str, workers: int = 2, extra_env: dict[str, str] | None = None) -> Iterator[Classroom]:
    """The script (:func:`script_running`) on a free port, once HAProxy answers through a healthy worker; its run
    dir (haproxy.cfg, the worker logs) moves to ``test-artifacts/`` after it stopped."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = log_file(log_name)  # this xdist worker's own: the run dir is read back from it
    log_path.unlink(missing_ok=True)
    try:
        with script_running(port, log_path, workers, extra_env) as proc:
            started = time.monotonic()
            while not healthy(url):
                if proc.poll() is not None:
                    raise RuntimeError(f"classroom.sh exited with code {proc.returncode}; see {log_path}")
                if time.monotonic() - started > START_TIMEOUT_S:
                    raise RuntimeError(f"no healthy worker behind HAProxy in {START_TIMEOUT_S} s; see {log_path}")
                time.sleep(0.2)
            pids, ports, haproxy_pid, run_dir = parse_log(log_path.read_text(encoding="utf-8"))
            names = {f"w{i}" for i in range(workers)}
            assert set(pids) == names and haproxy_pid and run_dir, log_path.read_text(encoding="utf-8")
            yield Classroom(url, port, proc, pids, ports, haproxy_pid, run_dir, log_path)
    finally:
        if log_path.exists():  # not when skipped
            _keep_run_dir(parse_log(log_path.read_text(encoding="utf-8"))[3], log_path.stem)


def _keep_run_dir(run_dir: Path | None, name: str) -> None:
    """Move the script's haproxy.cfg and worker logs into test-artifacts/NAME/ (out of /tmp)."""
    if run_dir is None or not run_dir.is_dir():
        return
    dest = ARTIFACTS / name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(run_dir, dest)
    shutil.rmtree(run_dir)
