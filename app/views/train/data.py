"""The Train page's calls: this session's Train live job (``engine.training.jobs``, keyed by ``session_id()``) and
what its finished model can do; the induction tab's shipped run (a JSON file) and live run, both as the document
``engine.training.recipes.induction.snapshot_document`` writes."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import engine.registry
from app.runtime.long_work import INDUCTION, connected, submit_long
from app.runtime.models import bound_threads, model_pass, session_id
from engine.job_records import JobStatus
from engine.records import EngineError

if TYPE_CHECKING:
    from engine.training.budget import Estimate

#: an example input per task, for "Try the trained model"
EXAMPLES = {
    "copy": "a f c p b k",
    "reverse": "a f c p b k",
    "sort": "f a k c p b",
    "previous-token": "a b c d e",
    "induction": "a d c f",
    "stories": "lily found a",
    "translation": "the red car is fast .",
}


def train_manager():
    """The server-wide training job manager (cap on concurrent jobs, FIFO queue, heartbeat reaper)."""
    from engine.training.jobs import get_manager

    return get_manager()


def train_estimate(settings: dict) -> "tuple[int, Estimate]":
    """``(parameters, the server's time estimate)`` for some settings (``JobSettingsError`` when invalid): the
    numbers :func:`train_start` checks. The manager times a few steps once per model shape (Start finds the same)."""
    from engine.training.job_settings import build_task, count_params, validate_settings

    checked = validate_settings(settings)
    bound_threads()
    task = build_task(checked.task)
    with model_pass():
        estimate = train_manager().estimate(checked)
    return count_params(checked, len(task.vocab), task.seq_len), estimate


def train_start(settings: dict) -> None:
    """Validate and start (or queue) this session's job, replacing its previous one; ``JobSettingsError`` for
    invalid settings or over the server's time limit per job (nothing started)."""
    bound_threads()
    train_estimate(settings)  # times new settings under the bound on concurrent torch work; submit reuses it
    train_manager().submit(session_id(), settings, alive=connected())
    engine.registry.unregister_runtime(session_id())  # the replaced job's model, if it was opened elsewhere


def train_progress():
    """This session's job progress (None without a job); also the heartbeat that keeps the job alive."""
    manager = train_manager()
    manager.heartbeat(session_id())
    job = manager.get(session_id())
    return None if job is None else job.progress()


def train_reset() -> None:
    """Stop this session's job, wait for it, and forget it and its model."""
    train_manager().discard(session_id())
    engine.registry.unregister_runtime(session_id())


def finished_job():
    """This session's finished job (raises ValueError before there is one)."""
    job = train_manager().get(session_id())
    if job is None or not job.progress().finished:
        raise ValueError("train a model first")
    return job


def train_answer(text: str):
    """The finished model's greedy answer to ``text`` and the right one (raises ValueError with a message)."""
    from engine.training.export import answer

    job = finished_job()
    with model_pass():
        return answer(job, text)


def train_checkpoint() -> "Callable[[], bytes]":
    """A builder of the finished model's zip (safetensors + config JSON + model card), which
    ``st.download_button`` calls on a click: it closes over the job, and nothing is zipped on reruns."""
    from engine.training.export import checkpoint_zip

    job = finished_job()
    return lambda: checkpoint_zip(job, f"trained-{job.settings.task}")


def train_register() -> str:
    """Register this session's finished model for the other pages; returns its model id."""
    import uuid

    from engine.training.export import runtime_model

    job = finished_job()
    model_id = f"trained-{job.settings.task}-{uuid.uuid4().hex[:6]}"
    engine.registry.register_runtime(model_id, runtime_model(job, model_id), session_id())
    return model_id


def train_task_info(task: str) -> dict:
    """What the page shows about a task: its description, the ideal pattern (or None), an example input."""
    from engine.training.job_settings import build_task

    t = build_task(task)
    return {"description": t.description, "ideal": t.ideal_pattern(), "example": EXAMPLES.get(task, "")}


#: the shipped checkpoint and its snapshot file (written by ``python -m engine.training.pretrain induction-2l-attn-only``)
INDUCTION_MODEL = "induction-2l-attn-only"
SNAPSHOT_FILE = engine.registry.ASSETS / "snapshots" / f"{INDUCTION_MODEL}.json"
#: expected seconds: setting up, then per step on one thread of a busy 2-core server, measuring included
SETUP_S, STEP_S = 2.0, 0.05


@functools.lru_cache(maxsize=1)
def induction_shipped() -> dict[str, Any]:
    """The shipped run's document (read once per process; callers must not change it); EngineError when the file
    cannot be read (the message names the command that rebuilds it)."""
    try:
        return json.loads(SNAPSHOT_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise EngineError(
            f"The shipped induction run ({SNAPSHOT_FILE.name}) cannot be read ({type(err).__name__}). "
            f"Rebuild it with `python -m engine.training.pretrain {INDUCTION_MODEL}`."
        ) from err


def induction_options() -> dict[str, Any]:
    """The live run's defaults and limits for the widgets."""
    from engine.training import induction as ind

    return {"steps": ind.DEFAULT_STEPS, "lr": ind.DEFAULT_LR, "step_range": ind.STEP_RANGE, "lr_range": ind.LR_RANGE}


def induction_start(steps: Any, lr: Any, seed: Any) -> JobStatus:
    """Check the settings and train a fresh model as this session's long job (replacing its previous run); a
    setting out of range raises ValueError (which and why) and starts nothing."""
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
    from engine.analysis.induction import phase_change_step
    from engine.training.recipes.induction import snapshot_document

    points = list(getattr(progress, "points", ()) or ())
    if not points:
        return None
    phase = phase_change_step([p.step for p in points], [p.icl for p in points]) if len(points) > 1 else None
    return snapshot_document(points, progress.probe_tokens, phase, model="your run", exact=True)
