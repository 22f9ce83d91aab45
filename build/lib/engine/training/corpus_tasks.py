"""Language-modelling tasks on the generated corpora (the toy tasks live in :mod:`.tasks`).

``TranslationTask``: toy English → French as a prefix language model ``<bos> en <sep> fr <eos>``.

``StoriesTask``: next-token prediction on children's stories from
:mod:`engine.corpora.stories`. Stories are joined into one stream
``<bos> story <eos> <bos> story <eos> …`` and training windows are cut from it at random places;
the held-out stories (a seeded split with no overlap) give the evaluation batch.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from engine.corpora import story_corpus, story_vocab, train_test_split, translation_corpus, translation_vocab
from engine.training.tasks import IGNORE, Batch, Task, token_accuracy
from engine.vocab import BOS_ID, EOS_ID, PAD_ID, SEP_ID, Vocab, tokenize

PROBE_STORY = "Lily found a red ball. She gave it to Tom. Tom threw the ball."


@dataclass(frozen=True)
class StoriesTask(Task):
    """Next-token prediction on generated stories.

    Attributes:
        seq_len_: tokens per training window (the model needs ``max_len >= seq_len_``).
        n_stories: stories generated (train + held out).
        test_fraction: share of stories held out for evaluation.
        seed: the corpus seed.
    """

    seq_len_: int = 64
    n_stories: int = 20_000
    test_fraction: float = 0.05
    seed: int = 0
    _data: dict = field(init=False, repr=False, compare=False)

    name: ClassVar[str] = "stories"
    description: ClassVar[str] = "Predict the next word of short generated children's stories."
    metric_name: ClassVar[str] = "next-token accuracy"

    def _vocab(self) -> Vocab:
        """The stories' words (a subclass may add tokens, e.g. the masked-LM task's ``<mask>``)."""
        return Vocab.from_words(story_vocab())

    def __post_init__(self) -> None:
        vocab = self._vocab()
        stories = story_corpus(self.n_stories, self.seed)
        train, test = train_test_split(stories, self.test_fraction, self.seed, key=tuple)

        def stream(items: list[list[str]]) -> torch.Tensor:
            ids: list[int] = []
            for words in items:
                ids += [BOS_ID, *vocab.encode(words), EOS_ID]
            return torch.tensor(ids, dtype=torch.long)

        object.__setattr__(
            self, "_data", {"vocab": vocab, "train": stream(train), "test": stream(test), "test_stories": test}
        )

    @property
    def vocab(self) -> Vocab:
        return self._data["vocab"]

    @property
    def seq_len(self) -> int:
        return self.seq_len_

    @property
    def test_stories(self) -> list[list[str]]:
        """Held-out stories as token lists (never seen in training)."""
        return self._data["test_stories"]

    def _windows(self, data: torch.Tensor, batch_size: int, generator: torch.Generator) -> Batch:
        starts = torch.randint(len(data) - self.seq_len_ - 1, (batch_size,), generator=generator)  # (B,)
        offsets = torch.arange(self.seq_len_ + 1)  # (T+1,)
        chunk = data[starts[:, None] + offsets[None, :]]  # (B, T+1)
        return Batch(inputs=chunk[:, :-1], targets=chunk[:, 1:].clone())

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Random training windows."""
        return self._windows(self._data["train"], batch_size, generator)

    def held_out(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Random windows of the held-out stories."""
        return self._windows(self._data["test"], batch_size, generator)

    def metric(self, logits: torch.Tensor, batch: Batch) -> float:
        return token_accuracy(logits, batch)

    def probe(self) -> list[int]:
        return [BOS_ID, *self.vocab.encode(tokenize(PROBE_STORY))]

    def unigram_loss(self) -> float:
        """Cross-entropy (nats/token) of the best model that ignores context: the training unigram."""
        train = self._data["train"].tolist()
        targets = train[1:]
        counts = Counter(targets)
        total = len(targets)
        return -sum(c / total * math.log(c / total) for c in counts.values())


@dataclass(frozen=True)
class TranslationTask(Task):
    """Toy English → French as a decoder-only prefix language model.

    One causal model reads ``<bos> english <sep> french <eos> <pad>…`` and is scored only on the
    French part and the final ``<eos>`` (``targets[t] = S[t+1]`` there, :data:`IGNORE` elsewhere),
    so the English sentence acts as a prompt. The sentences come from
    :func:`engine.corpora.translation_corpus` (no dates); one vocabulary holds both languages.

    Attributes:
        n_pairs: sentence pairs generated (training draws from them with replacement).
        seed: the corpus seed.
    """

    n_pairs: int = 5_000
    seed: int = 0
    _data: dict = field(init=False, repr=False, compare=False)

    name: ClassVar[str] = "translation"
    description: ClassVar[str] = "Translate toy English into French: 'the red car .' <sep> 'la voiture rouge .'"
    suggested_steps: ClassVar[int] = 1500

    def __post_init__(self) -> None:
        src_words, tgt_words = translation_vocab()
        vocab = Vocab.from_words([*src_words, *tgt_words])
        pairs = translation_corpus(self.n_pairs, self.seed, date_fraction=0.0)
        rows = [[BOS_ID, *vocab.encode(en), SEP_ID, *vocab.encode(fr), EOS_ID] for en, fr in pairs]
        seq_len = max(len(r) for r in rows)
        inputs = torch.full((len(rows), seq_len), PAD_ID, dtype=torch.long)  # (N, T)
        targets = torch.full((len(rows), seq_len), IGNORE, dtype=torch.long)  # (N, T)
        for i, row in enumerate(rows):
            inputs[i, : len(row)] = torch.tensor(row)
            sep = row.index(SEP_ID)
            targets[i, sep : len(row) - 1] = torch.tensor(row[sep + 1 :])  # predict the French and <eos>
        probe = [BOS_ID, *vocab.encode("the small black dog sees the red car .".split()), SEP_ID]
        probe += vocab.encode("le petit chien noir voit la voiture rouge .".split())
        object.__setattr__(
            self,
            "_data",
            {"vocab": vocab, "inputs": inputs, "targets": targets, "seq_len": max(seq_len, len(probe)), "probe": probe},
        )

    @property
    def vocab(self) -> Vocab:
        return self._data["vocab"]

    @property
    def seq_len(self) -> int:
        return self._data["seq_len"]

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        rows = torch.randint(len(self._data["inputs"]), (batch_size,), generator=generator)  # (B,)
        inputs, targets = self._data["inputs"][rows], self._data["targets"][rows]  # (B, T')
        pad = self.seq_len - inputs.shape[1]
        if pad:
            inputs = torch.nn.functional.pad(inputs, (0, pad), value=PAD_ID)
            targets = torch.nn.functional.pad(targets, (0, pad), value=IGNORE)
        return Batch(inputs, targets)

    def probe(self) -> list[int]:
        return list(self._data["probe"])


__all__ = ["IGNORE", "PROBE_STORY", "StoriesTask", "TranslationTask"]
