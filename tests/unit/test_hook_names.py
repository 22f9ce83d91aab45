"""Golden lists of the own transformer's hook names: they are public API, a rename is an API change."""

from __future__ import annotations

import pytest

from engine.capture import hook_point_names
from engine.families.transformer.network import Transformer, TransformerConfig
from tests.golden_hooks import BLOCK, ROPE_BLOCK, two_layers

ROPE_2_LAYERS = ["hook_embed", *two_layers(ROPE_BLOCK)]
LEARNED_2_LAYERS = ["hook_embed", "hook_pos_embed", *two_layers(BLOCK)]


def _model(pos_encoding: str, norm: str = "pre") -> Transformer:
    sizes = dict(vocab_size=11, d_model=8, n_layers=2, n_heads=2, d_mlp=16, max_len=8)
    return Transformer(TransformerConfig(pos_encoding=pos_encoding, norm=norm, **sizes))


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_hook_names_rope_golden(norm: str) -> None:
    assert hook_point_names(_model("rope", norm)) == ROPE_2_LAYERS


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_hook_names_learned_golden(norm: str) -> None:
    assert hook_point_names(_model("learned", norm)) == LEARNED_2_LAYERS


def test_hook_names_of_the_other_encodings() -> None:
    """sinusoidal adds vectors like learned; alibi and none add nothing and rotate nothing."""
    assert hook_point_names(_model("sinusoidal")) == LEARNED_2_LAYERS
    without_pos = [name for name in LEARNED_2_LAYERS if name != "hook_pos_embed"]
    assert hook_point_names(_model("alibi")) == without_pos
    assert hook_point_names(_model("none")) == without_pos
