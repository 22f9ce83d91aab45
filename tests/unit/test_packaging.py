"""The project as a package (pyproject.toml): what ``pip install -e .`` would install, read without installing, and
one wheel built and installed into a scratch environment (``pip install .``).

setuptools reads pyproject.toml here exactly as a build would (package discovery, the dependencies read
from requirements.txt), so these checks see the real metadata: engine/ and app/ with every subpackage,
the ``attention-playground`` command, and the pinned requirements, torch exactly 2.13.0 with nothing
installed asking for another.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import threading
import tomllib
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from setuptools.config.pyprojecttoml import read_configuration

ROOT = Path(__file__).resolve().parents[2]
TORCH = "2.13.0"


@pytest.fixture(scope="module")
def config() -> dict:
    """pyproject.toml as setuptools expands it for a build (dynamic fields filled in, packages found)."""
    return read_configuration(ROOT / "pyproject.toml")


def _requirements(path: Path) -> list[str]:
    """Requirement lines of a requirements file: no comments, blanks or ``-r`` includes."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("-")]


# ---- the package and its command ---------------------------------------------------------------------


def test_the_package_holds_engine_and_app_with_every_subpackage(config):
    packages = set(config["tool"]["setuptools"]["packages"])
    assert {"engine", "app"} <= packages
    # every folder of Python files under engine/ and app/ is a package that ships (an __init__.py missing
    # would drop it from a regular install, and only that)
    folders = {path.parent for top in ("engine", "app") for path in (ROOT / top).rglob("*.py")}
    expected = {".".join(folder.relative_to(ROOT).parts) for folder in folders if "__pycache__" not in folder.parts}
    assert expected <= packages, sorted(expected - packages)
    assert not {p for p in packages if p.split(".")[0] not in ("engine", "app")}, packages  # no tests, bench
    assert config["project"]["name"] == "attention-playground"


def test_the_console_command_resolves_to_the_launcher(config):
    target = config["project"]["scripts"]["attention-playground"]
    module_name, _, attribute = target.partition(":")
    launcher = getattr(importlib.import_module(module_name), attribute)
    assert callable(launcher)
    launch = sys.modules[module_name]
    assert launch.ENTRY_POINT == ROOT / "app" / "streamlit_app.py" and launch.ENTRY_POINT.is_file()


def test_the_command_runs_streamlit_on_the_entry_point_with_its_arguments(monkeypatch, tmp_path):
    """``attention-playground --server.port 8502`` = ``streamlit run <checkout>/app/streamlit_app.py
    --server.port 8502``, run from the checkout's root so its .streamlit/config.toml applies."""
    from streamlit.web import cli

    from app import launch

    seen = {}
    monkeypatch.setenv("AP_PREFETCH", "0")  # no child process here (the next test checks it is started)
    monkeypatch.setattr(cli, "main", lambda: seen.update(argv=list(sys.argv), cwd=Path.cwd()))
    monkeypatch.setattr(sys, "argv", ["attention-playground", "--server.port", "8502", "--server.headless", "true"])
    monkeypatch.chdir(tmp_path)  # somewhere else, as a user's shell would be
    launch.main()
    assert seen["argv"] == [
        "streamlit",
        "run",
        str(ROOT / "app" / "streamlit_app.py"),
        "--server.port",
        "8502",
        "--server.headless",
        "true",
    ]
    assert seen["cwd"] == ROOT and (ROOT / ".streamlit" / "config.toml").is_file()


def test_the_command_starts_the_landing_pages_prefetch_before_streamlit(monkeypatch):
    """The launcher starts the child process first, then tells it the landing page's request; ``AP_PREFETCH=0``
    (and a one-core machine) starts none. ``python -m app`` is the same launcher."""
    from streamlit.web import cli

    from app import launch
    from app.state import landing_request
    from engine import prefetch

    events = []

    class Child:
        def send(self, *request):
            events.append(("send", request))

    monkeypatch.setattr(prefetch, "start", lambda: events.append("start") or Child())
    monkeypatch.setattr(cli, "main", lambda: events.append("streamlit"))
    monkeypatch.setattr(sys, "argv", ["attention-playground"])
    monkeypatch.setattr(launch.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("AP_PREFETCH", raising=False)
    launch.main()
    assert events == ["start", ("send", landing_request()), "streamlit"]

    events.clear()
    for off in ("0", "off", "false"):
        monkeypatch.setenv("AP_PREFETCH", off)
        launch.main()
    monkeypatch.delenv("AP_PREFETCH")
    monkeypatch.setattr(launch.os, "cpu_count", lambda: 1)
    launch.main()
    assert events == ["streamlit"] * 4

    import runpy

    monkeypatch.setattr(launch, "main", lambda: events.append("python -m app"))
    runpy.run_module("app", run_name="__main__")
    assert events[-1] == "python -m app"


# ---- dependencies --------------------------------------------------------------------------------------


def test_the_package_depends_on_exactly_requirements_txt(config):
    pinned = _requirements(ROOT / "requirements.txt")
    assert config["project"]["dependencies"] == pinned
    for line in pinned:
        req = Requirement(line)
        assert len(req.specifier) == 1 and next(iter(req.specifier)).operator == "==", f"not pinned: {line}"
    assert f"torch=={TORCH}" in pinned


def test_test_requirements_include_the_app_and_pin_the_linter():
    lines = (ROOT / "requirements-test.txt").read_text(encoding="utf-8").splitlines()
    assert "-r requirements.txt" in lines
    tools = {Requirement(line).name: line for line in _requirements(ROOT / "requirements-test.txt")}
    assert re.fullmatch(r"ruff==[\d.]+", tools.get("ruff", "")), tools


def test_the_dockerfile_installs_the_same_torch():
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.findall(r"torch==([\d.]+)", dockerfile) == [TORCH]


def test_nothing_installed_asks_for_another_torch():
    """Walk the installed dependencies of requirements.txt: every one that names torch accepts 2.13.0."""
    todo, seen, torch_wants = [Requirement(r) for r in _requirements(ROOT / "requirements.txt")], set(), []
    while todo:
        req = todo.pop()
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{req.name} is not installed: run python3 -m pip install -r requirements-test.txt")
        for line in dist.requires or []:
            dep = Requirement(line)
            if dep.marker is not None and not dep.marker.evaluate({"extra": ""}):
                continue  # an optional extra nobody here asks for
            if dep.name.lower() == "torch":
                torch_wants.append(f"{dist.metadata['Name']}: {line}")
                assert dep.specifier.contains(TORCH, prereleases=True), f"{dist.metadata['Name']} wants {line}"
            todo.append(dep)
    assert Requirement(f"torch=={TORCH}").specifier.contains(metadata.version("torch"))  # 2.13.0+cpu matches
    assert torch_wants, "no dependency names torch: the walk did not reach the installed metadata"


def test_pyproject_sets_the_line_length_the_code_uses():
    ruff = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]
    assert ruff["line-length"] == 120
    # nearly every line of the hand-formatted code fits (the formatter will fold the rest)
    lines = [
        len(line) for path in ROOT.glob("engine/**/*.py") for line in path.read_text(encoding="utf-8").splitlines()
    ]
    assert sum(n <= ruff["line-length"] for n in lines) / len(lines) > 0.98


def test_the_formatter_is_never_switched_off():
    """pyproject's rule: ``ruff format`` lays out the whole tree, so no line opts out of it."""
    markers = ("# fmt: " + "skip", "# fmt: " + "off")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("app", "engine", "tests", "bench", "scripts")
        for path in (ROOT / folder).rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(marker in line for marker in markers)
    ]
    assert not found, found


def test_the_test_command_lints_with_the_projects_rules():
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert "python3 -m ruff check ." in script and "-r requirements-test.txt" in script
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert {"E", "F", "W", "I"} <= set(lint["select"])  # pycodestyle, pyflakes, import order


def test_the_server_runs_its_event_loop_on_uvloop():
    """requirements.txt brings uvloop so that Streamlit's server loop (every rerun's ~30 messages: a wake-up from the
    script thread and a socket write each) runs on it: Streamlit's own start-up function picks it when importable."""
    import asyncio

    from streamlit.web import bootstrap

    assert any(Requirement(line).name == "uvloop" for line in _requirements(ROOT / "requirements.txt"))
    seen = []

    async def main() -> None:
        seen.append(type(asyncio.get_running_loop()))

    # in a thread of its own, as a server's loop has its thread to itself (the suite's browser tests leave a loop
    # running in the main thread: Playwright's sync API)
    thread = threading.Thread(target=lambda: bootstrap._run_server_loop(main()))
    thread.start()
    thread.join(30)
    assert seen and seen[0].__module__.startswith("uvloop"), seen


def test_a_wheel_install_runs_the_engine_with_its_checkpoints_and_view(tmp_path):
    """``pip install .`` (not ``-e``): the wheel's engine, away from the checkout, loads a shipped checkpoint from
    the installed assets and draws the notebook view from its installed script."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp_path, ROOT],
        check=True,
        capture_output=True,
    )
    venv.create(tmp_path / "env", system_site_packages=True, with_pip=False)  # torch and the rest from here
    python = tmp_path / "env" / "bin" / "python"
    wheel = next(tmp_path.glob("attention_playground-*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel],
        check=True,
        capture_output=True,
    )
    script = (
        "import base64, engine, engine.registry, engine.views, engine.views.layer_view as lv\n"
        "trace = engine.trace(engine.load('tiny-gpt-stories'), 'Lily found a ball.')\n"
        "inlined = 'export default' in lv.JS and base64.b64encode(lv.JS.encode()).decode() in engine.views.show(trace)._repr_html_()\n"
        "print(engine.__file__, engine.registry.ASSETS, trace.n_layers, inlined)\n"
    )
    out = subprocess.run(
        [python, "-c", script], cwd=tmp_path, check=True, capture_output=True, text=True
    ).stdout.split()
    env = str(tmp_path / "env")
    assert out[0].startswith(env) and out[1].startswith(env) and out[2:] == ["3", "True"]
