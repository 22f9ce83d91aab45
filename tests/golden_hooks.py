"""Golden hook names of the own networks' blocks (public API: a rename is an API change), spelled once for the tests
of the transformer (tests/unit/test_hook_names.py), the ViT and the seq2seq model."""

from __future__ import annotations

ATTN = ["hook_q", "hook_k", "hook_v", "hook_scores_raw", "hook_attn_scores", "hook_pattern", "hook_z"]
ROPE_ATTN = [*ATTN[:3], "hook_rot_q", "hook_rot_k", *ATTN[3:]]  # rotary positions: q and k rotated after v
MLP = ["mlp.hook_pre", "mlp.hook_post", "hook_mlp_out", "hook_resid_post"]
BLOCK = ["hook_resid_pre", *(f"attn.{h}" for h in ATTN), "hook_attn_out", "hook_resid_mid", *MLP]
ROPE_BLOCK = ["hook_resid_pre", *(f"attn.{h}" for h in ROPE_ATTN), "hook_attn_out", "hook_resid_mid", *MLP]


def two_layers(block: list[str], prefix: str = "") -> list[str]:
    """``block``'s names in layers 0 and 1, in order (``prefix``: e.g. ``"encoder."``)."""
    return [f"{prefix}blocks.{layer}.{name}" for layer in (0, 1) for name in block]
