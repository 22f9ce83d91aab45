"""scripts/classroom.sh refuses bad arguments before it starts anything (the e2e test runs it for real)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "classroom.sh"


def _run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=10
    )


@pytest.mark.parametrize("args", [(), ("8501", "8502"), ("0",), ("65536",), ("http",), ("-1",), ("85O1",)])
def test_bad_port_prints_usage(args):
    result = _run(*args)
    assert result.returncode == 2
    assert "usage: bash scripts/classroom.sh PORT" in result.stderr


@pytest.mark.parametrize("workers", ["0", "two", "-3"])
def test_bad_worker_count_is_refused(workers):
    result = _run("8501", AP_WORKERS=workers)
    assert result.returncode == 2
    assert "AP_WORKERS must be a positive integer" in result.stderr
