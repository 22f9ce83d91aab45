"""Attention rollout against a direct, loop-by-loop implementation of Abnar & Zuidema (2020)."""

import numpy as np
import pytest

from engine.analysis.rollout import DISCARD_RULES, discard_candidates, discard_weakest, fuse_heads, rollout


def random_attention(rng, layers=3, heads=4, n=5):
    logits = rng.normal(size=(layers, heads, n, n))
    e = np.exp(logits)
    return e / e.sum(-1, keepdims=True)


def direct_rollout(att, fusion="mean"):
    """Written out with loops: fuse, add I/2, renormalise, multiply layer by layer."""
    n_layers, _, n, _ = att.shape
    joint = np.eye(n)
    out = []
    for layer in range(n_layers):
        fused = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                column = att[layer, :, i, j]
                fused[i, j] = {"mean": column.mean(), "max": column.max(), "min": column.min()}[fusion]
        a = np.zeros((n, n))
        for i in range(n):
            row = [0.5 * fused[i, j] + (0.5 if i == j else 0.0) for j in range(n)]
            total = sum(row)
            for j in range(n):
                a[i, j] = row[j] / total
        new = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                new[i, j] = sum(a[i, m] * joint[m, j] for m in range(n))
        joint = new
        out.append(joint)
    return np.stack(out)


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
def test_rollout_matches_direct_implementation(fusion):
    att = random_attention(np.random.default_rng(0))
    got = rollout(list(att), head_fusion=fusion)
    np.testing.assert_allclose(got, direct_rollout(att, fusion), atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)


def test_first_layer_is_half_attention_plus_half_identity_for_mean():
    att = random_attention(np.random.default_rng(1), layers=1)
    got = rollout(list(att))[0]
    np.testing.assert_allclose(got, 0.5 * att[0].mean(0) + 0.5 * np.eye(5), atol=1e-6)


def test_identity_attention_rolls_out_to_identity():
    eye = np.broadcast_to(np.eye(4), (2, 3, 4, 4))
    np.testing.assert_allclose(rollout(list(eye))[-1], np.eye(4), atol=1e-7)


def test_discard_drops_weakest_off_diagonal_and_keeps_diagonal():
    a = np.array([[0.1, 0.2, 0.7], [0.05, 0.9, 0.05], [0.3, 0.3, 0.4]])
    out = discard_weakest(a, 0.5)  # 6 off-diagonal entries → the 3 smallest go
    np.testing.assert_array_equal(np.diag(out), np.diag(a))
    assert (out == 0).sum() == 3
    expected = np.array([[0.1, 0.0, 0.7], [0.0, 0.9, 0.0], [0.3, 0.3, 0.4]])  # 0.05, 0.05, 0.2 dropped
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError):
        discard_weakest(a, 1.0)


# ---------------------------------------------------------------- discard rules, by hand
# A 4×4 fused map, class token at index 0, rows summing to 1, no two off-diagonal weights equal.
# Off-diagonal weights from weakest: .02 (3,0)  .05 (1,0)  .08 (3,1)  .10 (0,3)  .12 (1,3)  .15 (2,0)
#                                    .20 (0,2)  .22 (2,3)  .23 (1,2)  .30 (0,1)  .33 (2,1)  .45 (3,2)
HAND = np.array(
    [
        [0.40, 0.30, 0.20, 0.10],
        [0.05, 0.60, 0.23, 0.12],
        [0.15, 0.33, 0.30, 0.22],
        [0.02, 0.08, 0.45, 0.45],
    ]
)
# all-off-diagonal, ratio 0.5: 12 candidates → the 6 weakest go, the whole class-token column among them
HAND_ALL = np.array(
    [
        [0.40, 0.30, 0.20, 0.00],
        [0.00, 0.60, 0.23, 0.00],
        [0.00, 0.33, 0.30, 0.22],
        [0.00, 0.00, 0.45, 0.45],
    ]
)
# keep-class-token, ratio 0.5: 9 candidates (column 0 and the diagonal are not) → 4 go: .08 .10 .12 .20
HAND_KEEP = np.array(
    [
        [0.40, 0.30, 0.00, 0.00],
        [0.05, 0.60, 0.23, 0.00],
        [0.15, 0.33, 0.30, 0.22],
        [0.02, 0.00, 0.45, 0.45],
    ]
)


def loop_discard(a, ratio, rule):
    """The two rules with plain loops: list the candidate cells row by row, sort, zero the weakest."""
    n = len(a)
    out = [[float(a[i][j]) for j in range(n)] for i in range(n)]
    cells = []
    for i in range(n):
        for j in range(n):
            if i == j or (rule == "keep-class-token" and j == 0):
                continue
            cells.append((out[i][j], i, j))
    cells.sort(key=lambda c: c[0])  # stable: equal weights keep row-major order
    for _, i, j in cells[: int(len(cells) * ratio)]:
        out[i][j] = 0.0
    return np.array(out)


def loop_rollout(maps, ratio, rule):
    """Discard, add I/2, renormalise rows, multiply: float64 loops over a list of [n, n] maps."""
    n = len(maps[0])
    joint = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    for a in maps:
        kept = loop_discard(a, ratio, rule)
        step = []
        for i in range(n):
            row = [0.5 * kept[i][j] + (0.5 if i == j else 0.0) for j in range(n)]
            total = sum(row)
            step.append([x / total for x in row])
        joint = [[sum(step[i][m] * joint[m][j] for m in range(n)) for j in range(n)] for i in range(n)]
    return np.array(joint)


def test_hand_worked_discard_rules():
    np.testing.assert_allclose(HAND.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(discard_weakest(HAND, 0.5, "all-off-diagonal"), HAND_ALL)
    np.testing.assert_array_equal(discard_weakest(HAND, 0.5, "keep-class-token"), HAND_KEEP)
    np.testing.assert_array_equal(discard_weakest(HAND, 0.5), HAND_ALL)  # the default rule
    for rule, expected in (("all-off-diagonal", HAND_ALL), ("keep-class-token", HAND_KEEP)):
        np.testing.assert_array_equal(loop_discard(HAND, 0.5, rule), expected)


@pytest.mark.parametrize("rule", list(DISCARD_RULES))
@pytest.mark.parametrize("ratio", [0.0, 0.25, 0.5, 0.9])
def test_each_rule_matches_the_loops(rule, ratio):
    for a in (HAND, random_attention(np.random.default_rng(3), layers=1, heads=1, n=4)[0, 0]):
        np.testing.assert_array_equal(discard_weakest(a, ratio, rule), loop_discard(a, ratio, rule))


@pytest.mark.parametrize("rule", list(DISCARD_RULES))
def test_rollout_with_each_rule_matches_the_loops(rule):
    second = random_attention(np.random.default_rng(4), layers=1, heads=1, n=4)[0, 0]
    maps = [HAND, second]
    got = rollout(maps, discard_ratio=0.5, discard_rule=rule)
    np.testing.assert_allclose(got[0], loop_rollout(maps[:1], 0.5, rule), atol=1e-6)
    np.testing.assert_allclose(got[1], loop_rollout(maps, 0.5, rule), atol=1e-6)
    # layer 0 by hand: ½·kept + ½·I, rows renormalised
    kept = HAND_ALL if rule == "all-off-diagonal" else HAND_KEEP
    step = 0.5 * kept + 0.5 * np.eye(4)
    np.testing.assert_allclose(got[0], step / step.sum(-1, keepdims=True), atol=1e-6)


def test_keep_class_token_never_touches_column_zero_or_the_diagonal():
    a = random_attention(np.random.default_rng(5), layers=1, heads=1, n=9)[0, 0]
    for ratio in (0.5, 0.9, 0.99):
        kept = discard_weakest(a, ratio, "keep-class-token")
        np.testing.assert_array_equal(kept[:, 0], a[:, 0])
        np.testing.assert_array_equal(np.diag(kept), np.diag(a))
        assert (kept == 0).sum() == int(64 * ratio)  # 9·8 off-diagonal cells, 8 of them in column 0
    candidates = discard_candidates(4, "keep-class-token")
    assert not candidates[:, 0].any() and not candidates.diagonal().any() and candidates.sum() == 9
    assert discard_candidates(4, "all-off-diagonal").sum() == 12


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        rollout([])
    with pytest.raises(ValueError):
        fuse_heads(np.ones((2, 2, 2)), "median")
    with pytest.raises(ValueError):
        rollout([np.ones((2, 3, 4)) / 4])
    with pytest.raises(ValueError, match="discard rule"):
        rollout([np.eye(3)], discard_ratio=0.5, discard_rule="keep-cls")
