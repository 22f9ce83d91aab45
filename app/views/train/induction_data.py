"""The Train page's induction-heads tab: the shipped run (a JSON file, no torch) and a live run on the long-work lane.

Both reach the page as the same plain document (what ``engine.training.recipes.induction`` writes: every
snapshot's ``curves``, the moments ``before`` and ``after`` the phase change, the probe's tokens); a live run's
``InductionProgress`` becomes one through :func:`run_document`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from app.runtime.long_work import INDUCTION, submit_long
from engine.job_records import JobStatus

#: the shipped checkpoint and its snapshot file (written by ``python -m engine.training.pretrain induction-2l-attn-only``)
INDUCTION_MODEL = "induction-2l-attn-only"
SNAPSHOT_FILE = Path(__file__).resolve().parents[3] / "assets" / "snapshots" / f"{INDUCTION_MODEL}.json"
#: expected seconds: setting up, then per step on one thread of a busy 2-core server, measuring included
SETUP_S, STEP_S = 2.0, 0.05


@functools.lru_cache(maxsize=1)
def induction_shipped() -> dict[str, Any]:
    """The shipped run's document (read once per process; callers must not change it).

    Raises:
        ValueError: the file is missing or unreadable (the message names it and the command that rebuilds it).
    """
    try:
        return json.loads(SNAPSHOT_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(
            f"The shipped induction run ({SNAPSHOT_FILE.name}) cannot be read ({type(err).__name__}). "
            f"Rebuild it with `python -m engine.training.pretrain {INDUCTION_MODEL}`."
        ) from err


def induction_options() -> dict[str, Any]:
    """The live run's defaults and limits for the widgets."""
    from engine.training import induction as ind

    return {"steps": ind.DEFAULT_STEPS, "lr": ind.DEFAULT_LR, "step_range": ind.STEP_RANGE, "lr_range": ind.LR_RANGE}


def induction_start(steps: Any, lr: Any, seed: Any) -> JobStatus:
    """Check the settings and train a fresh model as this session's long job (replacing its previous run).

    Raises:
        ValueError: a setting out of range (the message says which and why); nothing is started.
    """
    from engine.training.induction import check_settings, train_induction

    steps, lr, seed = check_settings(steps, lr, seed)

    def work():
        last = None
        for progress in train_induction(steps, lr, seed):
            last = progress
            yield progress
        return last

    return submit_long(INDUCTION, work, key=(steps, lr, seed), estimate_s=SETUP_S + STEP_S * steps)


def run_document(progress: Any) -> dict[str, Any] | None:
    """A live run's ``InductionProgress`` as the shipped file's document (None before its first point)."""
    from engine.analysis.induction import EARLY, LATE, phase_change_step

    points = list(getattr(progress, "points", ()) or ())
    if not points:
        return None
    steps = [p.step for p in points]
    icl = [p.icl for p in points]
    phase = phase_change_step(steps, icl) if len(points) > 1 else None
    index = steps.index(phase) if phase is not None else 0

    def moment(p) -> dict[str, Any]:
        return {
            "step": p.step,
            "icl": p.icl,
            "probe": p.probe.tolist(),
            "scores": p.scores.to_dict(),
            "loss_by_position": [None if v != v else float(v) for v in p.curve],
        }

    return {
        "model": "your run",
        "early": list(EARLY),
        "late": list(LATE),
        "phase_change_step": phase,
        "probe_tokens": list(progress.probe_tokens),
        "curves": {
            "step": steps,
            "loss": [p.loss for p in points],
            "eval_loss": [p.eval_loss for p in points],
            "icl": icl,
            "scores": [p.scores.to_dict() for p in points],
        },
        "before": moment(points[max(0, index - 2)]),
        "after": moment(points[-1]),
        "total_steps": progress.total_steps,
    }
