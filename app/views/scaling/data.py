"""The Scaling page's calls: the shipped curves (``assets/scaling/stories-scaling.json``, read once per process)
and one more size trained with the shipped settings as this session's long job of kind ``SCALE``."""

from __future__ import annotations

import functools

import numpy as np

from app.runtime.long_work import SCALE, long_queue, submit_long
from engine.analysis.scaling_laws import Curves, PowerLaw, Run, analyse, fit_power_law, read_curves
from engine.job_limits import about
from engine.job_records import JobStatus
from engine.records import EngineError
from engine.training.scaling import CURVES, LIVE_SIZES, Settings, run_size

CURVES_PATH = CURVES  # assets/scaling/stories-scaling.json
#: the sizes a visitor may train here, by name
LIVE = {size.name: size for size in LIVE_SIZES}
SETUP_S = 8.0  # building the stories task once per process, and the model


@functools.lru_cache(maxsize=1)
def scaling_curves() -> Curves:
    """The shipped curves (read once per process; the arrays are shared, so treat them as read-only)."""
    return read_curves(CURVES_PATH)


def scaling_json() -> bytes:
    """The shipped curves file as it is (the page's download)."""
    return CURVES_PATH.read_bytes()


def live_estimate_s(name: str) -> float:
    """Expected seconds for a live size: the shipped runs' seconds against N, fitted by a line, at its N."""
    runs = scaling_curves().runs
    slope, intercept = np.polyfit([r.n_params for r in runs], [r.wall_s for r in runs], 1)
    return SETUP_S + max(1.0, float(intercept + slope * LIVE[name].n_params))


def scaling_start(name: str) -> JobStatus:
    """Train one more size with the shipped settings as this session's long job (``EngineError`` for a size not in
    ``LIVE_SIZES`` or over the server's limit per job)."""
    if name not in LIVE:
        raise EngineError(f"only these sizes can be trained here: {', '.join(LIVE)}")
    estimate = live_estimate_s(name)
    limit = long_queue().max_seconds
    if estimate > limit:
        raise EngineError(
            f"{name} would take about {about(estimate)} here, over this server's limit of "
            f"{about(limit)} per job (AP_TRAIN_MAX_SECONDS); pick a smaller size"
        )
    size, settings = LIVE[name], Settings(**scaling_curves().settings)

    def work():
        return (yield from run_size(size, settings))

    return submit_long(SCALE, work, key=name, estimate_s=estimate)


@functools.lru_cache(maxsize=1)
def fits_with_e() -> tuple[PowerLaw, PowerLaw]:
    """L(N) and the frontier's L(C) with an irreducible term E, on the shipped curves (fitted once per process)."""
    fit, compute_fit, _ = analyse(scaling_curves().runs, irreducible=True)
    return fit, compute_fit


def refit(runs: tuple[Run, ...]) -> tuple[PowerLaw, PowerLaw]:
    """L(N) over the final held-out losses of ``runs`` (the shipped ones and the live ones together): the pure
    power law and the law with an irreducible term."""
    n, loss = [r.n_params for r in runs], [r.final_loss for r in runs]
    return fit_power_law(n, loss), fit_power_law(n, loss, irreducible=True)
