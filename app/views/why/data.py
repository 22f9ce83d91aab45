"""The patching page's engine calls: each head's and each residual site's restored share, shared by every session
that asks the same experiment (a few dozen forward passes of a small model)."""

from __future__ import annotations

import numpy as np

from app.runtime.caches import shared_map
from app.runtime.models import get_model, model_pass


def example(model_id: str):
    """The built-in experiment of ``model_id`` (``engine.analysis.patching.EXAMPLES``)."""
    from engine.analysis.patching import EXAMPLES

    return EXAMPLES[model_id]


def patched(model_id: str, clean: str, corrupt: str, answer: str, wrong: str) -> tuple[np.ndarray, np.ndarray, tuple]:
    """``(heads [layer, head], residual [layer + 1, position], the clean prompt's tokens)``; EngineError as the
    engine says (prompts of different lengths, a word of more than one token, …)."""
    from engine.analysis.patching import experiment, patch_heads, patch_residual

    def run() -> tuple:
        model = get_model(model_id)
        with model_pass():
            tokens = tuple(experiment(model, clean, corrupt, answer, wrong).clean.tokens.strings)
            heads = patch_heads(model, clean, corrupt, answer, wrong)
            return heads, patch_residual(model, clean, corrupt, answer, wrong), tokens

    return shared_map(("patching", model_id, clean, corrupt, answer, wrong), run)
