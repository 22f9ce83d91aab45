"""Recipe ``induction-2l-attn-only``: induction heads in a two-layer attention-only transformer.

``python -m engine.training.pretrain induction-2l-attn-only`` trains the model of
:mod:`engine.training.induction` with the page's default settings and writes
``assets/checkpoints/induction-2l-attn-only.*`` plus ``assets/snapshots/induction-2l-attn-only.json``: the
curves of every snapshot (loss, ICL score, each head's scores), and two moments in full (the probe's
attention and the loss at each position): ``before`` (on the plateau, two snapshots before the phase
change) and ``after`` (the end). The Train page draws that file without training; the tests re-measure the
card from the checkpoint.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch

from engine.analysis.induction import EARLY, LATE, icl_score, phase_change_step
from engine.checkpoint import save_checkpoint
from engine.registry import ASSETS
from engine.training.induction import (
    CONTEXT,
    DEFAULT_BATCH,
    DEFAULT_EVERY,
    DEFAULT_LR,
    DEFAULT_STEPS,
    MAX_PERIOD,
    MIN_PERIOD,
    PROBE_PERIOD,
    SCORE_PERIOD,
    InductionPoint,
    RepeatedLettersTask,
    eval_batch,
    head_scores,
    loss_by_position,
    make_model,
    train_induction,
)
from engine.training.recipes.common import Run, log_line, run_fields

NAME = "induction-2l-attn-only"
SNAPSHOTS = ASSETS / "snapshots"


def _as_is(value: float, _digits: int) -> float:
    return value


def _moment(point: InductionPoint, exact: bool) -> dict:
    r = _as_is if exact else round
    return {
        "step": point.step,
        "icl": r(point.icl, 4),
        "probe": (point.probe if exact else np.round(point.probe, 3)).tolist(),  # [layer][head][query][key]
        "loss_by_position": [None if not np.isfinite(v) else r(float(v), 4) for v in point.curve],
        "scores": point.scores.to_dict(),
    }


def snapshot_document(
    points: list[InductionPoint], tokens: tuple[str, ...], phase: int | None, *, model: str = NAME, exact: bool = False
) -> dict:
    """The JSON the page draws: curves of every point, and the two moments before and after the phase change (the
    start and the end without one). The file keeps 4 digits (3 for the probe); ``exact`` (a live run) keeps all."""
    index = next((i for i, p in enumerate(points) if p.step == phase), 0)
    r = _as_is if exact else round
    return {
        "model": model,
        "early": list(EARLY),
        "late": list(LATE),
        "phase_change_step": phase,
        "probe_tokens": list(tokens),
        "curves": {
            "step": [p.step for p in points],
            "loss": [r(p.loss, 4) for p in points],
            "eval_loss": [r(p.eval_loss, 4) for p in points],
            "icl": [r(p.icl, 4) for p in points],
            "scores": [p.scores.to_dict() for p in points],
        },
        "before": _moment(points[max(0, index - 2)], exact),
        "after": _moment(points[-1], exact),
    }


def build(out: Path, *, steps: int | None = None, seed: int = 0, snapshots: Path = SNAPSHOTS) -> dict:
    """Train with the page's defaults on one CPU thread, as the page's jobs do; write the checkpoint, its card and
    the snapshot file."""
    torch.set_num_threads(1)
    steps = steps or DEFAULT_STEPS
    model = make_model(seed)
    task = RepeatedLettersTask()
    started = time.perf_counter()
    last = None
    for progress in train_induction(steps, DEFAULT_LR, seed, model=model):
        last = progress
        log_line(progress.text)
    assert last is not None
    wall = time.perf_counter() - started
    run = Run(wall, "cpu", last_loss=float("nan"), training_s=wall)
    points = list(last.points)
    phase = phase_change_step(np.array([p.step for p in points]), np.array([p.icl for p in points]))
    if phase is None:
        raise RuntimeError(f"no phase change in {steps} steps with seed {seed}: try another seed or more steps")
    model.eval()
    icl = icl_score(loss_by_position(model, eval_batch()))
    scores = head_scores(model)
    prev = np.unravel_index(np.argmax(scores.previous_token[0]), scores.previous_token[0].shape)
    ind = np.unravel_index(np.argmax(scores.prefix_matching[1]), scores.prefix_matching[1].shape)
    metrics = {
        "in-context-learning score (nats)": round(icl, 4),
        "phase change step": phase,
        "previous-token head": f"0.{int(prev[0])}",
        "previous-token score": round(float(scores.previous_token[0][prev]), 4),
        "induction head": f"1.{int(ind[0])}",
        "prefix-matching score": round(float(scores.prefix_matching[1][ind]), 4),
        "copying score": round(float(scores.copying[1][ind]), 4),
        "evaluation loss (nats/token)": round(float(np.nanmean(loss_by_position(model, eval_batch()))), 4),
    }
    card = {
        "title": NAME,
        "label": "Induction heads: 2-layer attention-only (own, letters)",
        "family": "decoder",
        "description": "A two-layer transformer without MLPs, trained here on runs of random letters repeated to "
        "fill 64 tokens. Type letters (each letter is one token), then type them again: an induction "
        "head in layer 1 looks at the letter after the earlier copy.",
        "data": f"<bos> + a run of {MIN_PERIOD}–{MAX_PERIOD} random letters (with repeats) repeated to {CONTEXT} "
        f"tokens, fresh every step; {len(task.vocab)} tokens (26 letters + 5 specials)",
        "batch": f"{DEFAULT_BATCH} × {CONTEXT} tokens, lr {DEFAULT_LR:g} constant after 40 warm-up steps",
        "measured_on": f"ICL score: loss at positions {LATE[0]}–{LATE[1]} minus positions {EARLY[0]}–{EARLY[1]}, "
        f"{len(eval_batch().inputs)} fixed sequences (engine.training.induction.eval_batch); head "
        f"scores on 64 fixed runs of {SCORE_PERIOD} letters repeated once (TransformerLens's "
        f"induction score); the phase change is the first snapshot (every {DEFAULT_EVERY} steps) "
        "halfway from the first ICL score to the last",
        "probe": f"<bos> + {PROBE_PERIOD} letters + the same letters",
        **run_fields(NAME, run, steps=steps, seed=seed, metrics=metrics),
    }
    save_checkpoint(out, NAME, model, kind="transformer", config=model.cfg.to_dict(), vocab=task.vocab, card=card)
    snapshots.mkdir(parents=True, exist_ok=True)
    document = snapshot_document(points, last.probe_tokens, phase)
    (snapshots / f"{NAME}.json").write_text(
        json.dumps(document, separators=(",", ":"), allow_nan=False) + "\n", encoding="utf-8"
    )
    return card
