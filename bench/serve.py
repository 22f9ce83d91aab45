"""The app's server for the load benchmarks (``bench_class``, ``bench_browser``): start it, watch it, stop it.

- :func:`running_server` starts the README's ``python -m app`` (target ``streamlit``) or
  ``bash scripts/classroom.sh PORT`` (target ``classroom``: one Streamlit process per core behind HAProxy)
  on a free port with the Hub switched off, waits until it answers ``/_stcore/health`` (and, for the
  classroom, until every worker it can see does), yields a :class:`Server`, and stops its own process
  group in ``finally``: never anything it did not start.
- :class:`ProcSampler` reads ``/proc`` every 0.5 s: CPU seconds (user + sys) and resident memory of a
  process and all its descendants (the Streamlit process; or the launcher, its workers and HAProxy).
- :func:`machine` and :func:`load_average` describe where a run happened, for the report.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "test-artifacts"
CLASSROOM_SCRIPT = ROOT / "scripts" / "classroom.sh"
TARGETS = ("streamlit", "classroom")
STREAMLIT_RUN = ["streamlit", "run", "app/streamlit_app.py"]  # ``python -m`` this: the app without the launcher
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 15
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


class TargetUnavailable(RuntimeError):
    """The target cannot be started here (e.g. scripts/classroom.sh is not in this checkout)."""


@dataclass
class Server:
    """A running server: its URL and, when this process started it, the pid whose tree is sampled."""

    url: str
    target: str
    pid: int | None = None
    log_path: Path | None = None

    def worker_ports(self) -> list[int]:
        """Ports of the Streamlit processes under ``pid`` (the classroom's workers; [] if unknown)."""
        ports = []
        for pid in descendants(self.pid) if self.pid else []:
            match = re.search(r"--server\.port[= ](\d+)", _cmdline(pid))
            if match and _is_server(_cmdline(pid)):
                ports.append(int(match.group(1)))
        return sorted(set(ports))

    def streamlit_pids(self) -> dict[int, str]:
        """The Streamlit server processes under ``pid`` (itself for target ``streamlit``, each worker of
        the classroom), pid -> label (``streamlit :PORT``); {} when no pid is known."""
        return {pid: label(pid) for pid in (descendants(self.pid) if self.pid else []) if _is_server(_cmdline(pid))}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def local_flags(port: int) -> list[str]:
    """Streamlit's flags for a server of a test or a benchmark: PORT on the loopback only, headless, no usage stats."""
    settings = {"server.port": port, "server.headless": "true", "server.address": "127.0.0.1"}
    settings["browser.gatherUsageStats"] = "false"
    return [arg for name, value in settings.items() for arg in (f"--{name}", str(value))]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
            return resp.status == 200 and resp.read().decode().strip() == "ok"
    except OSError:
        return False


def _command(target: str, port: int, root: Path = ROOT) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if target == "streamlit":
        # the README's command: the launcher (its child traces the landing page while the server starts), then
        # streamlit run; a revision from before the launcher (a baseline worktree) runs streamlit run itself
        readme = ["app"] if (root / "app" / "__main__.py").is_file() else STREAMLIT_RUN
        return [sys.executable, "-m", *readme, *local_flags(port)], env
    if target == "split":  # streamlit run with thread-CPU counters around a rerun's parts (bench/split_server.py)
        if root != ROOT:
            raise TargetUnavailable("the split server runs this checkout only")
        return [sys.executable, "-m", "bench.split_server", *local_flags(port)], env
    if target == "classroom":
        script = root / CLASSROOM_SCRIPT.relative_to(ROOT)
        if not script.exists():
            raise TargetUnavailable(f"{CLASSROOM_SCRIPT.relative_to(ROOT)} is not in this checkout")
        return ["bash", str(script), str(port)], {**env, "AP_BIND": "127.0.0.1"}
    raise ValueError(f"unknown target {target!r} (one of {', '.join(TARGETS)})")


@contextlib.contextmanager
def running_server(target: str, log_name: str, start_timeout_s: float = START_TIMEOUT_S, root: Path = ROOT):
    """Start ``target`` (from the checkout ``root``) in a process group of its own; yield a :class:`Server`;
    stop that group."""
    port = free_port()
    cmd, env = _command(target, port, root)
    LOGS.mkdir(exist_ok=True)
    log_path = LOGS / log_name
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            server = Server(url, target, proc.pid, log_path)
            _wait_ready(proc, server, start_timeout_s)
            yield server
        finally:
            _stop_group(proc)


def _wait_ready(proc: subprocess.Popen, server: Server, timeout_s: float) -> None:
    """Our process alive and its port answering ``ok`` (another server may hold a port and answer)."""
    deadline = time.monotonic() + timeout_s
    while not healthy(server.url):
        if proc.poll() is not None:
            raise RuntimeError(f"{server.target} exited with code {proc.returncode}; see {server.log_path}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{server.target} not healthy after {timeout_s:.0f} s; see {server.log_path}")
        time.sleep(0.25)
    for port in server.worker_ports():  # HAProxy may answer while some workers still start
        while not healthy(f"http://127.0.0.1:{port}") and time.monotonic() < deadline:
            time.sleep(0.25)


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the leader (the classroom script stops its workers itself), then to the group, then SIGKILL."""
    pgid = proc.pid  # start_new_session: the leader's pid is the group id
    steps = (
        (lambda: proc.send_signal(signal.SIGTERM)),
        (lambda: os.killpg(pgid, signal.SIGTERM)),
        (lambda: os.killpg(pgid, signal.SIGKILL)),
    )
    for first, step in zip((True, False, False), steps):
        with contextlib.suppress(ProcessLookupError):
            step()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            leader_gone = proc.poll() is not None
            if leader_gone and not _group_alive(pgid):
                return
            if leader_gone and first:
                break  # the leader has stopped what it will stop: signal what is left at once
            time.sleep(0.1)


def _group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in the group."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


# --- /proc ---------------------------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat from field 3 (state) on; None if the process is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw.rsplit(")", 1)[1].split()


def _is_server(cmdline: str) -> bool:
    """A Streamlit server's command line: ``streamlit run …`` or the README's ``python -m app …``."""
    return bool(re.search(r"\bstreamlit run\b|\s-m app(\s|$)", cmdline))


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if _stat(pid) is not None:
            found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def stat_cpu_s(fields: list[str]) -> float:
    """User + sys CPU seconds in a /proc stat line's fields as :func:`_stat` splits them (a process or a thread)."""
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def cpu_of(pids: list[int]) -> float:
    """User + sys CPU seconds the processes ``pids`` have used so far (every thread; one that is gone counts 0)."""
    return sum(stat_cpu_s(fields) for pid in pids if (fields := _stat(pid)))


def named(pids: list[int], word: str) -> list[int]:
    """The processes among ``pids`` whose command line holds ``word``."""
    return [pid for pid in pids if word in _cmdline(pid)]


def label(pid: int) -> str:
    """A readable name: ``streamlit :PORT``, ``haproxy``, ``classroom.sh (bash)`` or the command name."""
    cmdline = _cmdline(pid)
    if _is_server(cmdline):
        match = re.search(r"--server\.port[= ](\d+)", cmdline)
        return "streamlit" + (f" :{match.group(1)}" if match else "")
    if "haproxy" in cmdline.split(" ", 1)[0]:
        return "haproxy"
    if "classroom.sh" in cmdline:
        return "classroom.sh (bash)"
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return f"pid {pid}"


@dataclass
class ProcStats:
    """One process over a sampling window."""

    label: str
    cpu_first_s: float
    cpu_last_s: float
    rss_peak_bytes: int

    @property
    def cpu_s(self) -> float:
        return self.cpu_last_s - self.cpu_first_s


@dataclass
class ProcSampler:
    """Samples ``root`` and its descendants every ``period_s`` in a thread, between ``start()`` and ``stop()``.

    CPU per process is the user + sys time it used between the first and the last sample that saw it
    (a process that starts or ends between samples loses at most one period).
    """

    root: int | None
    period_s: float = 0.5
    procs: dict[int, ProcStats] = field(default_factory=dict)
    wall_s: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> ProcSampler:
        self._t0 = time.monotonic()
        if self.root is not None:
            self._sample()
            self._thread = threading.Thread(target=self._run, name="proc-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> ProcSampler:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._sample()
        self.wall_s = time.monotonic() - self._t0
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sample()

    def _sample(self) -> None:
        for pid in descendants(self.root):
            fields = _stat(pid)
            if fields is None:
                continue
            cpu = stat_cpu_s(fields)
            rss = int(fields[21]) * PAGE_BYTES
            stats = self.procs.get(pid)
            if stats is None:
                self.procs[pid] = ProcStats(label(pid), cpu, cpu, rss)
            else:
                stats.cpu_last_s = cpu
                stats.rss_peak_bytes = max(stats.rss_peak_bytes, rss)

    @property
    def cpu_s(self) -> float:
        return sum(p.cpu_s for p in self.procs.values())

    def cpu_percent(self) -> float | None:
        """Server CPU over the window as % of one core (None when nothing was sampled)."""
        if self.root is None or not self.wall_s:
            return None
        return 100 * self.cpu_s / self.wall_s


def own_cpu_s() -> float:
    """User + sys seconds used by this process (the load generator) so far."""
    times = os.times()
    return times.user + times.system


# --- the report's context ---------------------------------------------------------------------------------


def load_average() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1 / 5 / 15 min)"
    except OSError:
        return "unknown"


def pace(timeout_s: float = 180.0) -> dict[str, float] | None:
    """The machine's pace now (:mod:`bench.pace`, in a child process): ``{"long_ms", "short_ms"}``, or None if the
    child failed (the benchmark goes on without it)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.pace"],
            cwd=ROOT,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=True,
        )
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        return {"long_ms": float(figures["long_ms"]), "short_ms": float(figures["short_ms"])}
    except (subprocess.SubprocessError, OSError, ValueError, KeyError, IndexError):
        return None


def pace_line(context: dict) -> list[str]:
    """A sentence on the machine's pace before and after the run (:func:`pace`), if it was measured."""
    taken = [(when, context.get(f"pace_{when}")) for when in ("before", "after")]
    taken = [(when, figures) for when, figures in taken if figures]
    if not taken:
        return []
    each = "; ".join(f"{when}: {figures['long_ms']:.0f} ms and {figures['short_ms']:.1f} ms" for when, figures in taken)
    return [
        "The machine's pace in this run (`python -m bench.pace`, alone: before the servers start, after they stop): "
        "MiniLM's trace of 512 tokens on two torch threads (wall, median of 5) and of a 30-word sentence on one "
        "(CPU, median of 15), "
        f"{each}. The absolute figures above move with it from hour to hour; ratios measured in one run do less.",
        "",
    ]


def footer(context: dict) -> list[str]:
    """The closing lines of a section: when and where it was measured (and the machine's pace, where a benchmark
    took it), and the command that did it."""
    return [
        *pace_line(context),
        f"Measured {context['date']} on {context['machine']}. Load average before: {context['load_before']}; "
        f"after: {context['load_after']}.",
        "",
        f"Reproduce (from the repository root): `{context['command']}`",
    ]


def run_context(module: str, argv: list[str] | None) -> dict[str, str]:
    """What a benchmark's footer says of its run (:func:`footer`, which adds ``load_after``): the load before it, the
    machine, the date, and the command that reproduces it (with the classroom's worker count when it was set)."""
    workers = f"AP_WORKERS={os.environ['AP_WORKERS']} " if "AP_WORKERS" in os.environ else ""
    args = shlex.join(sys.argv[1:] if argv is None else argv)
    return {
        "load_before": load_average(),
        "machine": machine(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": f"{workers}python -m bench.{module} {args}".strip(),
    }


def machine() -> str:
    """CPU model, cores, memory, Python and Streamlit versions."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split("MemTotal:", 1)[1].split()[0])
        mem = f", {kib / 2**20:.0f} GiB RAM"
    import streamlit

    return (
        f"{cpu}, {os.cpu_count()} cores{mem}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}, Streamlit {streamlit.__version__}"
    )


@contextlib.contextmanager
def checkout(rev: str):
    """A temporary detached git worktree of ``rev`` (the baseline a benchmark compares with); removed after."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(folder), rev],
        check=True,
        capture_output=True,
    )
    try:
        sha = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()
        yield folder, sha
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], capture_output=True)
