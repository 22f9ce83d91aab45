"""The output projection's Gram matrices are kept per weight, and recomputed whenever the weight changes.

Reference: ``‖v W_O^h‖`` built directly (the vector, then its length) from the weight as it is at the time of
the call; a kept Gram matrix that went stale after an optimizer step or a ``load_state_dict`` would miss it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from engine.capture.contribution import gram_norms, output_norms, projection_grams

N_HEADS, D_HEAD, D_MODEL = 4, 8, 24


def direct_norms(values: np.ndarray, proj: nn.Linear) -> np.ndarray:
    """``‖v^h_j W_O^h‖`` by building each vector: nn.Linear's weight is ``[d_out, heads · d_head]``."""
    w = proj.weight.detach().double().numpy().T.reshape(N_HEADS, D_HEAD, -1)  # [H, d_head, d_out]
    return np.stack([np.linalg.norm(values[h].astype(np.float64) @ w[h], axis=-1) for h in range(N_HEADS)])


@pytest.fixture
def proj() -> nn.Linear:
    torch.manual_seed(0)
    return nn.Linear(N_HEADS * D_HEAD, D_MODEL)


def values(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((N_HEADS, 5, D_HEAD)).astype(np.float32)


def test_the_grams_give_the_directly_built_norms(proj):
    v = values()
    np.testing.assert_allclose(gram_norms(v, projection_grams(proj, N_HEADS)), direct_norms(v, proj), rtol=1e-6)
    w = proj.weight.detach().double().numpy().T.reshape(N_HEADS, D_HEAD, -1)
    np.testing.assert_allclose(output_norms(v, w), direct_norms(v, proj), rtol=1e-6)


def test_kept_per_weight_and_read_only(proj):
    first = projection_grams(proj, N_HEADS)
    assert projection_grams(proj, N_HEADS) is first  # the second trace reuses it
    assert first.device == proj.weight.device and first.dtype == torch.float64  # kept where the weight is
    with pytest.raises(RuntimeError, match="[Ii]nference"):  # shared by every session's traces: read-only
        first[0, 0, 0] = 1.0


def test_recomputed_after_an_optimizer_step_and_after_load_state_dict(proj):
    v = values()
    before = projection_grams(proj, N_HEADS)
    optimizer = torch.optim.SGD(proj.parameters(), lr=0.5)
    proj(torch.ones(1, N_HEADS * D_HEAD)).square().sum().backward()
    optimizer.step()  # in place: the weight's version counter moves
    after = projection_grams(proj, N_HEADS)
    assert after is not before
    np.testing.assert_allclose(gram_norms(v, after), direct_norms(v, proj), rtol=1e-6)

    other = nn.Linear(N_HEADS * D_HEAD, D_MODEL)
    proj.load_state_dict(other.state_dict())  # copies into the same tensor
    np.testing.assert_allclose(gram_norms(v, projection_grams(proj, N_HEADS)), direct_norms(v, other), rtol=1e-6)


def test_a_weight_made_in_inference_mode_is_computed_each_time():
    with torch.inference_mode():
        proj = nn.Linear(N_HEADS * D_HEAD, D_MODEL)
    v = values()
    first = projection_grams(proj, N_HEADS)
    assert projection_grams(proj, N_HEADS) is not first
    np.testing.assert_allclose(gram_norms(v, first), direct_norms(v, proj), rtol=1e-6)


def test_shapes_that_do_not_match_are_refused(proj):
    with pytest.raises(ValueError, match="do not match"):
        gram_norms(values()[:, :, :4], projection_grams(proj, N_HEADS))
