"""Who may import or call whom: pages hold plain data, and the engine's layers do not import in circles.

- ``app/ui`` is render-only (arrays and records in, elements out): it imports no ``app.runtime``, ``app.views`` or
  ``app.store``; the shared widgets that read session state and call the runtime live in ``app/controls``.
- ``app/views``, ``app/controls`` and ``app/ui`` get a model's :class:`engine.records.ModelCard` from
  ``runtime.models.get_card``; the torch-backed, shared ``Model`` stays inside the gateway: ``app/runtime`` and each
  page folder's data modules (``data.py``, ``*_data.py``: the page's cached calls into the engine).
- ``engine.families`` (the networks, adapters and loaders) never imports ``engine.training`` (which trains
  them); the shared pieces (vocabularies, toy corpora, the checkpoint format, the family table) are neutral.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PAGES = ("app/views", "app/controls", "app/ui")


def is_gateway(module: str) -> bool:
    """``app.runtime`` and a page folder's data modules: the app's only way to the engine's models."""
    leaf = module.rpartition(".")[2]
    return module.startswith("app.runtime") or (
        module.startswith("app.views.") and (leaf == "data" or leaf.endswith("_data"))
    )


def _page_files(repo_root: Path) -> list[Path]:
    files = (f for folder in PAGES for f in (repo_root / folder).rglob("*.py"))
    return sorted(f for f in files if not is_gateway(_module_name(repo_root, f)))


def _model_calls_and_imports(path: Path) -> list[str]:
    """``get_model`` named anywhere (a call, an attribute, an import) and any torch import, with line numbers."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr == "get_model":
            found.append(f"{node.lineno}: .get_model")
        elif isinstance(node, ast.Name) and node.id == "get_model":
            found.append(f"{node.lineno}: get_model")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "torch"]
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] == "torch":
                found.append(f"{node.lineno}: from {node.module}")
            found += [f"{node.lineno}: import get_model" for a in node.names if a.name == "get_model"]
    return found


def test_scanner_finds_get_model_and_torch(tmp_path) -> None:
    src = tmp_path / "page.py"
    src.write_text(
        "from app import services\nimport torch.nn\nfrom app.runtime.models import get_model\n"
        "m = services.get_model('x')\n"
    )
    assert _model_calls_and_imports(src) == ["2: import torch.nn", "3: import get_model", "4: .get_model"]


def test_pages_receive_the_card_not_the_model(repo_root: Path) -> None:
    files = _page_files(repo_root)
    assert files
    offenders = {str(f.relative_to(repo_root)): hits for f in files if (hits := _model_calls_and_imports(f))}
    assert not offenders, f"pages must use runtime.models.get_card (a ModelCard), never get_model or torch: {offenders}"


# ---- the model families and engine.training ----------------------------------------------------------
_PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("engine."))))
"""


def _engine_modules_after_importing(repo_root: Path, modules: list[str]) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *modules], cwd=repo_root, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _family_modules() -> list[str]:
    import engine.families

    return [m.name for m in pkgutil.walk_packages(engine.families.__path__, "engine.families.")]


def test_families_never_import_training(repo_root: Path) -> None:
    """Every family module (network, adapter, loader) imports without ``engine.training``: families load
    checkpoints through the neutral ``engine.checkpoint`` and read words with ``engine.vocab``/``engine.corpora``."""
    names = _family_modules()
    assert "engine.families.bahdanau" in names and "engine.families.vit.network" in names
    loaded = _engine_modules_after_importing(repo_root, names)
    assert "engine.families.own" in loaded and not [m for m in loaded if m.startswith("engine.training")]


def test_shared_pieces_import_neither_families_nor_training(repo_root: Path) -> None:
    """The format, the family table, vocabularies, corpora and the catalog sit below both (training, which
    trains our models, may import a family's network; the reverse is what this file forbids)."""
    shared = ["engine.checkpoint", "engine.families", "engine.vocab", "engine.corpora", "engine.registry"]
    loaded = _engine_modules_after_importing(repo_root, shared)
    assert "engine.families" in loaded
    assert not [m for m in loaded if m.startswith(("engine.training", "engine.families."))]


def test_no_family_file_names_training_even_lazily(repo_root: Path) -> None:
    """A grep, for imports inside functions that the probe above cannot see."""
    offenders = [
        str(f.relative_to(repo_root))
        for f in sorted((repo_root / "engine/families").rglob("*.py"))
        if "engine.training" in f.read_text(encoding="utf-8")
    ]
    assert not offenders, offenders


# ---- what an import pulls in ---------------------------------------------------------------------------
# A static import graph of app/ and engine/: every import statement (inside functions too, since a page's
# function runs on the server; not under ``if TYPE_CHECKING:``), ``from a import b`` counting a.b when that
# is a module, and a module's packages counting too (importing a.b.c runs a/__init__ and a/b/__init__).
# Pages reach the engine only through the gateway (``is_gateway``): the walk does not go on through it. In the engine
# only imports at module level count: a page may name the engine's types and plain functions (the catalog,
# token limits), which import torch inside the functions that run a model.
EAGER_ONLY = ("engine",)
HEAVY = {"torch", "transformers", "safetensors", "tokenizers"}


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST, module: str, is_package: bool, known: set[str], lazy: bool = True) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if not lazy and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    with_parents = set()
    for name in found:
        parts = name.split(".")
        with_parents.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return with_parents - {""}


def import_graph(root: Path, folders: tuple[str, ...] = ("app", "engine")) -> dict[str, set[str]]:
    files = {_module_name(root, f): f for folder in folders for f in sorted((root / folder).rglob("*.py"))}
    known = set(files)
    return {
        name: _imported(
            ast.parse(f.read_text(encoding="utf-8")),
            name,
            f.name == "__init__.py",
            known,
            lazy=not name.startswith(EAGER_ONLY),
        )
        for name, f in files.items()
    }


def reachable(graph: dict[str, set[str]], start: str, stop=lambda name: False) -> dict[str, str]:
    """Every module ``start`` pulls in (ours and outside ones), each with the module that imported it."""
    seen: dict[str, str] = {start: ""}
    todo = [start]
    while todo:
        name = todo.pop()
        if name != start and stop(name):
            continue
        for dep in graph.get(name, ()):
            if dep not in seen:
                seen[dep] = name
                todo.append(dep)
    return seen


def _path_to(seen: dict[str, str], name: str) -> str:
    chain = [name]
    while seen[chain[-1]]:
        chain.append(seen[chain[-1]])
    return " ← ".join(chain)


def test_the_graph_sees_lazy_imports_and_stops_at_the_gateway(tmp_path: Path) -> None:
    (tmp_path / "app" / "views" / "x").mkdir(parents=True)
    for init in ("app", "app/views", "app/views/x"):
        (tmp_path / init / "__init__.py").write_text("")
    (tmp_path / "app" / "views" / "x" / "data.py").write_text("import torch\n")
    (tmp_path / "app" / "views" / "x" / "page.py").write_text(
        "from typing import TYPE_CHECKING\nfrom app.views.x import data\nfrom . import helper\n"
        "if TYPE_CHECKING:\n    import safetensors\n"
    )
    (tmp_path / "app" / "views" / "x" / "helper.py").write_text("def f():\n    import transformers.models\n")
    graph = import_graph(tmp_path, ("app",))
    seen = reachable(graph, "app.views.x.page", stop=is_gateway)
    assert "app.views.x.helper" in seen and "transformers" in seen  # a lazy import two steps away
    assert "safetensors" not in seen  # annotations only
    assert "app.views.x.data" in seen and "torch" not in seen  # the gateway is reached, not walked through
    assert _path_to(seen, "transformers") == "transformers ← app.views.x.helper ← app.views.x.page"


@pytest.fixture(scope="module")
def graph(repo_root: Path) -> dict[str, set[str]]:
    return import_graph(repo_root)


def test_pages_pull_in_no_torch_except_through_the_gateway(graph: dict[str, set[str]]) -> None:
    """app/views, app/ui and app's own modules (URL, state, routes) never reach torch or transformers, even
    through an engine module: only the gateway (``app.runtime``, the pages' data modules) runs models."""
    pages = [m for m in graph if m.startswith("app") and not is_gateway(m)]
    assert "app.views.explore.page" in pages and "app.ui.map_data" in pages
    offenders = {}
    for page in pages:
        seen = reachable(graph, page, stop=is_gateway)
        offenders.update({page: _path_to(seen, heavy) for heavy in sorted(HEAVY & set(seen))})
    assert not offenders, offenders


def test_the_gateway_never_imports_what_draws(graph: dict[str, set[str]]) -> None:
    """The gateway holds data and caches; what draws it (a module of app/ui or app/views that imports streamlit or
    plotly) sits above it. Plain data beside a page (a lesson file's parser, a page's keys and URL parameters) may
    be read by the gateway."""
    drawing = {
        m
        for m, deps in graph.items()
        if m.startswith(("app.ui", "app.controls", "app.views"))
        and not (is_gateway(m) or m.endswith(".keys"))
        and {"streamlit", "plotly"} & deps
    }
    offenders = {}
    for service in (m for m in graph if is_gateway(m)):
        seen = reachable(graph, service)
        offenders.update({service: _path_to(seen, m) for m in seen if m in drawing})
    assert not offenders, offenders


def test_map_data_is_plain_numpy(graph: dict[str, set[str]]) -> None:
    """What the gateway caches and figures draw (``map_data`` modules): no Streamlit, Plotly or torch."""
    modules = [m for m in graph if m.endswith(".map_data")]
    assert len(modules) == 2, modules
    for module in modules:
        seen = reachable(graph, module)
        assert not {"streamlit", "plotly"} & set(seen), (module, sorted(seen))
        assert not HEAVY & set(seen), {h: _path_to(seen, h) for h in HEAVY & set(seen)}


def test_engine_never_reaches_streamlit(graph: dict[str, set[str]]) -> None:
    for module in (m for m in graph if m.startswith("engine")):
        seen = reachable(graph, module)
        assert "streamlit" not in seen, _path_to(seen, "streamlit")


# ---- no import circles, no private names imported across modules ------------------------------------------
# Every import statement counts, wherever it is (at the top, inside a function, under ``if TYPE_CHECKING:``): a
# circle held together by a lazy import is still a circle. An import names the deepest module of ours it reaches
# (``from engine.traces import overview`` names ``engine.traces.overview``, ``from engine.records import Tokens``
# names ``engine.records``); the packages above it, which Python runs first, are not counted.
NO_CIRCLES = ("engine", "app")


@dataclass(frozen=True)
class Import:
    module: str  # the module the statement is in
    line: int
    target: str  # the module of ours it names
    name: str | None  # the name it takes from ``target`` (None: the module itself)


def _deepest(name: str, known: set[str]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(root: Path, folders: tuple[str, ...]) -> list[Import]:
    """Every import of one of our modules by a module under ``folders``."""
    files = {_module_name(root, f): f for folder in folders for f in sorted((root / folder).rglob("*.py"))}
    known = set(files)
    found = []
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                found += [Import(module, node.lineno, t, None) for a in node.names if (t := _deepest(a.name, known))]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, one level up per dot after the first
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                for a in node.names:
                    if f"{base}.{a.name}" in known:
                        found.append(Import(module, node.lineno, f"{base}.{a.name}", None))
                    elif target := _deepest(base, known):
                        found.append(Import(module, node.lineno, target, a.name))
    return found


def circles(imports: list[Import]) -> list[list[str]]:
    """Groups of two or more modules that each reach the others through imports (the graph's cycles)."""
    edges: dict[str, set[str]] = {}
    for i in imports:
        if i.target != i.module:
            edges.setdefault(i.module, set()).add(i.target)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for dep in edges.get(todo.pop(), ()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    reached = {m: reach(m) for m in edges}
    groups = {frozenset({m} | {n for n in reached[m] if m in reached.get(n, ())}) for m in edges}
    return sorted(sorted(g) for g in groups if len(g) > 1)


def private_imports(imports: list[Import]) -> list[str]:
    """``from a import _x`` in a module other than ``a`` (dunder names such as ``__version__`` are public)."""
    return [
        f"{i.module}:{i.line} {i.name} from {i.target}"
        for i in imports
        if i.name and i.name.startswith("_") and not i.name.startswith("__") and i.target != i.module
    ]


def test_the_scanner_finds_circles_and_private_names_however_they_are_imported(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from pkg.a import run\n",  # a package importing its child: no circle by itself
        "a.py": "def run():\n    from pkg import b\n    return b\n",  # lazy, inside a function
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import run\n",  # annotations only
        "c.py": "import pkg.a\nfrom pkg.a import _helper, __doc__\nfrom .sub import _d\nfrom os import _exit\n",
        "sub/__init__.py": "",
        "sub/d.py": "from .. import c\nfrom ..c import _private\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    imports = imports_of(tmp_path, ("pkg",))
    assert Import("pkg.a", 2, "pkg.b", None) in imports and Import("pkg.sub.d", 1, "pkg.c", None) in imports
    assert circles(imports) == [["pkg.a", "pkg.b"]]
    assert private_imports(imports) == [
        "pkg.c:2 _helper from pkg.a",
        "pkg.c:3 _d from pkg.sub",
        "pkg.sub.d:2 _private from pkg.c",
    ]


@pytest.fixture(scope="module")
def our_imports(repo_root: Path) -> list[Import]:
    return imports_of(repo_root, NO_CIRCLES)


def test_no_import_circles(our_imports: list[Import]) -> None:
    """Modules import downwards only: a piece two modules share sits below both, never in one of them."""
    assert len({i.module for i in our_imports}) > 80
    assert not circles(our_imports)


def test_no_private_names_imported_across_modules(our_imports: list[Import]) -> None:
    """A name another module needs is public (no leading ``_``); a private name stays in its module."""
    assert not private_imports(our_imports)


# ---- app/ui draws what it is given ----------------------------------------------------------------------
RENDER_ONLY = "app.ui"
UPSTAIRS = (
    "app.runtime",
    "app.views",
    "app.store",
    "app.controls",
)  # what a render-only module never imports, even lazily


def test_ui_is_render_only(our_imports: list[Import]) -> None:
    """``app/ui`` takes arrays and records and draws them; what reads the runtime, a page or the store is a control
    (``app/controls``) or the page's own."""
    offenders: dict[str, list[str]] = {}
    for i in our_imports:
        if i.module.startswith(RENDER_ONLY + ".") and i.target.startswith(UPSTAIRS):
            offenders.setdefault(i.module, []).append(f"{i.line}: {i.target}")
    assert "app.controls.pickers" in {i.module for i in our_imports}
    assert not offenders, offenders
