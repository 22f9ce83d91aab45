"""The irreducible term of ``fit_power_law`` on noisy data (issue 42, 6), against a brute-force grid that minimises
the squared error of log L over (E, alpha, scale) directly."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis.scaling_laws import PowerLaw, fit_power_law, read_curves
from engine.training.scaling import CURVES

N = np.array([r.n_params for r in read_curves(CURVES).runs], dtype=np.float64)  # the six shipped sizes
BUMPS = np.array([0.01, -0.01, 0, 0.005, -0.005, 0.01])  # the issue's example noise


def truth(n: np.ndarray) -> np.ndarray:
    return 1.5 + (3000 / n) ** 0.6


def log_error(x: np.ndarray, y: np.ndarray, fit: PowerLaw) -> float:
    r = np.log(y) - np.log(fit.predict(x))
    return float(r @ r)


def brute_force(x: np.ndarray, y: np.ndarray, rounds: int = 16) -> tuple[float, float, float]:
    """(E, alpha, squared error of log y) of ``y ≈ E + s·(x_mid / x)^alpha`` on a 41³ grid, zoomed ``rounds``
    times to ±8 of its cells around its best point (s: the power-law part at the geometric middle of x)."""
    mid, log_y = np.exp(np.log(x).mean()), np.log(y)
    boxes = [(0.0, y.min() * (1 - 1e-9)), (0.0, 2.0), (np.log(y.max()) - 9, np.log(y.max()))]  # E, alpha, log s
    for _ in range(rounds):
        axes = [np.linspace(lo, hi, 41) for lo, hi in boxes]
        e, a, log_s = np.meshgrid(*axes, indexing="ij")
        pred = e[..., None] + np.exp(log_s[..., None] + a[..., None] * np.log(mid / x))
        sse = ((np.log(pred) - log_y) ** 2).sum(-1)
        best = np.unravel_index(np.argmin(sse), sse.shape)
        steps = [axis[1] - axis[0] for axis in axes]
        boxes = [
            (max(axis[i] - 8 * d, box[0]), min(axis[i] + 8 * d, box[1]))
            for axis, i, d, box in zip(axes, best, steps, boxes)
        ]
    return float(e[best]), float(a[best]), float(sse[best])


def test_the_issue_example_recovers_e_and_alpha():
    loss = truth(N) * (1 + BUMPS)
    fit = fit_power_law(N, loss, irreducible=True)
    pure = fit_power_law(N, loss)
    assert fit.irreducible == pytest.approx(1.5, abs=0.05)  # 1.525: the noise moves it a little
    assert fit.alpha == pytest.approx(0.66, abs=0.02)  # 0.659
    e, alpha, sse = brute_force(N, loss)
    assert log_error(N, loss, fit) <= sse * (1 + 1e-6)  # no grid point fits log L better
    assert fit.irreducible == pytest.approx(e, abs=1e-4) and fit.alpha == pytest.approx(alpha, abs=1e-4)
    assert log_error(N, loss, fit) * 50 < log_error(N, loss, pure)  # the pure law: E = 0, 94× the error


def test_r2_is_that_of_log_l_with_and_without_e():
    loss = truth(N) * (1 + BUMPS)
    log_y = np.log(loss)
    total = float(((log_y - log_y.mean()) ** 2).sum())
    for fit in (fit_power_law(N, loss), fit_power_law(N, loss, irreducible=True)):
        assert fit.r2 == pytest.approx(1 - log_error(N, loss, fit) / total, abs=1e-12)


def test_with_one_percent_noise_e_stays_near_its_true_value():
    rng = np.random.default_rng(42)
    found = []
    for _ in range(30):
        loss = truth(N) * (1 + rng.normal(0, 0.01, N.size))
        fit = fit_power_law(N, loss, irreducible=True)
        _, _, sse = brute_force(N, loss, rounds=8)
        assert log_error(N, loss, fit) <= sse * (1 + 1e-6)
        found.append(fit.irreducible)
    found = np.array(found)
    assert found.min() > 1.3 and found.max() < 1.7, found  # the old fit of log(L − E): E < 0.1 in 12 of these 30
    assert np.median(found) == pytest.approx(1.5, abs=0.05)


def test_a_pure_power_law_keeps_e_near_zero():
    loss = (2e4 / N) ** 0.3 * (1 + BUMPS)
    fit = fit_power_law(N, loss, irreducible=True)
    _, _, sse = brute_force(N, loss)
    assert log_error(N, loss, fit) <= sse * (1 + 1e-6)
    assert fit.irreducible < 0.1 * loss.min()  # log L barely tells E apart here: the error is flat near 0
