"""Toy tasks with known answers, posed as next-token prediction for a causal (decoder-only) model.

Each task makes whole sequences ``S`` with a generator; the model reads ``inputs = S`` and at each
position ``t`` is scored on ``targets[t]`` (``-100``, :data:`IGNORE`, where there is nothing to score).
With ``L`` symbols ``x_1 … x_L`` drawn from ``a, b, c, …`` (after ``z``: ``a2, b2, …``)::

    copy            <bos> x_1 … x_L <sep> x_1 … x_L     targets[t] = S[t+1] on the answer
    reverse         <bos> x_1 … x_L <sep> x_L … x_1     targets[t] = S[t+1] on the answer
    sort            <bos> x_1 … x_L <sep> sorted(x)     targets[t] = S[t+1] on the answer
    previous-token  <bos> x_1 … x_L                     targets[t] = S[t−1] for t ≥ 1
    induction       <bos> x_1 … x_m x_1 … x_m <pad>…    targets[t] = S[t+1] on the repeat

(induction draws ``m`` distinct symbols, ``m`` varying per example up to ``L``, so "the previous
occurrence of this token" is unique and its distance is not fixed; the first token of the repeat is not
scored, as nothing announces it.)

The answer of a task is a function of the sequence, so a test can re-derive it independently, and for
copy, reverse, previous-token and induction there is a known *ideal attention pattern*: the key each
query should read to answer (:meth:`Task.ideal_pattern`). A head can be scored against it with
:func:`pattern_score`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from engine.training.vocab import BOS_ID, PAD_ID, SEP_ID, SPECIALS, Vocab

IGNORE = -100  # target value with no loss (``F.cross_entropy``'s default ``ignore_index``)
MAX_SYMBOLS = 104  # symbols: a … z, then a2 … z2, a3 … z3, a4 … z4


def symbol_names(n: int) -> list[str]:
    """The first ``n`` symbol names: ``a … z``, then ``a2 … z2``, ``a3 …`` (in id order)."""
    return [chr(ord("a") + i % 26) + (str(i // 26 + 1) if i >= 26 else "") for i in range(n)]
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


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        return f"{name} must be an integer {bound}, got {value!r}"
    return None


@dataclass(frozen=True)
class SymbolTask(Task):
    """A task on ``length`` symbols drawn from the first ``n_symbols`` of :func:`symbol_names`.

    Attributes:
        length: symbols per example ``L``.
        n_symbols: size of the alphabet (2 … 104; letters up to 26).
    """

    length: int = 6
    n_symbols: int = 16

    def __post_init__(self) -> None:
        problems = [
            p
            for p in (_check_int("length", self.length, 1, 256), _check_int("n_symbols", self.n_symbols, 2, MAX_SYMBOLS))
            if p
        ]
        problems += self._extra_problems() if not problems else []
        if problems:
            raise ValueError(f"{self.name} task: " + "; ".join(problems))
        object.__setattr__(self, "_vocab", Vocab.from_words(symbol_names(self.n_symbols)))

    def _extra_problems(self) -> list[str]:
        return []

    @property
    def vocab(self) -> Vocab:
        return self._vocab  # type: ignore[attr-defined]

    @property
    def first_symbol_id(self) -> int:
        """Id of ``a``; the symbols are ids ``first_symbol_id … first_symbol_id + n_symbols − 1``."""
        return len(SPECIALS)

    def symbols(self, batch_size: int, generator: torch.Generator, *, distinct: bool = False) -> torch.Tensor:
        """``(B, L)`` random symbol ids; ``distinct`` draws without replacement within a row."""
        if distinct:
            if self.length > self.n_symbols:
                raise ValueError(f"cannot draw {self.length} distinct symbols from {self.n_symbols}")
            keys = torch.rand(batch_size, self.n_symbols, generator=generator)  # (B, n_symbols)
            draws = keys.argsort(dim=1)[:, : self.length]  # (B, L) a random permutation's prefix
        else:
            draws = torch.randint(self.n_symbols, (batch_size, self.length), generator=generator)  # (B, L)
        return draws + self.first_symbol_id

    def _n(self, n: int | None) -> int:
        n = self.seq_len if n is None else n
        if n != self.seq_len:
            raise ValueError(f"{self.name}: the ideal pattern is defined for {self.seq_len} tokens, got {n}")
        return n


@dataclass(frozen=True)
class _QuestionAnswerTask(SymbolTask):
    """``<bos> x_1 … x_L <sep> answer(x)``, scored on the answer (``T = 2L + 2``)."""

    @property
    def seq_len(self) -> int:
        return 2 * self.length + 2

    def answer(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, L)`` answer symbols for ``(B, L)`` question symbols."""
        raise NotImplementedError

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        return self._batch(self.symbols(batch_size, generator))

    def probe(self) -> list[int]:
        generator = torch.Generator().manual_seed(PROBE_SEED)
        x = self.symbols(1, generator, distinct=self.length <= self.n_symbols)  # (1, L), no repeats
        return self._batch(x).inputs[0].tolist()

    def _batch(self, x: torch.Tensor) -> Batch:
        B, L = x.shape
        bos = torch.full((B, 1), BOS_ID, dtype=torch.long)
        sep = torch.full((B, 1), SEP_ID, dtype=torch.long)
        seq = torch.cat([bos, x, sep, self.answer(x)], dim=1)  # (B, 2L+2)
        targets = torch.full_like(seq, IGNORE)  # (B, T)
        # the prediction at t is S[t+1]; the answer occupies S[L+2 … 2L+1], predicted at t = L+1 … 2L
        targets[:, L + 1 : 2 * L + 1] = seq[:, L + 2 :]
        return Batch(seq, targets)


@dataclass(frozen=True)
class CopyTask(_QuestionAnswerTask):
    """Repeat the symbols after ``<sep>``: ``a c b <sep> a c b``."""

    name: ClassVar[str] = "copy"
    description: ClassVar[str] = "Repeat the letters after <sep>: a c b <sep> a c b."
    suggested_steps: ClassVar[int] = 500

    def answer(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    def ideal_keys(self, n: int | None = None) -> dict[int, int]:
        self._n(n)
        # query t (t = L+1 … 2L) outputs x_{t−L}, which sits at position t − L
        L = self.length
        return {t: t - L for t in range(L + 1, 2 * L + 1)}


@dataclass(frozen=True)
class ReverseTask(_QuestionAnswerTask):
    """Write the symbols backwards after ``<sep>``: ``a c b <sep> b c a``."""

    name: ClassVar[str] = "reverse"
    description: ClassVar[str] = "Write the letters backwards after <sep>: a c b <sep> b c a."
    suggested_steps: ClassVar[int] = 500

    def answer(self, x: torch.Tensor) -> torch.Tensor:
        return x.flip(dims=[1])

    def ideal_keys(self, n: int | None = None) -> dict[int, int]:
        self._n(n)
        # query t (t = L+1 … 2L) outputs x_{2L+1−t}, which sits at position 2L + 1 − t
        L = self.length
        return {t: 2 * L + 1 - t for t in range(L + 1, 2 * L + 1)}


@dataclass(frozen=True)
class SortTask(_QuestionAnswerTask):
    """Write the symbols in order after ``<sep>``: ``c a b <sep> a b c`` (id order: ``z < a2``)."""

    name: ClassVar[str] = "sort"
    description: ClassVar[str] = "Write the letters in alphabetical order after <sep>: c a b <sep> a b c."
    suggested_steps: ClassVar[int] = 1500

    def answer(self, x: torch.Tensor) -> torch.Tensor:
        return x.sort(dim=1).values


@dataclass(frozen=True)
class PreviousTokenTask(SymbolTask):
    """At every position, name the token before it: ``<bos> a c b`` → ``· <bos> a c``."""

    name: ClassVar[str] = "previous-token"
    description: ClassVar[str] = "At every position, output the token just before it."
    suggested_steps: ClassVar[int] = 500
    length: int = 12

    @property
    def seq_len(self) -> int:
        return self.length + 1

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        x = self.symbols(batch_size, generator)  # (B, L)
        seq = torch.cat([torch.full((batch_size, 1), BOS_ID, dtype=torch.long), x], dim=1)  # (B, L+1)
        targets = torch.full_like(seq, IGNORE)
        targets[:, 1:] = seq[:, :-1]  # targets[t] = S[t−1]
        return Batch(seq, targets)

    def ideal_keys(self, n: int | None = None) -> dict[int, int]:
        n = self.seq_len if n is None else n
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{self.name}: n must be a positive integer, got {n!r}")
        return {t: t - 1 for t in range(1, n)}  # each position reads its left neighbour


@dataclass(frozen=True)
class InductionTask(SymbolTask):
    """A run of ``m`` distinct random symbols, then the same run again; predict the repeat.

    ``<bos> x_1 … x_m x_1 … x_m <pad> …``, with ``m`` drawn per example between ``min_length`` and
    ``length`` (padded to ``T = 2·length + 1``). Once the repeat has started, the next token is the one
    that followed the current token's previous occurrence. As ``m`` varies, "look a fixed distance
    back" does not work: the model has to find the previous occurrence by content (an induction head,
    usually helped by a previous-token head in the layer below).

    Attributes:
        length: the longest run.
        min_length: the shortest run (default ``max(2, length // 2)``).
    """

    name: ClassVar[str] = "induction"
    description: ClassVar[str] = "A random run of letters, then the same run again: predict the repeat."
    suggested_steps: ClassVar[int] = 2500
    length: int = 8
    min_length: int | None = None

    def _extra_problems(self) -> list[str]:
        if self.length < 2:
            return [f"length must be at least 2, got {self.length}"]
        if self.length > self.n_symbols:
            return [f"length ({self.length}) cannot exceed n_symbols ({self.n_symbols}): the symbols are distinct"]
        problem = _check_int("min_length", self.shortest, 2, self.length)
        return [problem] if problem else []

    @property
    def shortest(self) -> int:
        """The shortest run ``m``."""
        return max(2, self.length // 2) if self.min_length is None else self.min_length

    @property
    def seq_len(self) -> int:
        return 2 * self.length + 1

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        x = self.symbols(batch_size, generator, distinct=True)  # (B, L)
        m = torch.randint(self.shortest, self.length + 1, (batch_size, 1), generator=generator)  # (B, 1)
        return self._batch(x, m)

    def probe(self) -> list[int]:
        x = self.symbols(1, torch.Generator().manual_seed(PROBE_SEED), distinct=True)  # (1, L)
        return self._batch(x, torch.tensor([[self.length]])).inputs[0].tolist()  # a full-length run

    def _batch(self, x: torch.Tensor, m: torch.Tensor) -> Batch:
        B, L = x.shape
        p = torch.arange(2 * L + 1)[None, :]  # (1, T) positions
        first = (p >= 1) & (p <= m)  # (B, T) the run: S[p] = x_p
        second = (p > m) & (p <= 2 * m)  # (B, T) the repeat: S[p] = x_{p−m}
        index = torch.where(first, p - 1, p - m - 1).clamp(0, L - 1)  # (B, T) 0-based index into x
        seq = torch.where(first | second, x.gather(1, index), PAD_ID)  # (B, T)
        seq[:, 0] = BOS_ID
        # S[m+1] (the repeat's first token) is not predictable; S[m+2 … 2m] are, from t = m+1 … 2m−1
        scored = (p >= m + 1) & (p <= 2 * m - 1)  # (B, T)
        targets = torch.where(scored, seq.roll(-1, dims=1), IGNORE)  # (B, T)
        return Batch(seq, targets)

    def ideal_keys(self, n: int | None = None) -> dict[int, int]:
        """The keys for a full-length run (``m = length``, like the probe)."""
        self._n(n)
        # query t in the repeat (t = L+1 … 2L) holds x_{t−L}, first seen at t − L; the token after it
        # is at t − L + 1 (for t = 2L that is the repeat's first token, still the induction answer)
        L = self.length
        return {t: t - L + 1 for t in range(L + 1, 2 * L + 1)}


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
