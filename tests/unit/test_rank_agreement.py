"""Spearman's ρ and Kendall's τ_b (``engine.analysis.rank_agreement``) against examples worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.analysis.rank_agreement import agreement, kendall, ranks, spearman


def test_ties_share_the_mean_of_their_ranks():
    np.testing.assert_array_equal(ranks(np.array([10, 20, 20, 5])), [2, 3.5, 3.5, 1])
    np.testing.assert_array_equal(ranks(np.array([7, 7, 7])), [2, 2, 2])


def test_a_swap_of_two_neighbours():
    # a = 1 2 3, b = 1 3 2: Σd² = 2, ρ = 1 − 6·2 / (3·8) = 0.5; pairs (1,2)+ (1,3)+ (2,3)−: τ = (2 − 1) / 3
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert kendall([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)


def test_with_a_tie():
    # ranks of b = 1 2 3.5 5 3.5; deviations a: −2 −1 0 1 2, b: −2 −1 .5 2 .5 → Σ = 8, Σa² = 10, Σb² = 9.5
    a, b = [1, 2, 3, 4, 5], [5, 6, 7, 8, 7]
    assert spearman(a, b) == pytest.approx(8 / math.sqrt(10 * 9.5))
    # 10 pairs: 8 concordant, 1 discordant (4,5), 1 tied in b (3,5): τ_b = (8 − 1) / √(10 · 9)
    assert kendall(a, b) == pytest.approx(7 / math.sqrt(90))


def test_same_reversed_and_undefined_orders():
    x = np.array([0.3, 0.1, 0.9, 0.5])
    assert spearman(x, 2 * x + 1) == pytest.approx(1) and kendall(x, x**3) == pytest.approx(1)
    assert spearman(x, -x) == pytest.approx(-1) and kendall(x, -x) == pytest.approx(-1)
    assert math.isnan(spearman(x, np.ones(4))) and math.isnan(kendall(x, np.ones(4)))
    assert math.isnan(spearman([1.0], [2.0])) and math.isnan(kendall([1.0], [2.0]))


def test_the_matrix_over_the_kept_tokens():
    scores = {"a": np.array([1.0, 2, 3, 100]), "b": np.array([1.0, 3, 2, -100]), "c": np.array([3.0, 2, 1, 0])}
    rho, tau = agreement(scores, keep=np.array([True, True, True, False]))
    assert rho.shape == tau.shape == (3, 3)
    np.testing.assert_allclose(np.diag(rho), 1)
    np.testing.assert_allclose(rho, rho.T)
    assert rho[0, 1] == pytest.approx(0.5) and tau[0, 1] == pytest.approx(1 / 3)  # the last token left out
    assert rho[0, 2] == pytest.approx(-1) and tau[1, 2] == pytest.approx(-1 / 3)


def test_scipy_agrees_where_installed():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.integers(0, 5, 12).astype(float), rng.normal(size=12)
        assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b)[0], abs=1e-12)
        assert kendall(a, b) == pytest.approx(stats.kendalltau(a, b)[0], abs=1e-12)


def test_a_nan_score_has_no_order():
    a, b = np.array([0.3, np.nan, 0.9, 0.5]), np.array([1.0, 2, 3, 4])
    for x, y in ((a, b), (b, a), (a, a)):
        assert math.isnan(spearman(x, y)) and math.isnan(kendall(x, y))
    rho, tau = agreement({"a": a, "b": b})
    assert math.isnan(rho[0, 1]) and math.isnan(tau[0, 1]) and rho[1, 1] == pytest.approx(1)
    stats = pytest.importorskip("scipy.stats")  # scipy's default (nan_policy="propagate") agrees
    assert math.isnan(stats.spearmanr(a, b)[0]) and math.isnan(stats.kendalltau(a, b)[0])
