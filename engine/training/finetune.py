"""Fine-tuning changes attention: our masked-LM encoder fine-tuned on a small classification task.

The task (:class:`ColourTask`): sentences of the generated stories that name exactly one colour
("lily found a red ball ."); the label is that colour. A linear head reads the encoder's final
state at position 0 (``<bos>``, BERT's [CLS]) — so to answer, the ``<bos>`` position must gather
the colour word from wherever it is, and fine-tuning has to teach some heads to look there.

:func:`finetune` copies the encoder (the shared model is never touched), trains the copy and the
head for a few hundred steps, yields progress as it goes and ends with a :class:`FinetuneResult`:
accuracy before (the untrained head: chance) and after, and per head how far its attention moved
on held-out sentences (mean total-variation distance between the patterns before and after, over
every query row) and how much weight ``<bos>`` puts on the colour word before and after.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from engine.corpora.stories.lexicon import COLOURS  # the stories' colour words
from engine.types import EngineError
from engine.vocab import BOS_ID, PAD_ID, Vocab

MAX_STEPS = 500
PROBES = 32  # held-out sentences the attention change is measured on


@dataclass(frozen=True)
class ColourTask:
    """Story sentences with exactly one colour word; ``label`` = which colour (its index in ``colours``)."""

    ids: torch.Tensor  # [N, T] padded with <pad>
    lengths: torch.Tensor  # [N]
    labels: torch.Tensor  # [N]
    colour_pos: torch.Tensor  # [N] position of the colour word
    colours: tuple[str, ...]
    n_train: int

    @classmethod
    def build(cls, vocab: Vocab, max_len: int, n_stories: int = 3000, seed: int = 1) -> ColourTask:
        from engine.corpora import story_corpus

        colours = tuple(c for c in COLOURS if c in vocab)
        rows, labels, where = [], [], []
        for story in story_corpus(n_stories, seed):
            sentence: list[str] = []
            for word in story:
                sentence.append(word)
                if word not in {".", "!", "?"}:
                    continue
                found = [i for i, w in enumerate(sentence) if w in colours]
                if len(found) == 1 and len(sentence) + 1 <= max_len:
                    rows.append([BOS_ID, *vocab.encode(sentence)])
                    labels.append(colours.index(sentence[found[0]]))
                    where.append(found[0] + 1)
                sentence = []
        if len(rows) < 2 * PROBES or len(colours) < 2:
            raise EngineError("Too few sentences with one colour word to fine-tune on.")
        order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(seed)).tolist()
        t = max(len(r) for r in rows)
        ids = torch.full((len(rows), t), PAD_ID, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
        pick = torch.tensor(order)
        return cls(ids=ids[pick], lengths=torch.tensor([len(rows[i]) for i in order]),
                   labels=torch.tensor(labels)[pick], colour_pos=torch.tensor(where)[pick], colours=colours,
                   n_train=len(rows) - PROBES)  # fmt: skip


class Classifier(nn.Module):
    """The encoder plus a linear head on the final state of position 0 (``<bos>``)."""

    def __init__(self, encoder: nn.Module, n_classes: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.cfg.d_model, n_classes)
        self._final: list[torch.Tensor] = []
        encoder.ln_final.register_forward_hook(lambda _m, _i, out: self._final.append(out))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        self._final.clear()
        self.encoder(ids, causal=False, key_padding=ids == PAD_ID, attn_impl="sdpa")
        return self.head(self._final[-1][:, 0])  # (B, classes)


@dataclass(frozen=True)
class FinetuneProgress:
    step: int
    steps: int
    loss: float
    accuracy: float  # on the held-out sentences

    @property
    def fraction(self) -> float:
        """How far the run is (what a progress bar shows)."""
        return self.step / self.steps if self.steps else 0.0

    @property
    def text(self) -> str:
        """One line for a progress bar."""
        return f"Step {self.step} of {self.steps}: loss {self.loss:.3f}, held-out accuracy {self.accuracy:.0%}"


@dataclass(frozen=True, eq=False)
class FinetuneResult:
    """What fine-tuning changed. Arrays are ``[layer, head]`` float64."""

    accuracy_before: float
    accuracy_after: float
    chance: float
    change: np.ndarray  # mean total-variation distance of each head's pattern, before → after
    colour_before: np.ndarray  # mean weight <bos> puts on the colour word, before
    colour_after: np.ndarray  # … and after
    probe_text: str  # one held-out sentence, for the before/after maps
    before_patterns: np.ndarray  # [layer, head, q, k] on probe_text, before
    after_patterns: np.ndarray  # … after
    tokens: tuple[str, ...]


def _patterns(encoder: nn.Module, ids: torch.Tensor, lengths: torch.Tensor) -> list[np.ndarray]:
    """Each sentence's attention ``[layer, head, n, n]`` (its real length, no padding), via the model's hooks."""
    from engine.capture import capture

    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(encoder.cfg.n_layers)]
    out = []
    with torch.no_grad():
        for row, n in zip(ids, lengths.tolist()):
            with capture(encoder, names=names) as acts:
                encoder(row[None, :n], causal=False, attn_impl="explicit")
            out.append(np.stack([acts[name][0].float().numpy() for name in names]).astype(np.float64))
    return out


def _accuracy(model: Classifier, ids: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(ids).argmax(-1) == labels).float().mean())


def finetune(encoder: nn.Module, vocab: Vocab, *, steps: int = 300, lr: float = 1e-3, seed: int = 0,
             batch_size: int = 32, every: int = 25) -> Iterator[FinetuneProgress | FinetuneResult]:  # fmt: skip
    """Fine-tune a copy of ``encoder`` (our Transformer, read only) on :class:`ColourTask`.

    Yields :class:`FinetuneProgress` every ``every`` steps, then one :class:`FinetuneResult`.

    Raises:
        EngineError: ``steps`` outside 1–:data:`MAX_STEPS` or ``lr`` outside (0, 0.1].
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise EngineError(f"steps must be a whole number from 1 to {MAX_STEPS}, got {steps!r}.")
    if not isinstance(lr, (int, float)) or not 0 < lr <= 0.1:
        raise EngineError(f"The learning rate must be above 0 and at most 0.1, got {lr!r}.")
    task = ColourTask.build(vocab, encoder.cfg.max_len)
    torch.manual_seed(seed)
    copy_ = copy.deepcopy(encoder).cpu().train()
    for p in copy_.parameters():
        p.requires_grad_(True)
    model = Classifier(copy_, len(task.colours))
    train_ids, train_y = task.ids[: task.n_train], task.labels[: task.n_train]
    test = slice(task.n_train, None)
    test_ids, test_y = task.ids[test], task.labels[test]
    copy_.eval()
    before = _patterns(copy_, test_ids, task.lengths[test])
    accuracy_before = _accuracy(model, test_ids, test_y)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    for step in range(1, steps + 1):
        model.train()
        rows = torch.randint(task.n_train, (batch_size,), generator=gen)
        loss = nn.functional.cross_entropy(model(train_ids[rows]), train_y[rows])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % every == 0 or step == steps:
            model.eval()
            yield FinetuneProgress(step, steps, float(loss.detach()), _accuracy(model, test_ids, test_y))
    model.eval()
    after = _patterns(copy_, test_ids, task.lengths[test])
    change = np.mean([0.5 * np.abs(a - b).sum(-1).mean(-1) for a, b in zip(after, before)], axis=0)
    where = task.colour_pos[test].tolist()
    colour_before = np.mean([p[:, :, 0, w] for p, w in zip(before, where)], axis=0)
    colour_after = np.mean([p[:, :, 0, w] for p, w in zip(after, where)], axis=0)
    n0 = int(task.lengths[test][0])
    words = vocab.decode(test_ids[0, :n0].tolist())
    yield FinetuneResult(accuracy_before=accuracy_before, accuracy_after=_accuracy(model, test_ids, test_y),
                         chance=1 / len(task.colours), change=change, colour_before=colour_before,
                         colour_after=colour_after, probe_text=" ".join(words[1:]), before_patterns=before[0],
                         after_patterns=after[0], tokens=tuple(words))  # fmt: skip


__all__ = ["ColourTask", "FinetuneProgress", "FinetuneResult", "MAX_STEPS", "finetune"]
