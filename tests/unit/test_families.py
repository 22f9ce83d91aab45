"""The family table (``engine.families``): every family once, own and Hugging Face, and every lookup through it."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
from pathlib import Path
from typing import get_args

import pytest

import engine
import engine.traces
from engine import checkpoint, registry, samples
from engine.corpora.scenes import make_scenes
from engine.families import (
    FAMILIES,
    HUB_TYPES,
    KINDS,
    RECORDS,
    TABLE,
    FamilyRecord,
    hub_labels,
    hub_record,
    resolve,
    text_families,
)
from engine.records import CheckpointError, Family, ModelUnavailableError
from engine.traces import Trace

ROOT = Path(__file__).resolve().parents[2]


def trace_class(name: str) -> type:
    """The class a record's ``trace_type`` names, from the one module of :mod:`engine.traces` that defines it."""
    modules = [importlib.import_module(f"engine.traces.{m.name}") for m in pkgutil.iter_modules(engine.traces.__path__)]
    found = {getattr(m, name) for m in modules if isinstance(getattr(m, name, None), type)}
    assert len(found) == 1, f"{name}: {found}"
    return found.pop()


def test_records_are_unique_and_families_match_the_type() -> None:
    assert len(KINDS) == len(RECORDS) and set(KINDS) == {"transformer", "seq2seq", "rnn-attention", "vit", "captioner"}
    assert FAMILIES == set(get_args(Family))
    for record in RECORDS:
        assert record.families and set(record.families) <= FAMILIES, record.kind


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.kind)
def test_every_named_piece_resolves(record: FamilyRecord) -> None:
    assert callable(resolve(record.builder)) and callable(resolve(record.loader))
    assert hasattr(resolve(record.adapter), "trace")
    trace_type = trace_class(record.trace_type)
    assert hasattr(trace_type, "attention_blocks"), f"{record.trace_type} does not follow engine.traces.Trace"


def _shipped() -> list[tuple[str, dict]]:
    return [
        (path.stem, json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(registry.CHECKPOINTS.glob("*.json"))
    ]


@pytest.mark.parametrize("name, document", _shipped(), ids=lambda v: v if isinstance(v, str) else "")
def test_shipped_checkpoints_load_through_their_record(name: str, document: dict) -> None:
    """Builder, loader, adapter and trace type of each shipped checkpoint's record fit together."""
    record = KINDS[document["kind"]]
    assert document["metadata"]["family"] in record.families
    assert type(record.build(document["model_config"])).__name__  # builds from the stored config
    model = engine.load(name, device="cpu")
    assert isinstance(model.adapter, resolve(record.adapter))
    inputs = {"vit": lambda: samples.digit(0)[0], "captioner": lambda: make_scenes(1, seed=0)[0].image}
    text = inputs.get(record.kind, lambda: "the cat sees the dog")()
    trace = engine.trace(model, text)
    assert type(trace).__name__ == record.trace_type and isinstance(trace, Trace)
    assert trace.model_id == name and trace.family == model.spec.family and trace.device == "cpu"


def test_the_checkpoint_format_knows_exactly_the_recorded_kinds(tmp_path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"format": checkpoint.FORMAT, "kind": "lstm", "model_config": {}}))
    with pytest.raises(
        CheckpointError,
        match=r"unknown model kind 'lstm'; known kinds: \['captioner', 'rnn-attention', "
        r"'seq2seq', 'transformer', 'vit'\]",
    ):
        checkpoint.read_checkpoint_config(tmp_path, "x")


# ---- the one table: own checkpoints and Hugging Face models --------------------------------------------------


def test_every_family_appears_once_in_the_one_table() -> None:
    own = [r.key for r in TABLE if r.source == "own"]
    hub = [r.key for r in TABLE if r.source == "hf"]
    assert len(own) + len(hub) == len(TABLE), "every record is own or Hugging Face"
    assert len(set(own)) == len(own) and len(set(hub)) == len(hub), "a key twice"
    assert len({r.label for r in TABLE}) == len(TABLE), "two families with one name"
    assert tuple(RECORDS) == tuple(r for r in TABLE if r.source == "own") and list(HUB_TYPES) == hub
    assert {f for r in TABLE for f in r.families} == FAMILIES, "a catalog family without a record"
    assert {"bert", "gpt2", "llama", "t5", "marian", "vit", "deit"} <= set(hub)
    for r in TABLE:
        assert r.families and set(r.families) <= FAMILIES, r.key
        assert (r.builder is not None) == (r.source == "own"), r.key
        assert (r.positions is not None) == (r.source == "hf" and r.trace_type == "Seq2SeqTrace"), r.key


@pytest.mark.parametrize("record", [r for r in TABLE if r.source == "hf"], ids=lambda r: r.key)
def test_every_hub_record_names_pieces_that_exist(record: FamilyRecord) -> None:
    assert callable(resolve(record.loader))
    assert hasattr(resolve(record.adapter), "trace"), "an adapter class or a text family's settings"
    assert hasattr(trace_class(record.trace_type), "attention_blocks")
    assert hub_record(record.key) is record and hub_record("lstm") is None
    with pytest.raises(TypeError):
        record.build({})


def _fake_loader(model_id, path, config, *, spec=None, device=None):
    return ("fake", model_id, config["model_type"], spec, device)


def test_the_hub_loader_finds_a_family_only_in_the_table(tmp_path, monkeypatch) -> None:
    """``load_hf`` reads ``config.model_type``, asks the table, and calls that record's loader; an unknown type's
    message lists exactly the table's keys."""
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "lstm"}))
    with pytest.raises(ModelUnavailableError) as caught:
        engine.load(str(tmp_path))
    assert str(caught.value).endswith(f"supported here: {', '.join(sorted(HUB_TYPES))}.")
    monkeypatch.setitem(
        HUB_TYPES,
        "lstm",
        FamilyRecord(
            "lstm",
            "hf",
            ("encoder",),
            f"{__name__}:_fake_loader",
            "engine.families.hf_text.settings:BERT_LIKE",
            "AttentionTrace",
            "LSTM",
        ),
    )
    assert engine.load(str(tmp_path)) == ("fake", str(tmp_path), "lstm", None, None)


def test_pages_and_messages_read_their_families_from_the_table() -> None:
    from engine.families import hf_seq2seq as seq2seq_hf

    drawn = {f for r in TABLE if r.trace_type in ("AttentionTrace", "Seq2SeqTrace") for f in r.families}
    assert text_families() == drawn == {"encoder", "decoder", "encoder-decoder"}
    assert hub_labels("vit") == ("ViT", "DeiT", "Swin") and hub_labels("encoder-decoder") == (
        "T5",
        "mT5",
        "BART",
        "Marian",
    )
    assert set(hub_labels()) == {r.label for r in TABLE if r.source == "hf"}
    for r in TABLE:
        if r.positions is not None:
            assert seq2seq_hf.positions(r.key) == r.positions


def _family_lists(path: Path) -> list[str]:
    """Tuple, list and set literals in ``path`` holding two or more family keys or catalog family names (block
    names such as ``("encoder", "decoder", "cross")`` are not families)."""
    keys = {r.key for r in TABLE}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    types = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}  # ``Literal[...]``: a type
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or id(node) in types:
            continue
        strings = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        if strings & {"cross", "self"}:
            continue
        if len(strings & keys) >= 2 or len(strings & FAMILIES) >= 2:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {sorted(strings)[:6]}")
    return found


def test_no_module_keeps_a_family_list_of_its_own() -> None:
    """Outside the table (and the ``Family`` type it reads) nothing in engine/ or app/ lists families."""
    table = ROOT / "engine/families/__init__.py"
    files = [f for d in ("engine", "app") for f in sorted((ROOT / d).rglob("*.py")) if f != table]
    assert len(files) > 100
    offenders = [hit for f in files for hit in _family_lists(f)]
    assert not offenders, offenders
    assert not list((ROOT / "engine").rglob("families.py")) and not list((ROOT / "app").rglob("families.py"))
