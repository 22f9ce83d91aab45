"""Golden lists of the own transformer's hook names: they are public API, a rename is an API change."""

from __future__ import annotations

import pytest

from engine.capture import hook_point_names
from engine.families.transformer.network import Transformer, TransformerConfig

ROPE_2_LAYERS = [
    "hook_embed",
    "blocks.0.hook_resid_pre",
    "blocks.0.attn.hook_q",
    "blocks.0.attn.hook_k",
    "blocks.0.attn.hook_v",
    "blocks.0.attn.hook_rot_q",
    "blocks.0.attn.hook_rot_k",
    "blocks.0.attn.hook_scores_raw",
    "blocks.0.attn.hook_attn_scores",
    "blocks.0.attn.hook_pattern",
    "blocks.0.attn.hook_z",
    "blocks.0.hook_attn_out",
    "blocks.0.hook_resid_mid",
    "blocks.0.mlp.hook_pre",
    "blocks.0.mlp.hook_post",
    "blocks.0.hook_mlp_out",
    "blocks.0.hook_resid_post",
    "blocks.1.hook_resid_pre",
    "blocks.1.attn.hook_q",
    "blocks.1.attn.hook_k",
    "blocks.1.attn.hook_v",
    "blocks.1.attn.hook_rot_q",
    "blocks.1.attn.hook_rot_k",
    "blocks.1.attn.hook_scores_raw",
    "blocks.1.attn.hook_attn_scores",
    "blocks.1.attn.hook_pattern",
    "blocks.1.attn.hook_z",
    "blocks.1.hook_attn_out",
    "blocks.1.hook_resid_mid",
    "blocks.1.mlp.hook_pre",
    "blocks.1.mlp.hook_post",
    "blocks.1.hook_mlp_out",
    "blocks.1.hook_resid_post",
]

LEARNED_2_LAYERS = [
    "hook_embed",
    "hook_pos_embed",
    "blocks.0.hook_resid_pre",
    "blocks.0.attn.hook_q",
    "blocks.0.attn.hook_k",
    "blocks.0.attn.hook_v",
    "blocks.0.attn.hook_scores_raw",
    "blocks.0.attn.hook_attn_scores",
    "blocks.0.attn.hook_pattern",
    "blocks.0.attn.hook_z",
    "blocks.0.hook_attn_out",
    "blocks.0.hook_resid_mid",
    "blocks.0.mlp.hook_pre",
    "blocks.0.mlp.hook_post",
    "blocks.0.hook_mlp_out",
    "blocks.0.hook_resid_post",
    "blocks.1.hook_resid_pre",
    "blocks.1.attn.hook_q",
    "blocks.1.attn.hook_k",
    "blocks.1.attn.hook_v",
    "blocks.1.attn.hook_scores_raw",
    "blocks.1.attn.hook_attn_scores",
    "blocks.1.attn.hook_pattern",
    "blocks.1.attn.hook_z",
    "blocks.1.hook_attn_out",
    "blocks.1.hook_resid_mid",
    "blocks.1.mlp.hook_pre",
    "blocks.1.mlp.hook_post",
    "blocks.1.hook_mlp_out",
    "blocks.1.hook_resid_post",
]


def _model(pos_encoding: str, norm: str = "pre") -> Transformer:
    return Transformer(
        TransformerConfig(
            vocab_size=11,
            d_model=8,
            n_layers=2,
            n_heads=2,
            d_mlp=16,
            max_len=8,
            pos_encoding=pos_encoding,
            norm=norm,
        )
    )


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
