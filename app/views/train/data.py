"""The Train page's calls into ``engine.training.jobs``: this session's one job on the long-work queue (keyed by
``session_id()``), its snapshots, and what the finished model can do (answer, zip, open on the other pages)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import engine.registry
from app.runtime.long_work import connected
from app.runtime.models import bound_threads, model_pass, session_id

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
    """``(parameters, the server's time estimate)`` for some settings: the numbers :func:`train_start` checks. The
    manager times a few throwaway steps and keeps that per model shape (reruns and Start find the same number).

    Raises:
        JobSettingsError: the settings are invalid (message lists why).
    """
    from engine.training.job_settings import build_task, count_params, validate_settings

    checked = validate_settings(settings)
    bound_threads()
    task = build_task(checked.task)
    with model_pass():
        estimate = train_manager().estimate(checked)
    return count_params(checked, len(task.vocab), task.seq_len), estimate


def train_start(settings: dict) -> None:
    """Validate and start (or queue) this session's job, replacing its previous one.

    Raises:
        JobSettingsError: invalid settings, or over the server's time limit per job (nothing started).
    """
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


def train_options() -> dict:
    """Choices for the Train page's widgets: tasks (name → label) and positional encodings."""
    from engine.training.job_settings import POS_ENCODINGS, TASK_LABELS

    return {"tasks": dict(TASK_LABELS), "pos_encodings": list(POS_ENCODINGS)}


def train_task_info(task: str) -> dict:
    """What the page shows about a task: its description, the ideal pattern (or None), an example input."""
    from engine.training.job_settings import build_task

    t = build_task(task)
    return {"description": t.description, "ideal": t.ideal_pattern(), "example": EXAMPLES.get(task, "")}
