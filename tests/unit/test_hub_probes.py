"""The small probes of engine/families/hub.py and engine/registry.py catch only the errors they expect.

``byte_level`` reads a tokenizer's Rust backend; a tokenizer without one (transformers' Python and
SentencePiece backends) raises AttributeError there, which means "not byte-level". ``cached_on_disk`` asks
huggingface_hub's cache; an id the Hub cannot have raises HFValidationError (a ValueError), which means "not
cached". Anything else now propagates instead of being read as False.
"""

from __future__ import annotations

import pytest
from transformers import ByT5Tokenizer

from engine.families.hub import byte_level
from engine.registry import cached_on_disk


def test_byte_level_reads_the_rust_backend(tiny_gpt2, minilm) -> None:
    # the reference: each tokenizer's own decoder as the tokenizers library reports it
    assert type(tiny_gpt2.tokenizer.backend_tokenizer.decoder).__name__ == "ByteLevel"
    assert byte_level(tiny_gpt2.tokenizer) is True
    assert type(minilm.tokenizer.backend_tokenizer.decoder).__name__ == "WordPiece"
    assert byte_level(minilm.tokenizer) is False


def test_a_tokenizer_without_a_rust_backend_is_not_byte_level() -> None:
    tokenizer = ByT5Tokenizer()  # a Python-backend tokenizer that needs no files
    assert not hasattr(tokenizer, "backend_tokenizer")
    assert byte_level(tokenizer) is False


@pytest.mark.parametrize("hub_id", ["a/b/c", "../x", "", "bad id!"])
def test_an_id_the_hub_cannot_have_is_not_cached(hub_id: str) -> None:
    assert cached_on_disk(hub_id) is False
