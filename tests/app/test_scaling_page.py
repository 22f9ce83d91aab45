"""The Scaling page through AppTest: the shipped curves drawn as they are, both fits' lines (the pure power law and the
law with an irreducible term) with their exponents and r² of log L, the frontier, one more size trained live on the
long-work lane, and calm messages for a refused size or a missing file."""

from __future__ import annotations

import numpy as np
import pytest

from app.views.scaling import data as scaling_service
from app.views.scaling.data import scaling_start
from apptest_helpers import assert_clean, decode, figures, messages, open_page, run_until, title
from engine.analysis.scaling_laws import analyse, read_curves
from engine.records import EngineError
from engine.training.scaling import CURVES


def _by_title(at) -> dict[str, dict]:
    return {title(f): f for f in figures(at)}


def _trace(fig: dict, name_start: str) -> dict:
    return next(t for t in fig["data"] if t.get("name", "").startswith(name_start))


def test_the_page_draws_the_shipped_curves_the_fit_and_the_frontier():
    curves = read_curves(CURVES)
    at = open_page("scaling")
    assert_clean(at)
    figs = _by_title(at)
    params, compute = figs["Loss against parameters"], figs["Loss against compute"]
    assert params["layout"]["xaxis"]["type"] == "log" and params["layout"]["yaxis"]["type"] == "log"
    assert compute["layout"]["xaxis"]["type"] == "log" and compute["layout"]["yaxis"]["type"] == "log"
    points = _trace(params, "shipped sizes")
    np.testing.assert_array_equal(decode(points["x"]), [r.n_params for r in curves.runs])
    np.testing.assert_allclose(decode(points["y"]), [r.final_loss for r in curves.runs])
    line = _trace(params, "fit:")
    x = decode(line["x"])
    a = curves.fit.alpha
    np.testing.assert_allclose(decode(line["y"]), np.exp(a * (np.log(curves.fit.scale) - np.log(x))), rtol=1e-9)
    captions = " ".join(messages(at.caption))
    assert f"α = {a:.3f}" in captions and f"{curves.compute_fit.alpha:.3f}" in captions
    edge = _trace(compute, "compute-optimal frontier")
    by_name = {r.name: r for r in curves.runs}
    np.testing.assert_allclose(decode(edge["x"]), [by_name[n].compute[i] for n, i in curves.frontier])
    np.testing.assert_allclose(decode(edge["y"]), [by_name[n].held_out_loss[i] for n, i in curves.frontier])
    assert len([t for t in compute["data"] if t["name"] in by_name]) == len(curves.runs)
    assert at.dataframe[0].value["size"].tolist() == [r.name for r in curves.runs]


def r2_of_log(x: np.ndarray, y: np.ndarray, e: float, alpha: float, scale: float) -> float:
    """r² of log y under y ≈ e + (scale / x)^alpha (the formula, written here)."""
    residual = np.log(y) - np.log(e + (scale / x) ** alpha)
    return 1 - float(residual @ residual) / float(((np.log(y) - np.log(y).mean()) ** 2).sum())


def test_both_laws_are_drawn_and_the_better_one_is_named():
    curves = read_curves(CURVES)
    fit_e, compute_e, _ = analyse(curves.runs, irreducible=True)
    at = open_page("scaling")
    assert_clean(at)
    figs = _by_title(at)
    n = np.array([r.n_params for r in curves.runs], dtype=np.float64)
    loss = np.array([r.final_loss for r in curves.runs])
    for fig, law, prefix, v in (
        (figs["Loss against parameters"], fit_e, "fit with E", "N"),
        (figs["Loss against compute"], compute_e, "frontier fit with E", "C"),
    ):
        line = _trace(fig, prefix)
        assert line["name"] == f"{prefix}: L = {law.irreducible:.2f} + ({v}_c / {v})^{law.alpha:.3f}"
        x = decode(line["x"])
        np.testing.assert_allclose(decode(line["y"]), law.irreducible + (law.scale / x) ** law.alpha, rtol=1e-9)
    pure = r2_of_log(n, loss, 0.0, curves.fit.alpha, curves.fit.scale)
    with_e = r2_of_log(n, loss, fit_e.irreducible, fit_e.alpha, fit_e.scale)
    assert with_e > pure + 0.05  # 0.955 against 0.844 on the shipped sizes
    captions = " ".join(messages(at.caption))
    assert f"r² = {pure:.3f}" in captions and f"r² = {with_e:.3f}" in captions
    assert f"E = {fit_e.irreducible:.2f} nats, α = {fit_e.alpha:.3f}" in captions
    assert f"The law with E fits better** (r² {with_e:.3f} against {pure:.3f})" in captions
    assert "Chinchilla" in captions and "entropy" in captions
    by_name = {r.name: r for r in curves.runs}
    c = np.array([by_name[name].compute[i] for name, i in curves.frontier])
    on = np.array([by_name[name].held_out_loss[i] for name, i in curves.frontier])
    assert f"r² = {r2_of_log(c, on, compute_e.irreducible, compute_e.alpha, compute_e.scale):.3f}" in captions


def test_one_more_size_trains_live_and_joins_the_charts():
    at = open_page("scaling")
    at.radio(key="scaling_live_size").set_value("d20-L1")
    at.button(key="scaling_live_go").click().run()
    assert_clean(at)

    def drawn(at) -> bool:
        return any(t.get("name") == "trained here" for t in _by_title(at)["Loss against parameters"]["data"])

    run_until(at, drawn, timeout=240, what="the live size's point")
    assert_clean(at)
    here = _trace(_by_title(at)["Loss against parameters"], "trained here")
    d = 20  # one block: Q, K, V, O, two LayerNorms, the MLP; and the final LayerNorm
    assert decode(here["x"]).tolist() == [4 * (d * d + d) + 4 * d + 8 * d * d + 5 * d + 2 * d]
    assert 1.0 < decode(here["y"])[0] < 5.0
    assert any(t["name"] == "d20-L1 (trained here)" for t in _by_title(at)["Loss against compute"]["data"])
    table = at.dataframe[0].value
    assert table["trained"].tolist()[-1] == "here" and table["size"].tolist()[-1] == "d20-L1"
    assert any("trained here" in m and "α =" in m and "with E: E = " in m for m in messages(at.caption))


def test_a_forged_size_is_refused_before_anything_runs():
    with pytest.raises(EngineError, match="only these sizes"):
        scaling_start("d512-L8")


def test_a_missing_curves_file_is_a_calm_message(tmp_path, monkeypatch):
    monkeypatch.setattr(scaling_service, "CURVES_PATH", tmp_path / "none.json")
    scaling_service.scaling_curves.cache_clear()
    try:
        at = open_page("scaling")
        assert not at.exception
        assert any("python -m engine.training.scaling" in m for m in messages(at.error) + messages(at.warning))
    finally:
        scaling_service.scaling_curves.cache_clear()
