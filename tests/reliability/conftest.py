"""Fixtures for the abuse tests: a tiny saved model in folders inside and outside an allowed
directory, the server's ``AP_*`` settings cleared around every test, and ``tests/app``'s AppTest
helpers importable from here.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

APP_TESTS = Path(__file__).resolve().parents[1] / "app"
if str(APP_TESTS) not in sys.path:  # apptest_helpers lives there
    sys.path.insert(0, str(APP_TESTS))

SETTINGS = ("AP_MODEL_DIRS", "AP_HUB", "AP_HUB_MAX_GB")


@pytest.fixture(autouse=True)
def server_defaults(monkeypatch):
    """Every test starts from a server with no ``AP_*`` policy settings (the defaults)."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


@dataclass(frozen=True)
class Folders:
    allowed: Path  # what AP_MODEL_DIRS names
    inside: Path  # a real model folder in it
    outside: Path  # the same model outside it
    link: Path  # a symlink inside the allowed directory to the outside folder
    dotdot: str  # a path that starts in the allowed directory and climbs out with ".."
    missing: Path  # a path outside it that does not exist


def save_tiny_bert(folder: Path) -> Path:
    """A 1-layer, 2-head BERT with a word-level tokenizer, saved with ``save_pretrained``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "."]
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(words) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab_file=str(vocab))
    torch.manual_seed(0)
    sizes = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    BertModel(BertConfig(vocab_size=len(words), max_position_embeddings=32, **sizes)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def folders(tmp_path_factory) -> Folders:
    root = tmp_path_factory.mktemp("policy")
    outside = save_tiny_bert(root / "outside" / "bert")
    allowed = root / "allowed"
    inside = allowed / "bert"
    shutil.copytree(outside, inside)
    link = allowed / "link"
    os.symlink(outside, link, target_is_directory=True)
    return Folders(
        allowed=allowed,
        inside=inside,
        outside=outside,
        link=link,
        dotdot=f"{allowed}/../outside/bert",
        missing=root / "outside" / "no-such-model",
    )
