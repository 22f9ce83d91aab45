"""BERT's masked-language-model objective on the generated stories.

A window of the story stream is read whole (no causal mask). Of its word tokens (never ``<bos>``,
``<eos>`` or padding), a share ``rate`` (15%) is chosen; each chosen token is replaced by
``<mask>`` with probability 0.8, by a random word with probability 0.1, and kept with probability
0.1 (Devlin et al., 2019). The model must predict the original token at every chosen position
(the target is :data:`IGNORE` everywhere else), so it cannot learn to look only at ``<mask>``.

:func:`mask_tokens` is the recipe itself (pure, seeded by the caller's generator);
:class:`MaskedStoriesTask` feeds it to the training loop.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

import torch

from engine.corpora import story_vocab
from engine.training.corpus_tasks import StoriesTask
from engine.training.task_base import IGNORE, Batch, token_accuracy
from engine.vocab import BOS_ID, MASK, SPECIALS, Vocab, tokenize

MASK_RATE = 0.15
#: of the chosen positions: replaced by <mask>, by a random word, kept as they are
SPLIT = (0.8, 0.1, 0.1)
PROBE_TEXT = "lily found a red ball . she gave it to tom ."


def stories_mlm_vocab() -> Vocab:
    """The stories' words, then ``<mask>`` (the last id)."""
    return Vocab.from_words([*story_vocab(), MASK])


def mask_tokens(
    ids: torch.Tensor, generator: torch.Generator, *, mask_id: int, word_ids: torch.Tensor, rate: float = MASK_RATE
) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply BERT's masking recipe to a batch of token ids.

    Args:
        ids: ``[B, T]`` token ids.
        generator: the random source (a CPU ``torch.Generator``): the same state gives the same masks.
        mask_id: the id of ``<mask>``.
        word_ids: ids that count as words: only these are chosen, and random replacements are drawn
            from them.
        rate: share of word positions chosen.

    Returns:
        ``(inputs, targets)``: inputs with the chosen positions replaced (80% ``<mask>``, 10% a random
        word, 10% unchanged); targets holding the original id at chosen positions, :data:`IGNORE`
        elsewhere.
    """
    is_word = torch.isin(ids, word_ids)  # [B, T]
    chosen = (torch.rand(ids.shape, generator=generator) < rate) & is_word
    roll = torch.rand(ids.shape, generator=generator)
    to_mask = chosen & (roll < SPLIT[0])
    to_random = chosen & (roll >= SPLIT[0]) & (roll < SPLIT[0] + SPLIT[1])
    random_words = word_ids[torch.randint(len(word_ids), ids.shape, generator=generator)]
    inputs = torch.where(to_mask, torch.full_like(ids, mask_id), ids)
    inputs = torch.where(to_random, random_words, inputs)
    targets = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    return inputs, targets


@dataclass(frozen=True)
class MaskedStoriesTask(StoriesTask):
    """Masked-token prediction on the generated stories (bidirectional: ``causal = False``); the same
    corpus, split and windows as :class:`~engine.training.corpus_tasks.StoriesTask`, masked by :func:`mask_tokens`."""

    name: ClassVar[str] = "masked stories"
    description: ClassVar[str] = "Fill in masked words of short generated children's stories (BERT's objective)."
    metric_name: ClassVar[str] = "masked-token accuracy"
    causal: ClassVar[bool] = False

    def _vocab(self) -> Vocab:
        return stories_mlm_vocab()

    @property
    def mask_id(self) -> int:
        return len(self.vocab) - 1

    def _batch(self, data: torch.Tensor, batch_size: int, generator: torch.Generator) -> Batch:
        starts = torch.randint(len(data) - self.seq_len_, (batch_size,), generator=generator)  # (B,)
        window = data[starts[:, None] + torch.arange(self.seq_len_)[None, :]]  # (B, T)
        words = torch.arange(len(SPECIALS), self.mask_id)  # every id but the specials and <mask>
        inputs, targets = mask_tokens(window, generator, mask_id=self.mask_id, word_ids=words)
        return Batch(inputs=inputs, targets=targets)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Random training windows, masked."""
        return self._batch(self._data["train"], batch_size, generator)

    def held_out(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Random windows of the held-out stories, masked."""
        return self._batch(self._data["test"], batch_size, generator)

    def metric(self, logits: torch.Tensor, batch: Batch) -> float:
        return token_accuracy(logits, batch)  # over the chosen positions only (the rest are IGNORE)

    def probe(self) -> list[int]:
        ids = [BOS_ID, *self.vocab.encode(tokenize(PROBE_TEXT))]
        ids[3] = self.mask_id  # "lily found <mask> red ball": the probe shows where a masked word looks
        return ids

    def unigram_accuracy(self) -> float:
        """Accuracy of the best guess that ignores context: always the most frequent training word."""
        counts = Counter(int(i) for i in self._data["train"].tolist() if i >= len(SPECIALS))
        test = [int(i) for i in self._data["test"].tolist() if i >= len(SPECIALS)]
        best = counts.most_common(1)[0][0]
        return sum(1 for i in test if i == best) / len(test)


__all__ = ["MASK", "MASK_RATE", "MaskedStoriesTask", "SPLIT", "mask_tokens", "stories_mlm_vocab"]
