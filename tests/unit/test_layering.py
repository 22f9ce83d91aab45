"""Who may import or call whom: pages hold plain data, and the engine's layers do not import in circles.

- ``app/views`` and ``app/components`` get a model's :class:`engine.types.ModelCard` from
  ``services.get_card``; the torch-backed, shared ``Model`` stays inside ``app/services``.
- ``engine.models`` (the networks) never imports ``engine.training`` (which trains them); the shared
  pieces (vocabularies, toy corpora, the checkpoint format, the family records) are neutral modules.
"""

from __future__ import annotations

import ast
import json
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
