"""Checkpoints: a round trip gives the same logits; every broken file is a CheckpointError that says why."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.checkpoint import FORMAT, checkpoint_paths, load_checkpoint, read_checkpoint_config, save_checkpoint
from engine.families.transformer.network import Transformer, TransformerConfig
from engine.records import CheckpointError, EngineError
from engine.vocab import Vocab

CFG = TransformerConfig(vocab_size=12, d_model=16, n_layers=2, n_heads=2, d_mlp=32, max_len=10)
VOCAB = Vocab.from_words("abcdefg")  # 12 tokens
CARD = {
    "description": "A test model.",
    "data": "reverse, 5 letters from 7",
    "steps": 300,
    "wall_time_s": 12.345,
    "device": "cpu",
    "seed": 0,
    "final_metrics": {"loss": 0.0123, "exact match": 0.995},
    "command": "python -m engine.training.pretrain test",
}
TOKENS = torch.tensor([[1, 5, 6, 7, 3, 7, 6, 5]])


def model_for(cfg: TransformerConfig = CFG, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    model = Transformer(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)  # not the initial weights, so a reload has to read them
    return model.eval()


def save(directory: Path, model: Transformer | None = None, name: str = "tiny", **kw):
    model = model or model_for()
    args = dict(kind="transformer", config=model.cfg.to_dict(), vocab=VOCAB, card=CARD)
    args.update(kw)
    return save_checkpoint(directory, name, model, **args)


def logits(model: Transformer) -> torch.Tensor:
    with torch.no_grad():
        return model(TOKENS)


# ---- round trip --------------------------------------------------------------------------------------


def test_round_trip_same_logits(tmp_path):
    model = model_for()
    paths = save(tmp_path, model)
    assert paths == checkpoint_paths(tmp_path, "tiny")
    assert all(p.is_file() for p in (paths.weights, paths.config, paths.card))
    assert not list(tmp_path.glob("*.tmp"))
    loaded, vocab, doc = load_checkpoint(tmp_path, "tiny")
    assert isinstance(loaded, Transformer) and not loaded.training
    assert loaded.cfg == CFG and vocab == VOCAB
    torch.testing.assert_close(logits(loaded), logits(model), rtol=0, atol=0)
    assert doc["format"] == FORMAT and doc["kind"] == "transformer"
    assert doc["metadata"]["steps"] == 300
    assert doc["metadata"]["params"] == sum(p.numel() for p in model.parameters())
    assert read_checkpoint_config(tmp_path, "tiny") == doc


def test_json_and_card_contents(tmp_path):
    paths = save(tmp_path)
    doc = json.loads(paths.config.read_text())
    assert set(doc) == {"format", "kind", "model_config", "vocab", "metadata"}
    assert doc["model_config"] == CFG.to_dict() and doc["vocab"] == VOCAB.to_dict()
    card = paths.card.read_text()
    for text in (
        "# tiny",
        "A test model.",
        "reverse, 5 letters from 7",
        "| steps | 300 |",
        "12.3 s",
        "| device | cpu |",
        "| exact match | 0.995 |",
        "python -m engine.training.pretrain test",
        '"d_model": 16',
    ):
        assert text in card, text


def test_tied_weights_are_stored_once(tmp_path):
    cfg = TransformerConfig(**{**CFG.to_dict(), "tie_embeddings": True})
    model = model_for(cfg)
    paths = save(tmp_path, model)
    names = set(load_file(str(paths.weights)))
    assert "embed.weight" in names and "unembed.weight" not in names
    loaded, _, _ = load_checkpoint(tmp_path, "tiny")
    assert loaded.unembed.weight is loaded.embed.weight
    torch.testing.assert_close(logits(loaded), logits(model), rtol=0, atol=0)


def test_several_vocabularies(tmp_path):
    save(tmp_path, vocab={"source": VOCAB, "target": Vocab.from_words("xy")})
    _, vocab, _ = load_checkpoint(tmp_path, "tiny")
    assert vocab == {"source": VOCAB, "target": Vocab.from_words("xy")}


def test_loading_leaves_the_global_rng_alone(tmp_path):
    save(tmp_path)
    torch.manual_seed(5)
    expected = torch.rand(2)
    torch.manual_seed(5)
    load_checkpoint(tmp_path, "tiny")
    assert torch.equal(torch.rand(2), expected)


# ---- saving errors -----------------------------------------------------------------------------------


def test_save_rejects_a_model_that_does_not_match_its_config(tmp_path):
    other = TransformerConfig(**{**CFG.to_dict(), "d_mlp": 64})
    with pytest.raises(
        CheckpointError, match=r"blocks.0.mlp.fc_in.weight: file has \(32, 16\), config expects \(64, 16\)"
    ):
        save(tmp_path, config=other.to_dict())
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"kind": "hologram"}, "unknown model kind 'hologram'"),
        ({"card": {"when": object()}}, "not JSON-safe"),
        ({"card": {"loss": float("nan")}}, "not JSON-safe"),
        ({"name": "../escape"}, "must be letters"),
    ],
)
def test_save_errors(tmp_path, kw, message):
    with pytest.raises(CheckpointError, match=message):
        save(tmp_path, **kw)


# ---- every broken checkpoint -------------------------------------------------------------------------


def edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def rewrite_tensors(path: Path, change) -> None:
    tensors = load_file(str(path))
    change(tensors)
    save_file(tensors, str(path))


def rewrite_header(path: Path, change) -> None:
    """Edit the JSON header of a safetensors file in place (the tensor bytes after it stay as they are).

    The layout is the format's own: 8 bytes little-endian header length, the JSON header, the data."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = change(json.loads(raw[8 : 8 + length]))
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + length :])


def first_tensor(header: dict) -> dict:
    return header[next(k for k in header if k != "__metadata__")]


def rename_tensor(tensors: dict) -> None:
    tensors["blocks.0.attn.w_query.weight"] = tensors.pop("blocks.0.attn.w_q.weight")


def wrong_shape(tensors: dict) -> None:
    tensors["blocks.0.attn.w_q.weight"] = torch.zeros(16, 8)


def set_config(key, value):
    return lambda doc: doc["model_config"].__setitem__(key, value)


CORRUPTIONS = {
    "missing json": (lambda p: p.config.unlink(), r"tiny.json: the checkpoint's config file is missing"),
    "missing weights": (lambda p: p.weights.unlink(), r"tiny.safetensors: the checkpoint's weights file is missing"),
    "bad json": (
        lambda p: p.config.write_text('{"format": "attention-playground/1",'),
        r"tiny.json: not valid JSON \(line 1",
    ),
    "binary json": (lambda p: p.config.write_bytes(b"\xff\xfe\x00garbage"), r"tiny.json: not a text file"),
    "json not an object": (lambda p: p.config.write_text("[1, 2]"), r"tiny.json: expected a JSON object"),
    "format missing": (
        lambda p: edit_json(p.config, lambda d: d.pop("format")),
        r'tiny.json: the "format" field is missing',
    ),
    "format unknown": (
        lambda p: edit_json(p.config, lambda d: d.update(format="other/9")),
        r"unsupported format 'other/9'",
    ),
    "unknown kind": (
        lambda p: edit_json(p.config, lambda d: d.update(kind="gru")),
        r"tiny.json: unknown model kind 'gru'; known kinds: \[.*'transformer'",
    ),
    "config not an object": (
        lambda p: edit_json(p.config, lambda d: d.update(model_config=3)),
        r'"model_config" must be a JSON object',
    ),
    "config invalid value": (
        lambda p: edit_json(p.config, set_config("n_heads", 3)),
        r"tiny.json: model_config is invalid: .*divisible by n_heads",
    ),
    "config unknown key": (
        lambda p: edit_json(p.config, set_config("d_modle", 3)),
        r"tiny.json: model_config is invalid: .*unknown key\(s\) \['d_modle'\]",
    ),
    "config shape mismatch": (
        lambda p: edit_json(p.config, set_config("d_mlp", 64)),
        r"tiny.safetensors: blocks.0.mlp.fc_in.weight: file has \(32, 16\), config expects \(64, 16\)",
    ),
    "vocab missing": (lambda p: edit_json(p.config, lambda d: d.pop("vocab")), r'tiny.json: "vocab" must be'),
    "vocab bad": (
        lambda p: edit_json(p.config, lambda d: d.update(vocab={"tokens": ["a", "b"]})),
        r"tiny.json: invalid vocabulary",
    ),
    "vocab too big": (
        lambda p: edit_json(p.config, lambda d: d.update(vocab=Vocab.from_words("abcdefghijk").to_dict())),
        r"vocabulary has 16 tokens but the model only 12 ids",
    ),
    "truncated weights": (
        lambda p: p.weights.write_bytes(p.weights.read_bytes()[:-100]),
        r"tiny.safetensors: not a readable safetensors file",
    ),
    "weights cut in the header": (
        lambda p: p.weights.write_bytes(p.weights.read_bytes()[:40]),
        r"tiny.safetensors: not a readable safetensors file",
    ),
    "empty weights": (lambda p: p.weights.write_bytes(b""), r"tiny.safetensors: not a readable safetensors file"),
    "random bytes": (
        lambda p: p.weights.write_bytes(
            torch.randint(0, 256, (4000,), generator=torch.Generator().manual_seed(0)).to(torch.uint8).numpy().tobytes()
        ),
        r"tiny.safetensors: not a readable safetensors file",
    ),
    # the header's own failures: safetensors raises SafetensorError for each (the loader's except names it)
    "header not JSON": (
        lambda p: rewrite_header(p.weights, lambda h: b'{"embed.weight": '),
        r"tiny.safetensors: not a readable safetensors file",
    ),
    "unknown dtype": (
        lambda p: rewrite_header(p.weights, lambda h: (first_tensor(h).update(dtype="Q9"), h)[1]),
        r"tiny.safetensors: not a readable safetensors file",
    ),
    "offsets past the end": (
        lambda p: rewrite_header(p.weights, lambda h: (first_tensor(h).update(data_offsets=[0, 10**9]), h)[1]),
        r"tiny.safetensors: not a readable safetensors file",
    ),
    "weights are a folder": (
        lambda p: (p.weights.unlink(), p.weights.mkdir()),
        r"tiny.safetensors: the checkpoint's weights file is missing",
    ),
    "renamed tensor": (
        lambda p: rewrite_tensors(p.weights, rename_tensor),
        r"tiny.safetensors: blocks.0.attn.w_q.weight: missing; blocks.0.attn.w_query.weight: unexpected tensor",
    ),
    "extra tensor": (
        lambda p: rewrite_tensors(p.weights, lambda t: t.update(extra=torch.zeros(2))),
        r"extra: unexpected tensor",
    ),
    "wrong shape": (
        lambda p: rewrite_tensors(p.weights, wrong_shape),
        r"tiny.safetensors: blocks.0.attn.w_q.weight: file has \(16, 8\), config expects \(16, 16\)",
    ),
    "wrong dtype": (
        lambda p: rewrite_tensors(p.weights, lambda t: t.update({k: v.double() for k, v in t.items()})),
        r"file has dtype torch.float64, the model expects torch.float32",
    ),
    "nan weights": (
        lambda p: rewrite_tensors(p.weights, lambda t: t["embed.weight"].__setitem__((0, 0), float("nan"))),
        r"tiny.safetensors: embed.weight contains NaN",
    ),
}


@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_broken_checkpoints_raise_readable_errors(tmp_path, case):
    corrupt, message = CORRUPTIONS[case]
    corrupt(save(tmp_path))
    with pytest.raises(CheckpointError, match=message) as err:
        load_checkpoint(tmp_path, "tiny")
    assert isinstance(err.value, EngineError)
    assert "Traceback" not in str(err.value) and len(str(err.value)) < 600


@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
def test_bad_name_is_rejected(tmp_path):
    with pytest.raises(CheckpointError, match="must be letters"):
        load_checkpoint(tmp_path, "a/b")
