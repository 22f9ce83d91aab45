"""The family records (``engine.families``): one per own model family, and everything reads kinds from them."""

from __future__ import annotations

import json
from typing import get_args

import pytest

import engine
import engine.types
from engine import checkpoint, registry, samples
from engine.families import FAMILIES, KINDS, RECORDS, FamilyRecord, resolve
from engine.types import CheckpointError, Family, Trace


def test_records_are_unique_and_families_match_the_type() -> None:
    assert len(KINDS) == len(RECORDS) and set(KINDS) == {"transformer", "seq2seq", "rnn-attention", "vit"}
    assert FAMILIES == set(get_args(Family))
    for record in RECORDS:
        assert record.families and set(record.families) <= FAMILIES, record.kind


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.kind)
def test_every_named_piece_resolves(record: FamilyRecord) -> None:
    assert callable(resolve(record.builder)) and callable(resolve(record.loader))
    assert hasattr(resolve(record.adapter), "trace")
    trace_type = getattr(engine.types, record.trace_type)
    assert hasattr(trace_type, "attention_blocks"), f"{record.trace_type} does not follow engine.types.Trace"


def _shipped() -> list[tuple[str, dict]]:
    return [(path.stem, json.loads(path.read_text(encoding="utf-8")))
            for path in sorted(registry.CHECKPOINTS.glob("*.json"))]  # fmt: skip


@pytest.mark.parametrize("name, document", _shipped(), ids=lambda v: v if isinstance(v, str) else "")
def test_shipped_checkpoints_load_through_their_record(name: str, document: dict) -> None:
    """Builder, loader, adapter and trace type of each shipped checkpoint's record fit together."""
    record = KINDS[document["kind"]]
    assert document["metadata"]["family"] in record.families
    assert type(record.build(document["model_config"])).__name__  # builds from the stored config
    model = engine.load(name, device="cpu")
    assert isinstance(model.adapter, resolve(record.adapter))
    text = samples.digit(0)[0] if record.kind == "vit" else "the cat sees the dog"
    trace = engine.trace(model, text)
    assert type(trace).__name__ == record.trace_type and isinstance(trace, Trace)
    assert trace.model_id == name and trace.family == model.spec.family and trace.device == "cpu"


def test_the_checkpoint_format_knows_exactly_the_recorded_kinds(tmp_path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"format": checkpoint.FORMAT, "kind": "lstm", "model_config": {}}))
    with pytest.raises(CheckpointError, match=r"unknown model kind 'lstm'; known kinds: \['rnn-attention', 'seq2seq', "
                                              r"'transformer', 'vit'\]"):  # fmt: skip
        checkpoint.read_checkpoint_config(tmp_path, "x")
