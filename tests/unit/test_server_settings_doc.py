"""The README's "Server settings" table says what the code does: every ``AP_*`` variable the server
reads is listed, and each listed default is the one the code uses when the variable is unset.

The defaults are read from the code (the functions the server calls, with the variables removed from
the environment; ``scripts/classroom.sh``'s own fallbacks for its two), never written down here. The
table's words for a default that depends on the machine ("half the cores, at least 1", "`nproc` + 1")
are checked on several core counts; a new phrase must be taught to ``PHRASES`` below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE_COUNTS = (1, 2, 3, 8, 64)
#: set by scripts/classroom.sh for its own workers, or by the launcher for its prefetch child; not by whoever starts the server
INTERNAL = {"AP_WORKER_ID", "AP_PREFETCH_PARENT"}
#: read by the test command (scripts/test.sh), not by a server: the README's "Run the tests" names it instead
TEST_COMMAND = {"AP_TEST_WORKERS"}

#: the table's words for a default → the value it means on a machine with ``cores`` cores
PHRASES = {
    "half the cores, at least 1": lambda cores: max(1, cores // 2),
    "`nproc` + 1": lambda cores: cores + 1,
    "empty: off": lambda cores: (),
    "`on`": lambda cores: True,
    "`data/` in the checkout": lambda cores: ROOT / "data",
    "empty: SQLite": lambda cores: None,
}


def documented() -> dict[str, str]:
    """Variable → its default as the README's Server settings table writes it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Server settings", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `AP_")]
    table = {}
    for row in rows:
        names_cell, default_cell = [cell.strip() for cell in row.strip("|").split(" | ")[:2]]
        names = re.findall(r"`(AP_[A-Z_]+)`", names_cell)
        defaults = [default_cell] if len(names) == 1 else [d.strip() for d in default_cell.split(", ")]
        assert len(defaults) == len(names), row
        table.update(zip(names, defaults))
    return table


def meaning(text: str, cores: int):
    """What a default cell means: a number, or one of ``PHRASES``, or a literal in backquotes."""
    if re.fullmatch(r"[\d.]+", text):
        return float(text)
    if text in PHRASES:
        return PHRASES[text](cores)
    if quoted := re.fullmatch(r"`([^`]+)`", text):
        return quoted.group(1)
    raise AssertionError(f"the README's default {text!r} is not a number or a phrase this test knows")


def variables_read() -> set[str]:
    """Every ``AP_*`` name in the server's code and scripts."""
    files = [*ROOT.glob("engine/**/*.py"), *ROOT.glob("app/**/*.py"), *ROOT.glob("scripts/*.sh")]
    names = {name for path in files for name in re.findall(r"\bAP_[A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8"))}
    return names - INTERNAL - TEST_COMMAND


def classroom_fallbacks(cores: int) -> dict[str, object]:
    """``AP_WORKERS`` and ``AP_BIND`` when unset, from scripts/classroom.sh's ``${VAR:-fallback}``."""
    script = (ROOT / "scripts" / "classroom.sh").read_text(encoding="utf-8")
    workers = re.search(r'"\$\{AP_WORKERS:-\$\(\( \$\(nproc\) \+ (\d+) \)\)\}"', script)
    bind = re.search(r'"\$\{AP_BIND:-([^}]+)\}"', script)
    assert workers and bind, "classroom.sh no longer spells its fallbacks as this test reads them"
    return {"AP_WORKERS": cores + int(workers.group(1)), "AP_BIND": bind.group(1)}


def code_defaults(cores: int) -> dict[str, object]:
    """What the code uses with no ``AP_*`` variable set, on a machine with ``cores`` cores."""
    import engine.job_limits
    from app import launch, store
    from app.runtime import caches
    from engine.policy import GB, ServerPolicy

    policy = ServerPolicy.from_env({})
    values = {
        "AP_TRACE_CACHE_MB": float(caches._cache_budget_mb()),
        "AP_LONG_JOBS": engine.job_limits.default_workers(),
        "AP_TRAIN_MAX_JOBS": engine.job_limits.default_workers(),  # the old name of AP_LONG_JOBS
        "AP_TRAIN_MAX_SECONDS": float(engine.job_limits.default_max_seconds()),
        "AP_MODEL_DIRS": policy.model_dirs,
        "AP_HUB": policy.hub,
        "AP_HUB_MAX_GB": policy.hub_max_bytes / GB,
        "AP_DATABASE_URL": store.settings({})[0],
        "AP_DATA_DIR": store.settings({})[1],
        "AP_PREFETCH": launch.prefetch_on({}),
    }
    return values | classroom_fallbacks(cores)


def test_the_table_lists_every_variable_the_server_reads():
    assert set(documented()) == variables_read()


def test_the_test_commands_own_settings_are_in_the_readmes_test_section():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run the tests", 1)[1].split("\n## ", 1)[0]
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert TEST_COMMAND == set(re.findall(r"\bAP_[A-Z_]*[A-Z]\b", script))
    assert all(f"`{name}`" in section for name in TEST_COMMAND), section


@pytest.mark.parametrize("cores", CORE_COUNTS)
def test_each_documented_default_is_the_codes(cores, monkeypatch):
    import engine.job_limits

    for name in variables_read():
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(engine.job_limits, "cores", lambda: cores)
    actual = code_defaults(cores)
    for name, text in documented().items():
        assert name in actual, f"{name}: the test does not know where the code keeps its default"
        assert meaning(text, cores) == actual[name], f"{name}: README says {text!r}, the code uses {actual[name]!r}"
