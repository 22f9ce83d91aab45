"""A throwaway PostgreSQL cluster for tests: ``initdb`` + ``pg_ctl`` in a temporary folder, on a loopback port.

Debian's ``postgresql`` package (``scripts/test.sh`` installs it when missing) puts its programs under
``/usr/lib/postgresql/<version>/bin``. PostgreSQL refuses to run as root, so under root the cluster is
made and started as the ``postgres`` user (``runuser``) in a folder that user owns. :func:`cluster` yields
a ``postgresql://`` URL, or raises :class:`Unavailable` with the reason it could not start one.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


class Unavailable(RuntimeError):
    """PostgreSQL is not installed here or would not start (the message says which)."""


def _bin_dir() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3]), reverse=True)
    if not found:
        raise Unavailable(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/pg_ctl): apt-get install postgresql"
        )
    return found[0].parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def cluster(timeout: float = 60.0) -> Iterator[str]:
    """A running cluster for the length of the block (user ``ap``, trust auth on 127.0.0.1); its URL."""
    bindir = _bin_dir()
    folder = Path(tempfile.mkdtemp(prefix="ap-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError as exc:
            raise Unavailable("running as root and there is no 'postgres' user to run PostgreSQL as") from exc
        os.chown(folder, user.pw_uid, user.pw_gid)
        os.chmod(folder, 0o700)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, log = folder / "data", folder / "log"
    port = _free_port()
    try:
        init = subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "ap", "--auth=trust", "-E", "UTF8", "--no-sync"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if init.returncode:
            raise Unavailable(f"initdb failed: {init.stderr.strip()[-300:]}")
        options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={folder} -c fsync=off"
        start = subprocess.run(
            [
                *prefix,
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "-t",
                str(int(timeout)),
                "start",
            ],
            capture_output=True,
            text=True,
            timeout=timeout + 10,
        )
        if start.returncode:
            tail = log.read_text(errors="replace")[-300:] if log.exists() else start.stderr[-300:]
            raise Unavailable(f"pg_ctl start failed: {tail.strip()}")
        url = f"postgresql://ap@127.0.0.1:{port}/postgres"
        _wait_ready(url, timeout)
        yield url
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(url: str, timeout: float) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise Unavailable(f"PostgreSQL started but takes no connections: {exc}") from exc
            time.sleep(0.2)
