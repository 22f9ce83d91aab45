"""Next-sentence prediction (BERT's second pretraining objective) and a classifier on [CLS] that learns it.

Pairs (:func:`nsp_pairs`), as in Devlin et al. (2019), where a "sentence" is a span of text: A is a story
so far (its sentences from the first up to one that has a next one); with probability ½ B is the sentence
that really comes next (label "is next"), otherwise a sentence drawn from a *different* story (label "not
next"). With a single sentence as A the task is mostly guesswork on these stories ("it was red ." could be
followed by almost anything); the story so far names the characters, their genders and the object, which a
wrong B usually contradicts. Random B's are never a story's first sentence: an opening ("one day , lily
found …") never follows another sentence, so it would give the answer away without reading A. Everything
is drawn from one seeded ``random.Random``.

Encoding (:func:`encode_pair`): ``[CLS] A [SEP] B [SEP]``, where our vocabulary's ``<bos>`` plays [CLS] and
``<sep>`` is [SEP]. BERT also adds a segment embedding (A or B) to every token; our encoder has none
(token + position embeddings only), so the [SEP] between them is the only marker of where B starts. The
segment ids are still returned, for the page to colour A and B.

:func:`finetune_nsp` fine-tunes a private copy of the masked-LM encoder with a linear head on the final
[CLS] vector (:class:`~engine.training.finetune.Classifier`, two classes), the same loop as the colour task
(:func:`~engine.training.finetune.train_classifier`), and measures what changed: held-out accuracy before
(the untrained head: about ½) and after, the loss curve, how far each head's attention moved on held-out
pairs (every query row, and [CLS]'s row alone), where [CLS] looks (A, B or the specials), and a few held-out
pairs' [CLS] attention rows before and after.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from engine.corpora import story_corpus, train_test_split
from engine.corpora.stories import split_sentences
from engine.records import EngineError
from engine.training.finetune import (
    FinetuneProgress,
    TrainingCurve,
    attention_patterns,
    check_settings,
    pattern_change,
    train_classifier,
    trainable_copy,
)
from engine.vocab import BOS_ID, PAD_ID, SEP_ID, Vocab

#: the classifier's classes, in label order
CLASSES = ("not next", "is next")
NOT_NEXT, IS_NEXT = 0, 1
N_TRAIN, N_TEST = 4000, 256  # pairs to train on and held-out pairs (from held-out stories)
PROBES = 128  # held-out pairs the attention change is measured on
SHOWN = 8  # held-out pairs the page can inspect one by one (half of each label)


def story_sentences(story: Sequence[str]) -> list[tuple[str, ...]]:
    """A tokenised story's sentences, each a tuple of its tokens (the full stop included)."""
    return [tuple(s.split()) for s in split_sentences(" ".join(story))]


@dataclass(frozen=True)
class NspPair:
    """One NSP example: A (a story's sentences 0 … ``sentence``), sentence B and whether B really follows A.

    ``story`` / ``sentence`` say where A ends (index into the stories given, index of A's last sentence in that
    story); ``b_story`` / ``b_sentence`` where B is. A real pair has ``b_story == story`` and
    ``b_sentence == sentence + 1``; a random one ``b_story != story``.
    """

    a: tuple[str, ...]
    b: tuple[str, ...]
    is_next: bool
    story: int
    sentence: int
    b_story: int
    b_sentence: int

    @property
    def label(self) -> int:
        return IS_NEXT if self.is_next else NOT_NEXT


def nsp_pairs(stories: Sequence[Sequence[str]], n: int, seed: int, *, max_tokens: int | None = None) -> list[NspPair]:
    """``n`` NSP pairs from tokenised ``stories`` (seeded: the same arguments give the same pairs).

    Args:
        stories: token lists, e.g. from :func:`engine.corpora.story_corpus`; at least two of them must have two
            or more sentences.
        n: pairs to make.
        seed: the random seed.
        max_tokens: when given, only pairs whose encoding ``[CLS] A [SEP] B [SEP]`` fits in this many tokens.

    Returns:
        The pairs; B is the real next sentence with probability ½ (a fair coin per pair).

    Raises:
        EngineError: too few stories with two sentences, or no pair fits ``max_tokens``.
    """
    split = [story_sentences(s) for s in stories]
    sources = [i for i, s in enumerate(split) if len(s) >= 2]  # A needs a next sentence
    if len(sources) < 2:
        raise EngineError("NSP needs at least two stories with two or more sentences.")
    rng = random.Random(seed)
    out: list[NspPair] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 20 * n + 100:
            raise EngineError(f"No NSP pair fits in {max_tokens} tokens.")
        story = rng.choice(sources)
        sentence = rng.randrange(len(split[story]) - 1)
        if rng.random() < 0.5:
            b_story, b_sentence = story, sentence + 1
        else:
            b_story = rng.choice(sources)
            while b_story == story:
                b_story = rng.choice(sources)
            b_sentence = rng.randrange(1, len(split[b_story]))  # never an opening sentence
        a, b = sum(split[story][: sentence + 1], ()), split[b_story][b_sentence]
        if max_tokens is not None and len(a) + len(b) + 3 > max_tokens:
            continue
        out.append(NspPair(a, b, b_story == story, story, sentence, b_story, b_sentence))
    return out


def encode_pair(vocab: Vocab, a: Sequence[str], b: Sequence[str]) -> tuple[list[int], list[int]]:
    """``([CLS] A [SEP] B [SEP]`` ids, segment ids): segment 0 for [CLS], A and the first [SEP], 1 for B and
    the last [SEP] (BERT's token types; our encoder does not read them)."""
    ids = [BOS_ID, *vocab.encode(a), SEP_ID, *vocab.encode(b), SEP_ID]
    return ids, [0] * (len(a) + 2) + [1] * (len(b) + 1)


@dataclass(frozen=True)
class NspTask:
    """Encoded NSP pairs, padded with ``<pad>``: training pairs from some stories, held-out pairs from others."""

    ids: torch.Tensor  # [N, T]
    lengths: torch.Tensor  # [N]
    segments: tuple[tuple[int, ...], ...]  # per pair, its real length
    labels: torch.Tensor  # [N] 1 = is next
    pairs: tuple[NspPair, ...]
    n_train: int

    @classmethod
    def build(
        cls,
        vocab: Vocab,
        max_len: int,
        *,
        n_train: int = N_TRAIN,
        n_test: int = N_TEST,
        n_stories: int = 3000,
        seed: int = 2,
    ) -> NspTask:
        """Stories ``story_corpus(n_stories, seed)``, 10% held out (no story on both sides); the training pairs
        come from the rest, the held-out pairs (A and the random B's alike) from the held-out stories."""

        train_stories, test_stories = train_test_split(story_corpus(n_stories, seed), 0.1, seed, key=tuple)
        pairs = nsp_pairs(train_stories, n_train, seed, max_tokens=max_len)
        pairs += nsp_pairs(test_stories, n_test, seed + 1, max_tokens=max_len)
        encoded = [encode_pair(vocab, p.a, p.b) for p in pairs]
        t = max(len(ids) for ids, _ in encoded)
        ids = torch.full((len(pairs), t), PAD_ID, dtype=torch.long)
        for i, (row, _) in enumerate(encoded):
            ids[i, : len(row)] = torch.tensor(row)
        return cls(
            ids=ids,
            lengths=torch.tensor([len(r) for r, _ in encoded]),
            segments=tuple(tuple(s) for _, s in encoded),
            labels=torch.tensor([p.label for p in pairs]),
            pairs=tuple(pairs),
            n_train=n_train,
        )


@dataclass(frozen=True, eq=False)
class NspProbe:
    """One held-out pair as the page inspects it: [CLS]'s attention row in every layer and head, before and
    after, and the classifier's probability of "is next"."""

    index: int  # which pair of the task (its held-out pairs follow its training pairs)
    tokens: tuple[str, ...]  # [CLS] A [SEP] B [SEP], as the page shows them
    segments: tuple[int, ...]
    is_next: bool
    p_before: float
    p_after: float
    cls_before: np.ndarray  # [layer, head, key]
    cls_after: np.ndarray


@dataclass(frozen=True, eq=False)
class NspResult:
    """What NSP fine-tuning changed. ``[layer, head]`` arrays are float64; shares ``[layer, head, 3]`` are the
    weight [CLS] puts on sentence A, on sentence B and on the specials ([CLS] itself, both [SEP]), averaged over
    held-out pairs."""

    accuracy_before: float
    accuracy_after: float
    chance: float
    curve: TrainingCurve
    change: np.ndarray  # mean total-variation distance of each head's whole pattern, before → after
    cls_change: np.ndarray  # … of [CLS]'s row alone
    shares_before: np.ndarray  # [layer, head, 3]: A, B, specials
    shares_after: np.ndarray
    probes: tuple[NspProbe, ...]
    n_train: int
    n_test: int


SHARES = ("sentence A", "sentence B", "[CLS] and [SEP]")


def _shares(row: np.ndarray, segments: Sequence[int]) -> np.ndarray:
    """``[layer, head, 3]``: how much of [CLS]'s row ``[layer, head, key]`` is on A, on B, on the specials."""
    seg = np.asarray(segments)
    special = np.zeros(len(seg), bool)
    special[0] = True
    special[np.flatnonzero(seg == 0)[-1]] = True  # the [SEP] after A
    special[-1] = True  # the last [SEP]
    a, b = (seg == 0) & ~special, (seg == 1) & ~special
    return np.stack([row[..., a].sum(-1), row[..., b].sum(-1), row[..., special].sum(-1)], axis=-1)


def _shown(task: NspTask) -> list[int]:
    """Indices of the held-out pairs the page can inspect: the first :data:`SHOWN` ÷ 2 of each label."""
    test = range(task.n_train, min(len(task.pairs), task.n_train + PROBES))
    real = [i for i in test if task.pairs[i].is_next][: SHOWN // 2]
    fake = [i for i in test if not task.pairs[i].is_next][: SHOWN // 2]
    return sorted(real + fake)


def _p_next(model: nn.Module, ids: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        return torch.softmax(model(ids), -1)[:, IS_NEXT].double().numpy()


def finetune_nsp(
    encoder: nn.Module,
    vocab: Vocab,
    *,
    steps: int = 300,
    lr: float = 1e-3,
    seed: int = 0,
    batch_size: int = 32,
    every: int = 25,
    task: NspTask | None = None,
) -> Iterator[FinetuneProgress | NspResult]:
    """Fine-tune a copy of ``encoder`` (our Transformer, read only) with a linear head on [CLS] for NSP.

    Yields :class:`~engine.training.finetune.FinetuneProgress` every ``every`` steps, then one
    :class:`NspResult`. ``task`` defaults to ``NspTask.build(vocab, encoder.cfg.max_len)``.

    Raises:
        EngineError: ``steps`` outside 1–:data:`~engine.training.finetune.MAX_STEPS` or ``lr`` outside (0, 0.1].
    """
    check_settings(steps, lr)
    task = task if task is not None else NspTask.build(vocab, encoder.cfg.max_len)
    model = trainable_copy(encoder, len(CLASSES), seed)
    train = task.ids[: task.n_train], task.labels[: task.n_train]
    test = task.ids[task.n_train :], task.labels[task.n_train :]
    probe = slice(task.n_train, task.n_train + PROBES)
    probe_segments = task.segments[probe]
    before = attention_patterns(model.encoder, task.ids[probe], task.lengths[probe])
    shown = _shown(task)
    p_before = _p_next(model, task.ids[shown])
    curve = yield from train_classifier(
        model, train, test, steps=steps, lr=lr, seed=seed, batch_size=batch_size, every=every
    )
    after = attention_patterns(model.encoder, task.ids[probe], task.lengths[probe])
    p_after = _p_next(model, task.ids[shown])
    probes = []
    for n, i in enumerate(shown):
        k = i - task.n_train  # its place among the probes
        words = vocab.decode(task.ids[i, : int(task.lengths[i])].tolist())
        tokens = tuple({"<bos>": "[CLS]", "<sep>": "[SEP]"}.get(w, w) for w in words)
        probes.append(
            NspProbe(
                index=i,
                tokens=tokens,
                segments=task.segments[i],
                is_next=task.pairs[i].is_next,
                p_before=float(p_before[n]),
                p_after=float(p_after[n]),
                cls_before=before[k][:, :, 0],
                cls_after=after[k][:, :, 0],
            )
        )
    yield NspResult(
        accuracy_before=float(curve.eval_accuracy[0]),
        accuracy_after=float(curve.eval_accuracy[-1]),
        chance=1 / len(CLASSES),
        curve=curve,
        change=pattern_change(before, after),
        cls_change=pattern_change([p[:, :, :1] for p in before], [p[:, :, :1] for p in after]),
        shares_before=np.mean([_shares(p[:, :, 0], s) for p, s in zip(before, probe_segments)], axis=0),
        shares_after=np.mean([_shares(p[:, :, 0], s) for p, s in zip(after, probe_segments)], axis=0),
        probes=tuple(probes),
        n_train=task.n_train,
        n_test=len(task.pairs) - task.n_train,
    )


__all__ = [
    "CLASSES",
    "IS_NEXT",
    "NOT_NEXT",
    "NspPair",
    "NspProbe",
    "NspResult",
    "NspTask",
    "SHARES",
    "encode_pair",
    "finetune_nsp",
    "nsp_pairs",
    "story_sentences",
]
