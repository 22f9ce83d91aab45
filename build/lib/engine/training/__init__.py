"""Training: toy tasks with known answers, a pausable training loop that yields snapshots, checkpoints.

::

    from engine.training import TrainConfig, make_model, make_task, train

    task = make_task("reverse")                     # <bos> a c b <sep> b c a
    model = make_model(task, seed=0)                # 2 layers, 4 heads, d_model 64
    for snap in train(model, task, TrainConfig(steps=1500)):
        print(snap.step, snap.loss, snap.metric)    # snap.probe_trace: an AttentionTrace

- :mod:`engine.vocab`: the word-level :class:`Vocab` and :func:`tokenize`.
- :mod:`engine.training.tasks`: copy, reverse, sort, previous-token, induction; :data:`TASKS`.
- :mod:`engine.training.loop`: :class:`TrainConfig`, :class:`TrainingControl`, :func:`train`.
- :mod:`engine.checkpoint` (shared with the models): :func:`save_checkpoint`, :func:`load_checkpoint`
  (safetensors only), re-exported here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Names are read lazily (PEP 562): ``engine.training.job_settings`` and ``tasks`` are torch-free, and a page
# that reads a setting's range must not import torch through this package's ``__init__``.
_HOME = {
    **dict.fromkeys(
        (
            "FORMAT",
            "CheckpointPaths",
            "checkpoint_paths",
            "load_checkpoint",
            "read_checkpoint_config",
            "save_checkpoint",
        ),
        "engine.checkpoint",
    ),
    **dict.fromkeys(
        ("TrainConfig", "TrainingControl", "make_model", "resolve_device", "train", "transformer_config_for"),
        "engine.training.loop",
    ),
    **dict.fromkeys(
        (
            "IGNORE",
            "TASKS",
            "Batch",
            "CopyTask",
            "InductionTask",
            "PreviousTokenTask",
            "ReverseTask",
            "SortTask",
            "Task",
            "exact_match",
            "make_task",
            "pattern_score",
            "register_task",
            "token_accuracy",
        ),
        "engine.training.tasks",
    ),
    **dict.fromkeys(("SPECIALS", "Vocab", "tokenize"), "engine.vocab"),
    "CheckpointError": "engine.records",
    "TrainingSnapshot": "engine.traces",
}

if TYPE_CHECKING:
    from engine.checkpoint import (
        FORMAT,
        CheckpointPaths,
        checkpoint_paths,
        load_checkpoint,
        read_checkpoint_config,
        save_checkpoint,
    )
    from engine.records import CheckpointError
    from engine.traces import TrainingSnapshot
    from engine.training.loop import (
        TrainConfig,
        TrainingControl,
        make_model,
        resolve_device,
        train,
        transformer_config_for,
    )
    from engine.training.tasks import (
        IGNORE,
        TASKS,
        Batch,
        CopyTask,
        InductionTask,
        PreviousTokenTask,
        ReverseTask,
        SortTask,
        Task,
        exact_match,
        make_task,
        pattern_score,
        register_task,
        token_accuracy,
    )
    from engine.vocab import SPECIALS, Vocab, tokenize


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: later reads are plain attribute lookups
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


__all__ = [
    "FORMAT",
    "IGNORE",
    "SPECIALS",
    "TASKS",
    "Batch",
    "CheckpointError",
    "CheckpointPaths",
    "CopyTask",
    "InductionTask",
    "PreviousTokenTask",
    "ReverseTask",
    "SortTask",
    "Task",
    "TrainConfig",
    "TrainingControl",
    "TrainingSnapshot",
    "Vocab",
    "checkpoint_paths",
    "exact_match",
    "load_checkpoint",
    "make_model",
    "make_task",
    "pattern_score",
    "read_checkpoint_config",
    "register_task",
    "resolve_device",
    "save_checkpoint",
    "token_accuracy",
    "tokenize",
    "train",
    "transformer_config_for",
]
