"""Who may import or call whom: pages hold plain data, and the engine's layers do not import in circles.

- ``app/views`` and ``app/components`` get a model's :class:`engine.types.ModelCard` from
  ``services.get_card``; the torch-backed, shared ``Model`` stays inside ``app/services``.
- ``engine.models`` (the networks) never imports ``engine.training`` (which trains them); the shared
  pieces (vocabularies, toy corpora, the checkpoint format, the family records) are neutral modules.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

PAGES = ("app/views", "app/components")


def _page_files(repo_root: Path) -> list[Path]:
    return sorted(f for folder in PAGES for f in (repo_root / folder).rglob("*.py"))


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
    src.write_text("from app import services\nimport torch.nn\nfrom app.services.core import get_model\n"
                   "m = services.get_model('x')\n")  # fmt: skip
    assert _model_calls_and_imports(src) == ["2: import torch.nn", "3: import get_model", "4: .get_model"]


def test_pages_receive_the_card_not_the_model(repo_root: Path) -> None:
    files = _page_files(repo_root)
    assert files
    offenders = {str(f.relative_to(repo_root)): hits for f in files if (hits := _model_calls_and_imports(f))}
    assert not offenders, f"pages must use services.get_card (a ModelCard), never get_model or torch: {offenders}"


# ---- engine.models and engine.training ---------------------------------------------------------------
_PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted({m.split(".")[0] + "." + m.split(".")[1] for m in sys.modules
                         if m.startswith(("engine.models", "engine.training")) and m.count(".") >= 1})))
"""


def _packages_after_importing(repo_root: Path, modules: list[str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, *modules], cwd=repo_root, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_models_never_import_training(repo_root: Path) -> None:
    """Every model file imports without ``engine.training``: models load checkpoints through the neutral
    ``engine.checkpoint``/``engine.families`` and read words with ``engine.vocab``/``engine.corpora``."""
    import engine.models

    names = [f"engine.models.{m.name}" for m in pkgutil.iter_modules(engine.models.__path__)]
    assert "engine.models.bahdanau" in names and "engine.models.vit" in names
    assert _packages_after_importing(repo_root, names) == ["engine.models"]


def test_shared_pieces_import_neither_models_nor_training(repo_root: Path) -> None:
    """The format, the family records, vocabularies and corpora sit below both (training, which trains
    our models, may import ``engine.models``; the reverse is what this file forbids)."""
    shared = ["engine.checkpoint", "engine.families", "engine.vocab", "engine.corpora", "engine.registry"]
    assert _packages_after_importing(repo_root, shared) == []


def test_no_model_file_names_training_even_lazily(repo_root: Path) -> None:
    """A grep, for imports inside functions that the probe above cannot see."""
    offenders = [str(f.relative_to(repo_root)) for f in sorted((repo_root / "engine/models").rglob("*.py"))
                 if "engine.training" in f.read_text(encoding="utf-8")]  # fmt: skip
    assert not offenders, offenders
