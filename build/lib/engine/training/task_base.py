"""What every task shares: the :class:`Batch` record, :data:`IGNORE`, the metrics and the abstract :class:`Task`.

A task makes whole sequences ``S``; the model reads ``inputs = S`` and at each position ``t`` is scored
on ``targets[t]`` (``-100``, :data:`IGNORE`, where there is nothing to score). :func:`exact_match` and
:func:`token_accuracy` score logits on a batch. A task with a known *ideal attention pattern* (the key
each query should read to answer, :meth:`Task.ideal_pattern`) lets a head be scored against it with
:func:`pattern_score`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from engine.vocab import Vocab

IGNORE = -100  # target value with no loss (``F.cross_entropy``'s default ``ignore_index``)
PROBE_SEED = 1234  # the probe input is sampled from this fixed seed


@dataclass(frozen=True)
class Batch:
    """A batch of examples.

    Attributes:
        inputs: ``(B, T)`` long token ids.
        targets: ``(B, T)`` long, the token expected at each position, :data:`IGNORE` where unscored.
    """

    inputs: torch.Tensor
    targets: torch.Tensor

    def __post_init__(self) -> None:
        if self.inputs.ndim != 2 or self.inputs.shape != self.targets.shape:
            raise ValueError(
                f"Batch: inputs and targets must both be (B, T), got {tuple(self.inputs.shape)} "
                f"and {tuple(self.targets.shape)}"
            )

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on ``device``."""
        return Batch(self.inputs.to(device), self.targets.to(device))

    @property
    def n_scored(self) -> int:
        """Number of target positions that count."""
        return int((self.targets != IGNORE).sum())


def exact_match(logits: torch.Tensor, batch: Batch) -> float:
    """Fraction of sequences whose every scored target is the argmax of the logits.

    Args:
        logits: ``(B, T, V)``.
        batch: the batch the logits are for.

    Returns:
        A number in ``[0, 1]``.
    """
    scored = batch.targets != IGNORE  # (B, T)
    right = (logits.argmax(dim=-1) == batch.targets) | ~scored  # (B, T)
    return float(right.all(dim=1).float().mean())


def token_accuracy(logits: torch.Tensor, batch: Batch) -> float:
    """Fraction of scored target positions whose argmax is right (0.0 when nothing is scored)."""
    scored = batch.targets != IGNORE  # (B, T)
    if not bool(scored.any()):
        return 0.0
    right = logits.argmax(dim=-1) == batch.targets  # (B, T)
    return float(right[scored].float().mean())


def pattern_score(pattern: np.ndarray, ideal: np.ndarray, rows: np.ndarray | None = None) -> float:
    """How much of a head's attention falls where the ideal pattern puts it.

    ``mean over rows i of Σ_j min(pattern[i, j], ideal[i, j])``: 1.0 when the head matches the ideal,
    0.0 when it attends elsewhere. For one-hot ideal rows this is the weight on the ideal key.

    Args:
        pattern: ``[q_pos, k_pos]`` attention weights of one head.
        ideal: ``[q_pos, k_pos]`` from :meth:`Task.ideal_pattern`.
        rows: ``[q_pos]`` bool, the rows to average over (default: all).

    Returns:
        A number in ``[0, 1]``.
    """
    if pattern.shape != ideal.shape:
        raise ValueError(f"pattern {pattern.shape} and ideal {ideal.shape} must have one shape")
    overlap = np.minimum(pattern, ideal).sum(axis=-1)  # [q]
    if rows is not None:
        overlap = overlap[rows]
    return float(overlap.mean()) if overlap.size else 0.0


class Task(ABC):
    """A source of examples with known answers.

    Subclasses set :attr:`name`, :attr:`description`, and provide :attr:`vocab`, :attr:`seq_len`,
    :meth:`sample` and :meth:`probe`; they may override :meth:`metric` and :meth:`ideal_keys`.
    """

    name: ClassVar[str] = "task"
    description: ClassVar[str] = ""
    metric_name: ClassVar[str] = "exact match"
    causal: ClassVar[bool] = True  # the model reads the sequence left to right
    suggested_steps: ClassVar[int] = 1500  # enough for ~99% with the default settings and model

    @property
    @abstractmethod
    def vocab(self) -> Vocab:
        """The task's vocabulary."""

    @property
    @abstractmethod
    def seq_len(self) -> int:
        """Length T of every input sequence (the model needs ``max_len >= seq_len``)."""

    @abstractmethod
    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        """``batch_size`` fresh examples drawn with ``generator`` (a CPU ``torch.Generator``)."""

    def probe(self) -> list[int]:
        """A fixed input (the same ids on every call) to trace while training."""
        return self.sample(1, torch.Generator().manual_seed(PROBE_SEED)).inputs[0].tolist()

    def metric(self, logits: torch.Tensor, batch: Batch) -> float:
        """The task's headline number on ``batch``: :func:`exact_match` unless overridden."""
        return exact_match(logits, batch)

    def ideal_keys(self, n: int | None = None) -> dict[int, int] | None:
        """``{query position: key position}``: where each query should look to answer (None: no pattern).

        Args:
            n: sequence length, default :attr:`seq_len`.
        """
        return None

    def ideal_pattern(self, n: int | None = None) -> np.ndarray | None:
        """The attention pattern that solves the task, ``[q, k]`` float32 with rows summing to 1.

        Row ``q`` is one-hot on ``ideal_keys(n)[q]``; rows where the task asks nothing of attention
        (see :meth:`ideal_rows`) attend to themselves. None for tasks without one pattern (sort, corpora).

        Args:
            n: sequence length, default :attr:`seq_len`.
        """
        keys = self.ideal_keys(n)
        if keys is None:
            return None
        n = self.seq_len if n is None else n
        ideal = np.eye(n, dtype=np.float32)
        for q, k in keys.items():
            ideal[q] = 0.0
            ideal[q, k] = 1.0
        return ideal

    def ideal_rows(self, n: int | None = None) -> np.ndarray | None:
        """``[q]`` bool: the rows of :meth:`ideal_pattern` that say something (None when no pattern)."""
        keys = self.ideal_keys(n)
        if keys is None:
            return None
        rows = np.zeros(self.seq_len if n is None else n, dtype=bool)
        rows[list(keys)] = True
        return rows
