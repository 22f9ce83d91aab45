"""The scaling mini-lab (issue 23, 4): the power-law fit, the frontier, Kaplan's parameter count, the shipped curves."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from engine.analysis.scaling_laws import Run, analyse, fit_power_law, frontier, read_curves
from engine.training.scaling import CURVES, SIZES, Settings, Size, non_embedding_params, run_size

# ---- the fit ----------------------------------------------------------------------------------------------


def test_the_fit_recovers_a_known_exponent_exactly():
    n = np.geomspace(1e3, 1e6, 7)
    fit = fit_power_law(n, (5e4 / n) ** 0.27)
    assert fit.alpha == pytest.approx(0.27, abs=1e-12)
    assert fit.scale == pytest.approx(5e4, rel=1e-9)
    assert fit.irreducible == 0 and fit.r2 == pytest.approx(1.0, abs=1e-12) and fit.n_points == 7
    np.testing.assert_allclose(fit.predict(n), (5e4 / n) ** 0.27, rtol=1e-10)


def test_the_fit_recovers_an_irreducible_term():
    n = np.geomspace(1e3, 1e7, 9)
    fit = fit_power_law(n, 1.3 + (2e4 / n) ** 0.4, irreducible=True)
    assert fit.irreducible == pytest.approx(1.3, abs=1e-6)
    assert fit.alpha == pytest.approx(0.4, abs=1e-5)
    assert fit.scale == pytest.approx(2e4, rel=1e-4)


def test_a_noisy_fit_is_the_least_squares_line_in_log_space():
    rng = np.random.default_rng(3)
    n = np.geomspace(3e3, 5e5, 6)
    loss = (1e6 / n) ** 0.1 * np.exp(rng.normal(0, 0.02, n.size))
    slope, intercept = np.polyfit(np.log(n), np.log(loss), 1)  # an independent float64 regression
    fit = fit_power_law(n, loss)
    assert fit.alpha == pytest.approx(-slope, abs=1e-10)
    assert math.log(fit.scale) == pytest.approx(intercept / -slope, rel=1e-9)
    residual = np.log(loss) - (intercept + slope * np.log(n))
    total = np.log(loss) - np.log(loss).mean()
    assert fit.r2 == pytest.approx(1 - residual @ residual / (total @ total), abs=1e-10)


@pytest.mark.parametrize("x, y", [([1, 2], [1.0]), ([1, 1, 1], [2, 2, 2]), ([1, -2], [1, 1]), ([1, 2], [1, np.nan])])
def test_the_fit_refuses_what_a_log_axis_cannot_hold(x, y):
    with pytest.raises(ValueError, match="fit_power_law"):
        fit_power_law(x, y)


# ---- the frontier -----------------------------------------------------------------------------------------


def test_the_frontier_of_hand_built_curves():
    # a small model (fast start, early plateau) and a large one (slow start, lower end), step 0 at compute 0
    small_c, small_l = [0, 1, 2, 3, 4], [5.0, 3.0, 2.5, 2.3, 2.25]
    large_c, large_l = [0, 2, 4, 6, 8], [5.0, 3.5, 2.4, 2.0, 1.8]
    on = frontier(small_c + large_c, small_l + large_l)
    # by compute: small at 1, 2, 3, 4 (the large one's 3.5 at 2 and 2.4 at 4 lose); then the large one at 6, 8
    assert on.tolist() == [1, 2, 3, 4, 8, 9]


def test_the_frontier_is_the_lower_envelope_on_random_points():
    rng = np.random.default_rng(0)
    compute = rng.integers(0, 30, 200).astype(float)
    loss = rng.uniform(1, 5, 200)
    on = set(frontier(compute, loss).tolist())
    for i in range(200):  # brute force: below every point of less compute, lowest (first) of its own compute
        if compute[i] <= 0:
            assert i not in on
            continue
        earlier = loss[(compute < compute[i]) & (compute > 0)]
        same = [j for j in range(200) if compute[j] == compute[i]]
        best_same = min(same, key=lambda j: (loss[j], j))
        expected = (earlier.size == 0 or loss[i] < earlier.min()) and i == best_same
        assert (i in on) == expected, i


# ---- Kaplan's N -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d, layers, heads", [(16, 1, 2), (48, 2, 4), (96, 4, 4)])
def test_the_count_is_every_non_embedding_parameter(d, layers, heads):
    from engine.families.transformer.network import Transformer, TransformerConfig

    model = Transformer(
        TransformerConfig(vocab_size=133, d_model=d, n_layers=layers, n_heads=heads, d_mlp=4 * d, max_len=64)
    )
    n = non_embedding_params(model)
    embeddings = {"embed.weight", "pos_embed.weight", "unembed.weight"}
    assert n == sum(p.numel() for name, p in model.named_parameters() if name not in embeddings)
    # by hand, per block: Q, K, V, O (d² + d each), two LayerNorms (2d each), MLP d·4d + 4d + 4d·d + d;
    # plus the final LayerNorm. 12·L·d² is Kaplan's approximation of the same count.
    assert n == layers * (4 * (d * d + d) + 4 * d + 8 * d * d + 5 * d) + 2 * d
    assert abs(n - 12 * layers * d * d) / n < 0.2


# ---- a run ------------------------------------------------------------------------------------------------


def test_a_short_run_records_tokens_compute_and_held_out_loss():
    settings = Settings(steps=10, every=5, n_stories=400, held_out_windows=8, warmup=2)
    gen = run_size(Size(16, 1, 2), settings)
    updates = []
    while True:
        try:
            updates.append(next(gen))
        except StopIteration as end:
            run = end.value
            break
    assert [u.step for u in updates] == [0, 5, 10] and updates[-1].fraction == 1.0
    points = run["points"]
    assert [p["tokens"] for p in points] == [s * 16 * 64 for s in (0, 5, 10)]
    assert all(p["compute"] == 6 * run["n_params"] * p["tokens"] for p in points)
    from engine.corpora import story_vocab

    vocab = len(story_vocab()) + 5  # the special tokens
    # the untrained model (weights ~ N(0, 0.02²)) predicts close to uniformly: loss ≈ ln V
    assert points[0]["held_out_loss"] == pytest.approx(math.log(vocab), abs=0.05)
    assert points[-1]["held_out_loss"] < points[0]["held_out_loss"]


# ---- the shipped curves -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    return read_curves(CURVES), json.loads(CURVES.read_text())


def test_the_shipped_file_is_small_and_says_how_it_was_made(shipped):
    curves, raw = shipped
    assert CURVES.stat().st_size < 200_000
    assert raw["command"] == "python -m engine.training.scaling"
    assert {"cpu", "cores", "torch", "torch_threads"} <= set(curves.machine)
    assert curves.settings == {k: v for k, v in vars(Settings()).items()}
    assert [r.name for r in curves.runs] == [s.name for s in SIZES]


def test_each_shipped_point_is_consistent(shipped):
    from engine.corpora import story_vocab
    from engine.families.transformer.network import Transformer, TransformerConfig

    curves, _ = shipped
    s = curves.settings
    for run, size in zip(curves.runs, SIZES):
        np.testing.assert_array_equal(run.tokens, run.step * s["batch_size"] * s["seq_len"])
        np.testing.assert_array_equal(run.compute, 6.0 * run.n_params * run.tokens)
        np.testing.assert_array_equal(run.step, np.arange(0, s["steps"] + 1, s["every"]))
        model = Transformer(
            TransformerConfig(
                vocab_size=len(story_vocab()) + 5,
                d_model=size.d_model,
                n_layers=size.n_layers,
                n_heads=size.n_heads,
                d_mlp=size.d_mlp,
                max_len=s["seq_len"],
            )
        )
        assert run.n_params == non_embedding_params(model)
        assert run.n_params_total == sum(p.numel() for p in model.parameters())


def test_the_shipped_final_loss_falls_with_size(shipped):
    """What this checks: with the same data and steps, every larger size ends with a lower held-out loss than
    every smaller one (the sizes are listed by N)."""
    curves, _ = shipped
    n = [r.n_params for r in curves.runs]
    final = [r.final_loss for r in curves.runs]
    assert n == sorted(n)
    assert all(a > b for a, b in itertools.pairwise(final)), final


def test_the_shipped_fit_and_frontier_recompute_from_the_points(shipped):
    curves, raw = shipped
    fit, compute_fit, on = analyse(curves.runs)
    assert fit.alpha == pytest.approx(curves.fit.alpha, rel=1e-12)
    assert fit.scale == pytest.approx(curves.fit.scale, rel=1e-9)
    assert compute_fit.alpha == pytest.approx(curves.compute_fit.alpha, rel=1e-12)
    assert on == curves.frontier
    # and from scratch: a float64 line through (log N, log final loss)
    slope, _ = np.polyfit(np.log([r.n_params for r in curves.runs]), np.log([r.final_loss for r in curves.runs]), 1)
    assert curves.fit.alpha == pytest.approx(-slope, abs=1e-9) and curves.fit.alpha > 0
    # every frontier point is some run's snapshot, and the frontier's loss falls as its compute grows
    by_name: dict[str, Run] = {r.name: r for r in curves.runs}
    compute = [by_name[name].compute[i] for name, i in on]
    loss = [by_name[name].held_out_loss[i] for name, i in on]
    assert compute == sorted(compute) and all(a > b for a, b in itertools.pairwise(loss))
