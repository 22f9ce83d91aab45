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
from collections.abc import Generator, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from engine.builds import BUILD_LOCK
from engine.capture import capture
from engine.corpora import story_corpus
from engine.corpora.stories.lexicon import COLOURS  # the stories' colour words
from engine.records import EngineError
from engine.training.job_settings import number_in, whole_in
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
        return cls(
            ids=ids[pick],
            lengths=torch.tensor([len(rows[i]) for i in order]),
            labels=torch.tensor(labels)[pick],
            colour_pos=torch.tensor(where)[pick],
            colours=colours,
            n_train=len(rows) - PROBES,
        )


class Classifier(nn.Module):
    """The encoder plus a linear head on the final state of position 0 (``<bos>``, BERT's [CLS]):
    ``logits = LN_f(x_L)[0] W_headᵀ + b_head``. (HF's ``BertForSequenceClassification`` puts BERT's pooler, a
    dense layer and tanh, between the two; here the head reads the final [CLS] vector directly.)"""

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


def attention_patterns(encoder: nn.Module, ids: torch.Tensor, lengths: torch.Tensor) -> list[np.ndarray]:
    """Each sentence's attention ``[layer, head, n, n]`` (its real length, no padding), via the model's hooks."""

    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(encoder.cfg.n_layers)]
    out = []
    with torch.no_grad():
        for row, n in zip(ids, lengths.tolist()):
            with capture(encoder, names=names) as acts:
                encoder(row[None, :n], causal=False, attn_impl="explicit")
            out.append(np.stack([acts[name][0].float().numpy() for name in names]).astype(np.float64))
    return out


def pattern_change(before: list[np.ndarray], after: list[np.ndarray]) -> np.ndarray:
    """How far each head's attention moved: the total-variation distance ``½ Σ_k |after − before|`` of every
    query row, averaged over the rows of each input and then over the inputs; ``[layer, head]`` in [0, 1]."""
    return np.mean([0.5 * np.abs(a - b).sum(-1).mean(-1) for a, b in zip(after, before)], axis=0)


@dataclass(frozen=True, eq=False)
class TrainingCurve:
    """The losses of one fine-tuning run: every step's training batch, and the held-out set at ``eval_steps``
    (step 0 is before training)."""

    train_loss: np.ndarray  # [steps] cross-entropy of each step's batch (nats)
    eval_steps: np.ndarray  # [m]
    eval_loss: np.ndarray  # [m] mean cross-entropy on the held-out set
    eval_accuracy: np.ndarray  # [m]


def _held_out(model: Classifier, ids: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of ``model`` on ``ids`` / ``labels``, in eval mode, no gradients."""
    model.eval()
    with torch.no_grad():
        logits = model(ids)
    return float(nn.functional.cross_entropy(logits, labels)), float((logits.argmax(-1) == labels).float().mean())


def train_classifier(
    model: Classifier,
    train: tuple[torch.Tensor, torch.Tensor],
    test: tuple[torch.Tensor, torch.Tensor],
    *,
    steps: int,
    lr: float,
    seed: int = 0,
    batch_size: int = 32,
    every: int = 25,
) -> Generator[FinetuneProgress, None, TrainingCurve]:
    """AdamW on cross-entropy over random batches of ``train`` (ids, labels), every parameter of ``model``.

    Yields :class:`FinetuneProgress` (held-out accuracy on ``test``) every ``every`` steps and at the last;
    returns the :class:`TrainingCurve` (``curve = yield from train_classifier(...)``). The model is left in
    eval mode.
    """
    train_ids, train_y = train
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses: list[float] = []
    loss0, acc0 = _held_out(model, *test)
    evals = [(0, loss0, acc0)]
    for step in range(1, steps + 1):
        model.train()
        rows = torch.randint(len(train_ids), (batch_size,), generator=gen)
        loss = nn.functional.cross_entropy(model(train_ids[rows]), train_y[rows])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
        if step % every == 0 or step == steps:
            evals.append((step, *_held_out(model, *test)))
            yield FinetuneProgress(step, steps, losses[-1], evals[-1][2])
    model.eval()
    at, held_loss, held_acc = (np.array(v, dtype=np.float64) for v in zip(*evals))
    return TrainingCurve(
        train_loss=np.array(losses), eval_steps=at.astype(int), eval_loss=held_loss, eval_accuracy=held_acc
    )


def check_settings(steps: int, lr: float) -> None:
    """Refuse a fine-tuning run's settings outside what the page offers.

    Raises:
        EngineError: ``steps`` outside 1–:data:`MAX_STEPS` or ``lr`` outside (0, 0.1].
    """
    if not whole_in(steps, 1, MAX_STEPS):
        raise EngineError(f"steps must be a whole number from 1 to {MAX_STEPS}, got {steps!r}.")
    if not number_in(lr, 0, 0.1) or lr == 0:
        raise EngineError(f"The learning rate must be above 0 and at most 0.1, got {lr!r}.")


def trainable_copy(encoder: nn.Module, n_classes: int, seed: int = 0) -> Classifier:
    """A :class:`Classifier` over a private, trainable CPU copy of ``encoder`` (which is never touched); the head
    is initialised from ``torch.manual_seed(seed)``. Returned in eval mode."""
    with BUILD_LOCK:  # the seed's numbers and the head's initialisation are this build's (engine.builds)
        torch.manual_seed(seed)
        copy_ = copy.deepcopy(encoder).cpu()
        for p in copy_.parameters():
            p.requires_grad_(True)
        return Classifier(copy_, n_classes).eval()


def finetune(
    encoder: nn.Module,
    vocab: Vocab,
    *,
    steps: int = 300,
    lr: float = 1e-3,
    seed: int = 0,
    batch_size: int = 32,
    every: int = 25,
) -> Iterator[FinetuneProgress | FinetuneResult]:
    """Fine-tune a copy of ``encoder`` (our Transformer, read only) on :class:`ColourTask`.

    Yields :class:`FinetuneProgress` every ``every`` steps, then one :class:`FinetuneResult`.

    Raises:
        EngineError: ``steps`` outside 1–:data:`MAX_STEPS` or ``lr`` outside (0, 0.1].
    """
    check_settings(steps, lr)
    task = ColourTask.build(vocab, encoder.cfg.max_len)
    model = trainable_copy(encoder, len(task.colours), seed)
    train_ids, train_y = task.ids[: task.n_train], task.labels[: task.n_train]
    test = slice(task.n_train, None)
    test_ids, test_y = task.ids[test], task.labels[test]
    before = attention_patterns(model.encoder, test_ids, task.lengths[test])
    curve = yield from train_classifier(
        model,
        (train_ids, train_y),
        (test_ids, test_y),
        steps=steps,
        lr=lr,
        seed=seed,
        batch_size=batch_size,
        every=every,
    )
    after = attention_patterns(model.encoder, test_ids, task.lengths[test])
    where = task.colour_pos[test].tolist()
    colour_before = np.mean([p[:, :, 0, w] for p, w in zip(before, where)], axis=0)
    colour_after = np.mean([p[:, :, 0, w] for p, w in zip(after, where)], axis=0)
    n0 = int(task.lengths[test][0])
    words = vocab.decode(test_ids[0, :n0].tolist())
    yield FinetuneResult(
        accuracy_before=float(curve.eval_accuracy[0]),
        accuracy_after=float(curve.eval_accuracy[-1]),
        chance=1 / len(task.colours),
        change=pattern_change(before, after),
        colour_before=colour_before,
        colour_after=colour_after,
        probe_text=" ".join(words[1:]),
        before_patterns=before[0],
        after_patterns=after[0],
        tokens=tuple(words),
    )


__all__ = [
    "Classifier",
    "ColourTask",
    "FinetuneProgress",
    "FinetuneResult",
    "MAX_STEPS",
    "TrainingCurve",
    "attention_patterns",
    "check_settings",
    "finetune",
    "pattern_change",
    "train_classifier",
    "trainable_copy",
]
