"""The task registry: :data:`TASKS`, :func:`register_task` and :func:`make_task`; the import path for tasks.

The pieces live in :mod:`engine.training.task_base` (:class:`Batch`, :data:`IGNORE`, the metrics, the
abstract :class:`Task` with its ideal attention pattern) and :mod:`engine.training.symbol_tasks` (copy,
reverse, sort, previous-token, induction); this module re-exports them, so
``from engine.training.tasks import make_task, Batch, …`` keeps working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.training.symbol_tasks import CopyTask, InductionTask, PreviousTokenTask, ReverseTask, SortTask
from engine.training.task_base import (  # noqa: F401  (re-exported: the import path for tasks)
    IGNORE,
    Batch,
    Task,
    exact_match,
    pattern_score,
    token_accuracy,
)

TaskFactory = Callable[..., Task]

TASKS: dict[str, TaskFactory] = {
    CopyTask.name: CopyTask,
    ReverseTask.name: ReverseTask,
    SortTask.name: SortTask,
    PreviousTokenTask.name: PreviousTokenTask,
    InductionTask.name: InductionTask,
}


def register_task(name: str, factory: TaskFactory) -> None:
    """Add a task factory to :data:`TASKS` (e.g. the generated corpora).

    Raises:
        ValueError: ``name`` is already taken by another factory.
    """
    if name in TASKS and TASKS[name] is not factory:
        raise ValueError(f"a task named {name!r} is already registered")
    TASKS[name] = factory


def make_task(name: str, **kwargs: Any) -> Task:
    """Build the task registered as ``name``.

    Args:
        name: a key of :data:`TASKS`.
        **kwargs: the task's settings, e.g. ``length=6, n_symbols=16``.

    Raises:
        ValueError: unknown name (the message lists the known ones), unknown setting or invalid value.

    Example:
        >>> task = make_task("reverse", length=5)
        >>> task.vocab.decode(task.probe())
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}")
    try:
        return TASKS[name](**kwargs)
    except TypeError as err:  # an unexpected keyword argument
        raise ValueError(f"{name} task: {err}") from err
