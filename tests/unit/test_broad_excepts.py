"""Every ``except Exception`` (or ``BaseException``) in app/ and engine/ says why it is broad (issue 20, 3).

A broad handler either hands the error on (a bare ``raise`` in its body: roll back, then re-raise) or carries
``# noqa: BLE001 — <reason>`` on its line: why no narrower error will do (a page section whose model run may
raise anything, a worker thread that must report instead of dying, …). Where the narrower error is known, name it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BROAD = {"Exception", "BaseException"}
REASON = "# noqa: BLE001 —"


def _names(node: ast.expr | None) -> set[str]:
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Tuple):
        return {n for e in node.elts for n in _names(e)}
    return set()


def _re_raises(handler: ast.ExceptHandler) -> bool:
    return any(isinstance(stmt, ast.Raise) and stmt.exc is None for stmt in handler.body)


def unexplained(source: str) -> list[int]:
    """Line numbers of broad handlers (a bare ``except:`` too) that neither re-raise nor give a reason."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ExceptHandler):
            continue
        if node.type is not None and not _names(node.type) & BROAD:
            continue
        line = lines[node.lineno - 1]
        reason = line.partition(REASON)[2].strip()
        if not _re_raises(node) and len(reason) < 10:
            found.append(node.lineno)
    return found


def test_the_rule_finds_an_unexplained_handler():
    bare = "try:\n    f()\nexcept Exception:  # noqa: BLE001\n    pass\n"
    explained = (
        "try:\n    f()\nexcept Exception:  # noqa: BLE001 — a worker thread reports instead of dying\n    pass\n"
    )
    re_raised = "try:\n    f()\nexcept BaseException:\n    undo()\n    raise\n"
    narrow = "try:\n    f()\nexcept ValueError:\n    pass\n"
    in_tuple = "try:\n    f()\nexcept (OSError, Exception):\n    pass\n"
    assert unexplained(bare) == [3]
    assert unexplained(in_tuple) == [3]
    assert unexplained(explained) == unexplained(re_raised) == unexplained(narrow) == []


def test_every_broad_except_in_app_and_engine_says_why():
    offenders = {
        f"{path.relative_to(ROOT)}:{line}"
        for folder in ("app", "engine")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in unexplained(path.read_text(encoding="utf-8"))
    }
    assert not offenders, sorted(offenders)
