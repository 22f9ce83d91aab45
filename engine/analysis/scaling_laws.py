"""Scaling laws on a handful of training runs: a power law in parameters, the compute-optimal frontier.

Kaplan et al. 2020 ("Scaling Laws for Neural Language Models") found that a language model's test loss
falls as a power law in its non-embedding parameters N when data and steps do not hold it back::

    L(N) = (N_c / N) ** alpha                  (optionally + E, a loss no model size removes)

In log space that is a straight line, ``log L = alpha·log N_c − alpha·log N``, so the pure law is numpy's
least squares on ``(log N, log L)``: the slope is ``−alpha`` and the intercept ``alpha·log N_c``. With an
irreducible term E (Henighan et al. 2020's L_∞, Chinchilla's E) the fit still minimises the squared error of
``log L``, now against ``log((N_c / N)^alpha + E)``: for each E, Gauss–Newton on (log N_c, alpha) from the line
through ``log(L − E)``; E itself by a bounded search over ``[0, min L)`` (a grid, then golden section). The
error of ``log(L − E)`` would be a different quantity for each E, growing as E nears min L, and would pull E to 0.

Compute: one training token costs about 6·N floating-point operations (2·N forward, 4·N backward), so a
run that has seen T tokens spent C ≈ 6·N·T. The **compute-optimal frontier** is the lower envelope of loss
against compute over every point of every run: for each compute, the lowest loss any run reached with at
most that much compute. The points on it are the runs' own points that beat every point of less compute.

Numpy in, numpy out; no torch (the Scaling page's data module reads the shipped curves through :func:`read_curves`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.records import EngineError

FORMAT = 1  # version of the curves file
FLOPS_PER_TOKEN_PER_PARAM = 6  # C ≈ 6·N·tokens (Kaplan et al. 2020, section 2.1)
_GOLDEN = (math.sqrt(5) - 1) / 2


class CurvesError(EngineError):
    """A scaling-curves file that cannot be read (the message names the file and the problem)."""


@dataclass(frozen=True)
class PowerLaw:
    """``y = (scale / x) ** alpha + irreducible``, fitted by least squares on ``log y``.

    Attributes:
        alpha: the exponent (a loss that falls with x has alpha > 0).
        scale: N_c (or C_c): where the power-law part alone would be 1.
        irreducible: E, the part no x removes (0 for a pure power law).
        r2: share of the variance of log y the fitted curve explains (comparable with and without E).
        n_points: points fitted.
    """

    alpha: float
    scale: float
    irreducible: float = 0.0
    r2: float = 1.0
    n_points: int = 0

    def predict(self, x: np.ndarray | Sequence[float] | float) -> np.ndarray:
        """The fitted curve at ``x`` (float64)."""
        x = np.asarray(x, dtype=np.float64)
        return np.exp(self.alpha * (math.log(self.scale) - np.log(x))) + self.irreducible

    def to_dict(self) -> dict[str, float]:
        return {
            "alpha": self.alpha,
            "scale": self.scale,
            "irreducible": self.irreducible,
            "r2": self.r2,
            "n_points": self.n_points,
        }


def _law(log_x: np.ndarray, y: np.ndarray, e: float) -> tuple[float, float, float]:
    """Least squares ``log y ≈ log(exp(a + b·log_x) + e)`` for a fixed ``e``: (a, b, squared error).

    The line through ``log(y − e)`` (the exact answer when e = 0), then Gauss–Newton steps, each halved until
    the error falls."""
    design, log_y = np.stack([np.ones_like(log_x), log_x], axis=1), np.log(y)  # (n, 2), (n,)
    theta = np.linalg.lstsq(design, np.log(y - e), rcond=None)[0]

    def residual(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(over="ignore"):  # an overlong trial step: inf, then halved
            part = np.exp(design @ t)
        return np.log(part + e) - log_y, part / (part + e)  # residual, d residual / d(a + b·log_x)

    r, weight = residual(theta)
    for _ in range(100 if e > 0 else 0):  # e = 0: the line is the answer
        step = np.linalg.lstsq(design * weight[:, None], -r, rcond=None)[0]
        for _ in range(40):
            r_new, weight_new = residual(theta + step)
            if r_new @ r_new <= r @ r:
                break
            step = step / 2
        else:
            break
        gain = r @ r - r_new @ r_new
        theta, r, weight = theta + step, r_new, weight_new
        if gain <= 1e-13 * (r @ r):
            break
    return float(theta[0]), float(theta[1]), float(r @ r)


def _best_irreducible(log_x: np.ndarray, y: np.ndarray) -> float:
    """E in ``[0, min y)`` with the least squared error of ``log y`` (each E's law by :func:`_law`)."""

    def error(e: float) -> float:
        return _law(log_x, y, e)[2]

    top = float(y.min())
    grid = top * (1 - np.geomspace(1.0, 1e-6, 200))  # denser near min(y), where the fit bends most
    errors = [error(float(g)) for g in grid]
    i = int(np.argmin(errors))
    lo, hi = grid[max(0, i - 1)], grid[min(len(grid) - 1, i + 1)]
    for _ in range(80):  # golden-section search inside the best grid cell's neighbours
        m1, m2 = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
        if error(m1) <= error(m2):
            hi = m2
        else:
            lo = m1
    e = float((lo + hi) / 2)
    return e if error(e) <= errors[i] else float(grid[i])


def _checked(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"fit_power_law: {x.size} x values but {y.size} y values")
    if x.size < 2 or np.unique(x).size < 2:
        raise ValueError("fit_power_law: needs at least two different x values")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(x > 0) and np.all(y > 0)):
        raise ValueError("fit_power_law: every x and y must be a finite number > 0 (log-log axes)")
    return x, y


def fit_power_law(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, irreducible: bool = False
) -> PowerLaw:
    """Fit ``y = (scale / x) ** alpha (+ E)`` by least squares on ``log y``.

    Args:
        x: sizes (parameters, compute), all > 0.
        y: losses, all > 0.
        irreducible: also fit E in ``[0, min(y))`` (needs at least three points).

    Returns:
        The :class:`PowerLaw`.

    Raises:
        ValueError: fewer than two different x, a value ≤ 0 or not finite, lengths that differ, or an
            irreducible fit with fewer than three points.

    Example:
        >>> n = np.array([1e3, 1e4, 1e5]); fit_power_law(n, (5e4 / n) ** 0.3).alpha  # 0.3
    """
    x, y = _checked(x, y)
    log_x, log_y = np.log(x), np.log(y)
    e = 0.0
    if irreducible:
        if x.size < 3:
            raise ValueError("fit_power_law: an irreducible term needs at least three points")
        e = _best_irreducible(log_x, y)
    a, b, error = _law(log_x, y, e)
    alpha = -b
    total = float(((log_y - log_y.mean()) ** 2).sum())
    r2 = 1.0 - error / total if total > 0 else 1.0
    scale = math.exp(a / alpha) if alpha != 0 else math.inf
    return PowerLaw(alpha=float(alpha), scale=float(scale), irreducible=e, r2=float(r2), n_points=int(x.size))


def frontier(compute: Sequence[float] | np.ndarray, loss: Sequence[float] | np.ndarray) -> np.ndarray:
    """Indices of the points on the lower envelope of loss against compute, in order of compute.

    A point is on the frontier when its loss is below that of every point with less compute (points of
    equal compute: the lowest loss among them, first in input order on a tie). Points with compute ≤ 0
    (before any training step) are left out: they cannot sit on a log axis.

    Example:
        >>> frontier([1, 2, 3, 4], [5.0, 6.0, 4.0, 4.5])  # array([0, 2])
    """
    compute = np.asarray(compute, dtype=np.float64).ravel()
    loss = np.asarray(loss, dtype=np.float64).ravel()
    if compute.shape != loss.shape:
        raise ValueError(f"frontier: {compute.size} compute values but {loss.size} losses")
    order = np.lexsort((np.arange(compute.size), loss, compute))  # by compute, then loss, then position
    best, kept = math.inf, []
    for i in order:
        if compute[i] > 0 and np.isfinite(loss[i]) and loss[i] < best:
            kept.append(int(i))
            best = float(loss[i])
    return np.array(kept, dtype=np.int64)


# ---- the shipped curves ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One model size's training curve.

    Attributes:
        name: e.g. ``"d32-L2"``.
        d_model, n_layers, n_heads, d_mlp: its shape.
        n_params: non-embedding parameters N (Kaplan's count).
        n_params_total: every parameter (with the token and position embeddings and the unembedding).
        step, tokens, compute, train_loss, held_out_loss: float64 arrays, one entry per snapshot
            (the train loss at step 0 is the loss of the untrained model on the training batch).
        wall_s: seconds the run took where it was made.
    """

    name: str
    d_model: int
    n_layers: int
    n_heads: int
    d_mlp: int
    n_params: int
    n_params_total: int
    step: np.ndarray
    tokens: np.ndarray
    compute: np.ndarray
    train_loss: np.ndarray
    held_out_loss: np.ndarray
    wall_s: float = 0.0

    @property
    def final_loss(self) -> float:
        """Held-out loss at the run's last snapshot."""
        return float(self.held_out_loss[-1])

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Run":
        points = data["points"]
        column = {
            key: np.array([float(p[key]) for p in points], dtype=np.float64)
            for key in ("step", "tokens", "compute", "train_loss", "held_out_loss")
        }
        return cls(
            name=str(data["name"]),
            d_model=int(data["d_model"]),
            n_layers=int(data["n_layers"]),
            n_heads=int(data["n_heads"]),
            d_mlp=int(data["d_mlp"]),
            n_params=int(data["n_params"]),
            n_params_total=int(data["n_params_total"]),
            wall_s=float(data.get("wall_s", 0.0)),
            **column,
        )


@dataclass(frozen=True)
class Curves:
    """The scaling mini-lab's runs and what was fitted to them (the shipped JSON, read)."""

    runs: tuple[Run, ...]
    settings: dict[str, Any]
    machine: dict[str, Any]
    fit: PowerLaw  # final held-out loss against N
    compute_fit: PowerLaw  # held-out loss on the frontier against C
    frontier: tuple[tuple[str, int], ...]  # (run name, snapshot index) of each frontier point, by compute
    wall_s: float
    command: str


def all_points(runs: Sequence[Run]) -> tuple[np.ndarray, np.ndarray, list[tuple[str, int]]]:
    """Every snapshot of every run: (compute, held-out loss, (run name, index)) in run order."""
    compute = np.concatenate([r.compute for r in runs]) if runs else np.zeros(0)
    loss = np.concatenate([r.held_out_loss for r in runs]) if runs else np.zeros(0)
    where = [(r.name, i) for r in runs for i in range(r.step.size)]
    return compute, loss, where


def analyse(
    runs: Sequence[Run], *, irreducible: bool = False
) -> tuple[PowerLaw, PowerLaw, tuple[tuple[str, int], ...]]:
    """The fits and the frontier of ``runs``: L(N) on the final held-out losses, the frontier, L(C) on it (each
    fit with an irreducible term E when ``irreducible``)."""
    fit = fit_power_law([r.n_params for r in runs], [r.final_loss for r in runs], irreducible=irreducible)
    compute, loss, where = all_points(runs)
    on = frontier(compute, loss)
    compute_fit = fit_power_law(compute[on], loss[on], irreducible=irreducible)
    return fit, compute_fit, tuple(where[i] for i in on)


def read_curves(path: Path) -> Curves:
    """Read the scaling curves written by ``python -m engine.training.scaling``.

    Raises:
        CurvesError: the file is missing, not JSON, of another format, or lacks a field.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise CurvesError(f"{path}: no scaling curves here (build them: python -m engine.training.scaling)") from err
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CurvesError(f"{path}: not a readable JSON file ({err})") from err
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CurvesError(f"{path}: expected a scaling-curves file of format {FORMAT}")
    try:
        runs = tuple(Run.from_dict(r) for r in data["runs"])
        fit, compute_fit = PowerLaw(**data["fit"]), PowerLaw(**data["compute_fit"])
        where = tuple((str(name), int(i)) for name, i in data["frontier"])
        return Curves(
            runs=runs,
            settings=dict(data["settings"]),
            machine=dict(data["machine"]),
            fit=fit,
            compute_fit=compute_fit,
            frontier=where,
            wall_s=float(data["wall_s"]),
            command=str(data["command"]),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise CurvesError(f"{path}: a field is missing or of the wrong type ({type(err).__name__}: {err})") from err


__all__ = [
    "FLOPS_PER_TOKEN_PER_PARAM",
    "FORMAT",
    "Curves",
    "CurvesError",
    "PowerLaw",
    "Run",
    "all_points",
    "analyse",
    "fit_power_law",
    "frontier",
    "read_curves",
]
