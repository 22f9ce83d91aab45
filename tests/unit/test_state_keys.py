"""Issue 20, item 1: every session key is declared once, in ``app/state.py``.

Every module of ``app/`` names its keys through ``app.state`` (``K``, ``Bahdanau``, ...), never as string
literals: a ``key="…"`` / ``key=f"…"`` argument, a ``st.session_state["…"]`` subscript, a ``*_KEY = "…"``
constant, or a module's own string constant used as a session key (``SEEN = "_page_seen"``) fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app import state
from app.url_params import PARAMS

ROOT = Path(__file__).resolve().parents[2]
#: every module of the app (state.py declares the keys)
DECLARED_ONCE = tuple(sorted(str(p.relative_to(ROOT)) for p in (ROOT / "app").rglob("*.py")))
KEY_CLASSES = (
    state.K,
    state.Bahdanau,
    state.Vit,
    state.Captions,
    state.Positional,
    state.Step,
    state.Heads,
    state.Pretraining,
    state.Bertviz,
    state.Lessons,
    state.Train,
    state.Examples,
    state.ROOM,
    state.Draft,
    state.Explain,
    state.Scaling,
    state.Explore,
    state.Look,
    state.Share,
    state.Offline,
    state.Url,
)


def _names(cls) -> dict[str, str]:
    return {name: value for name, value in vars(cls).items() if not name.startswith("_") and isinstance(value, str)}


def _literal(node: ast.AST) -> bool:
    """A string written in place: "…" or an f-string that starts with text (``f"{Heads.cmp}{name}"`` or
    ``f"{prefix}_head"``, a prefix passed in from app.state, are not)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.JoinedStr):
        return not (node.values and isinstance(node.values[0], ast.FormattedValue))
    return False


def _is_state(node: ast.AST) -> bool:
    text = ast.unparse(node)
    return "session_state" in text or text == "state"


def _session_reads(tree: ast.AST) -> set[str]:
    """Names used as a session key: ``st.session_state[NAME]``, ``st.session_state.get(NAME)`` (or ``state``, a
    local name for it), ``.setdefault`` / ``.pop`` alike."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_state(node.value):
            key = node.slice
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "setdefault", "pop")
            and _is_state(node.func.value)
            and node.args
        ):
            key = node.args[0]
        else:
            continue
        if isinstance(key, ast.Name):
            names.add(key.id)
    return names


def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    keys = _session_reads(tree)
    for node in tree.body:  # a module's own constant used as a session key (``SEEN = "_page_seen"``)
        if isinstance(node, ast.Assign) and _literal(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in keys:
                    found.append(f"line {node.lineno}: {target.id} = {ast.unparse(node.value)} (a session key)")
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "key" and _literal(node.value):
            found.append(f"line {node.value.lineno}: key={ast.unparse(node.value)}")
        if isinstance(node, ast.Subscript) and "session_state" in ast.unparse(node.value) and _literal(node.slice):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Assign) and _literal(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.endswith("_KEY"):
                    found.append(f"line {node.lineno}: {target.id} = {ast.unparse(node.value)}")
    return found


@pytest.mark.parametrize("relative", DECLARED_ONCE)
def test_moved_pages_name_their_keys_through_app_state(relative):
    assert _offences(ROOT / relative) == [], f"{relative} writes keys in place; declare them in app/state.py"


def test_a_key_is_declared_once():
    seen: dict[str, str] = {}
    for cls in KEY_CLASSES:
        for name, value in _names(cls).items():
            assert value not in seen, f"{cls.__name__}.{name} repeats {seen.get(value)}: {value!r}"
            seen[value] = f"{cls.__name__}.{name}"


@pytest.mark.parametrize(
    "cls,page,local",
    [(state.Bahdanau, "bahdanau", ()), (state.Vit, "vit", (state.Vit.discard_rule,)), (state.Captions, "captions", ())],
)
def test_a_pages_links_use_its_declared_keys_and_defaults(cls, page, local):
    """The URL table takes a moved page's parameter names and defaults from its key class (``local``: kept in
    the session but not in links)."""
    carried = {p.name: p.default for p in PARAMS if page in (p.pages or ())}
    assert carried == {k: v for k, v in cls.DEFAULTS.items() if k not in local}
    assert set(carried) <= set(_names(cls).values())
    for name, options in getattr(cls, "OPTIONS", {}).items():
        param = next(p for p in PARAMS if p.name == name)
        assert [param.read(o) for o in options] == list(options), "every option a link may name is read back"


def test_the_positional_tab_parameter_is_the_declared_key():
    assert [p.name for p in PARAMS if "positional" in (p.pages or ()) and p.name.startswith("pos_")] == [
        state.Positional.tab
    ]


def test_step_by_step_parameters_are_its_declared_keys():
    names = [p.name for p in PARAMS if p.pages == frozenset({"step_by_step"})]
    assert names == [state.Step.block, state.Step.query]


def test_heads_parameters_are_its_declared_keys():
    names = [p.name for p in PARAMS if p.pages == frozenset({"heads"})]
    assert names == [state.Heads.block, state.Heads.tab]
