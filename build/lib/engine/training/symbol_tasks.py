"""Toy tasks with known answers on random symbols, posed as next-token prediction for a causal model.

Each task makes whole sequences ``S`` with a generator; the model reads ``inputs = S`` and at each
position ``t`` is scored on ``targets[t]`` (:data:`~engine.training.task_base.IGNORE` where there is
nothing to score). With ``L`` symbols ``x_1 … x_L`` drawn from ``a, b, c, …`` (after ``z``: ``a2, b2, …``)::

    copy            <bos> x_1 … x_L <sep> x_1 … x_L     targets[t] = S[t+1] on the answer
    reverse         <bos> x_1 … x_L <sep> x_L … x_1     targets[t] = S[t+1] on the answer
    sort            <bos> x_1 … x_L <sep> sorted(x)     targets[t] = S[t+1] on the answer
    previous-token  <bos> x_1 … x_L                     targets[t] = S[t−1] for t ≥ 1
    induction       <bos> x_1 … x_m x_1 … x_m <pad>…    targets[t] = S[t+1] on the repeat

(induction draws ``m`` distinct symbols, ``m`` varying per example up to ``L``, so "the previous
occurrence of this token" is unique and its distance is not fixed; the first token of the repeat is not
scored, as nothing announces it.)

The answer of a task is a function of the sequence, so a test can re-derive it independently, and for
copy, reverse, previous-token and induction there is a known *ideal attention pattern*
(:meth:`~engine.training.task_base.Task.ideal_pattern`, from each task's ``ideal_keys``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from engine.training.task_base import IGNORE, PROBE_SEED, Batch, Task
from engine.vocab import BOS_ID, PAD_ID, SEP_ID, SPECIALS, Vocab

MAX_SYMBOLS = 104  # symbols: a … z, then a2 … z2, a3 … z3, a4 … z4


def symbol_names(n: int) -> list[str]:
    """The first ``n`` symbol names: ``a … z``, then ``a2 … z2``, ``a3 …`` (in id order)."""
    return [chr(ord("a") + i % 26) + (str(i // 26 + 1) if i >= 26 else "") for i in range(n)]


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
            for p in (
                _check_int("length", self.length, 1, 256),
                _check_int("n_symbols", self.n_symbols, 2, MAX_SYMBOLS),
            )
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
