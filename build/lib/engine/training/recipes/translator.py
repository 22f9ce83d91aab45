"""Recipe ``tiny-translator``: our encoder-decoder transformer on toy English → French and dates → ISO.

::

    pairs        = translation_corpus(N_PAIRS, seed)                           # 20 % dates
    train, test  = train_test_split(pairs, TEST_FRACTION, seed, key=source)    # no source on both sides
    one step:    B training pairs; logits = model(src + <eos>, <bos> + tgt)     (sdpa attention)
                 loss = cross_entropy(logits, tgt + <eos>), padding ignored
    judged on:   greedy decoding of every held-out pair; exact match = the output equals the reference

Training goes through the project's loop (:func:`engine.training.loop.train`: warm-up + cosine lr,
AdamW, clipping, pause / stop, snapshots). That loop feeds ``forward_fn(model, inputs)`` one
``(B, T)`` tensor scored against one ``(B, T)`` target tensor, so :class:`TranslationTask` packs each
example into one row, ``[source | decoder input]``, with the targets ``[ignored | target]``;
:func:`packed_forward` splits the row again, trims the padding and returns zero logits on the source
columns (the loss ignores them). The snapshots' metric is teacher-forced exact match on a fixed batch
of training pairs; with every step's argmax right, greedy decoding gives the reference, so it tracks
the held-out greedy figure that goes into the card.

The evaluation helpers (:func:`split_pairs`, :func:`held_out_sample`, :func:`evaluate`) are public so
tests can re-measure the shipped checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from engine.checkpoint import save_checkpoint
from engine.corpora import target_text, translation_corpus
from engine.corpora.translation import tokenize, translate
from engine.families.seq2seq.adapter import source_tokens, trace_seq2seq
from engine.families.seq2seq.network import Seq2SeqConfig, Seq2SeqTransformer
from engine.records import Tokens
from engine.traces.attention import AttentionTrace
from engine.training.loop import TrainConfig
from engine.training.recipes.common import chunks, run_fields, train_logged
from engine.training.recipes.translation_data import (
    DATE_FRACTION,
    N_PAIRS,
    SAMPLES,
    Pair,
    exact_match_shares,
    is_date,
    vocabularies,
)
from engine.training.recipes.translation_data import split_pairs as shared_split
from engine.training.tasks import IGNORE, Batch, Task
from engine.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

NAME = "tiny-translator"
MAX_SRC = 24  # source tokens the model accepts (the corpus has at most 11 + <eos>)
MAX_TGT = 24  # decoder positions (<bos> + at most 11 target tokens in the corpus)
PROBE = "the red car is fast ."  # traced at every snapshot: "rouge" comes after "voiture"
#: the card's metric names (tests read them back)
EXACT_SENTENCES = "held-out exact match (sentences)"
EXACT_DATES = "held-out exact match (dates)"
EXACT_ALL = "held-out exact match (all)"
TOKEN_ACCURACY = "held-out token accuracy (teacher-forced)"


# ---- data ---------------------------------------------------------------------------------------------


def split_pairs(seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """The shared ``(train, held-out)`` split, with each held-out source kept once."""
    train_pairs, test_pairs = shared_split(seed)
    return train_pairs, list({tuple(s): (s, t) for s, t in test_pairs}.values())


def held_out_sample(n: int, sample_seed: int, *, date_fraction: float = DATE_FRACTION, seed: int = 0) -> list[Pair]:
    """A fresh sample of ``translation_corpus(n, sample_seed)``, each source once, without any source the
    recipe trained on (``seed``: the recipe's seed)."""
    seen = {tuple(s) for s, _ in split_pairs(seed)[0]}
    fresh = {tuple(s): (s, t) for s, t in translation_corpus(n, sample_seed, date_fraction=date_fraction)}
    return [pair for key, pair in fresh.items() if key not in seen]


def encode_pairs(
    pairs: Sequence[Pair], vocabs: dict[str, Vocab], max_src: int = MAX_SRC, max_tgt: int = MAX_TGT
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(src (N, max_src), tgt_in (N, max_tgt), tgt_out (N, max_tgt))`` ids, padded with ``<pad>``.

    ``src`` is ``x1 … xm <eos>``, ``tgt_in`` is ``<bos> y1 … yn`` and ``tgt_out`` is ``y1 … yn <eos>``
    (:data:`IGNORE` after it).
    """
    src = torch.full((len(pairs), max_src), PAD_ID, dtype=torch.long)
    tgt_in = torch.full((len(pairs), max_tgt), PAD_ID, dtype=torch.long)
    tgt_out = torch.full((len(pairs), max_tgt), IGNORE, dtype=torch.long)
    for row, (s, t) in enumerate(pairs):
        if len(s) + 1 > max_src or len(t) + 1 > max_tgt:
            raise ValueError(f"pair {row} is too long for {max_src} / {max_tgt} positions: {s} → {t}")
        ids_t = vocabs["target"].encode(t)
        src[row, : len(s) + 1] = torch.tensor([*vocabs["source"].encode(s), EOS_ID])
        tgt_in[row, : len(t) + 1] = torch.tensor([BOS_ID, *ids_t])
        tgt_out[row, : len(t) + 1] = torch.tensor([*ids_t, EOS_ID])
    return src, tgt_in, tgt_out


class TranslationTask(Task):
    """Training pairs for :func:`engine.training.loop.train`, one packed row per pair.

    ``inputs = [src (max_src) | tgt_in (max_tgt)]`` and ``targets = [IGNORE … | tgt_out]``; use with
    ``forward_fn=packed_forward(max_src)`` and ``trace_fn=probe_tracer(...)``.
    """

    name = "translate"
    description = "English → French sentences of a toy grammar, and written dates → ISO 8601."
    metric_name = "exact match (teacher-forced)"
    causal = False

    def __init__(self, pairs: Sequence[Pair], vocabs: dict[str, Vocab], max_src: int = MAX_SRC, max_tgt: int = MAX_TGT):
        if not pairs:
            raise ValueError("TranslationTask needs at least one pair")
        if len(vocabs["source"]) > len(vocabs["target"]):  # the loop shows the packed probe with ``vocab``
            raise ValueError("TranslationTask: the source vocabulary must not be larger than the target one")
        self.vocabs, self.max_src, self.max_tgt = vocabs, max_src, max_tgt
        self._src, self._tgt_in, self._tgt_out = encode_pairs(pairs, vocabs, max_src, max_tgt)

    @property
    def vocab(self) -> Vocab:
        return self.vocabs["target"]

    @property
    def seq_len(self) -> int:
        return self.max_src + self.max_tgt

    def _pack(self, idx: torch.Tensor) -> Batch:
        ignored = torch.full((len(idx), self.max_src), IGNORE, dtype=torch.long)
        inputs = torch.cat([self._src[idx], self._tgt_in[idx]], dim=1)  # (B, S + T)
        return Batch(inputs, torch.cat([ignored, self._tgt_out[idx]], dim=1))  # (B, S + T) each

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        return self._pack(torch.randint(len(self._src), (batch_size,), generator=generator))

    def probe(self) -> list[int]:
        """:data:`PROBE` packed as a training row (its target is the grammar's translation)."""

        src, tgt_in, _ = encode_pairs(
            [(tokenize(PROBE), tokenize(translate(PROBE)))], self.vocabs, self.max_src, self.max_tgt
        )
        return torch.cat([src[0], tgt_in[0]]).tolist()


def packed_forward(max_src: int) -> Callable[[Seq2SeqTransformer, torch.Tensor], torch.Tensor]:
    """``forward_fn`` for :class:`TranslationTask` rows: ``(B, S + T)`` → logits ``(B, S + T, V)``.

    The logits of the source columns are zeros (their targets are ignored); the target columns hold
    the decoder's logits, computed on the batch trimmed to its longest source and target.
    """

    def forward(model: Seq2SeqTransformer, inputs: torch.Tensor) -> torch.Tensor:
        src, tgt_in = inputs[:, :max_src], inputs[:, max_src:]  # (B, S), (B, T)
        s_len = int((src != PAD_ID).sum(1).max())
        t_len = int((tgt_in != PAD_ID).sum(1).max())
        src = src[:, :s_len]  # (B, s)
        logits = model(src, tgt_in[:, :t_len], src == PAD_ID, attn_impl="sdpa")  # (B, t, V)
        return F.pad(logits, (0, 0, max_src, tgt_in.shape[1] - t_len))  # (B, S + T, V)

    return forward


def probe_tracer(vocabs: dict[str, Vocab], max_src: int, model_id: str) -> Callable[..., AttentionTrace]:
    """``trace_fn`` for the loop: translate the probe's source greedily; return the cross-attention trace."""

    def trace(model: Seq2SeqTransformer, token_ids: list[int], _tokens: Tokens) -> AttentionTrace:
        src = [i for i in token_ids[:max_src] if i != PAD_ID]
        shown = vocabs["source"].tokens_for_display(src)
        return trace_seq2seq(model, src, shown, vocabs["target"], model_id=model_id).cross

    return trace


# ---- evaluation ---------------------------------------------------------------------------------------


@torch.no_grad()
def translate_pairs(
    model: Seq2SeqTransformer, pairs: Sequence[Pair], vocabs: dict[str, Vocab], batch: int = 512
) -> list[list[str]]:
    """Greedy translations (target tokens, ``<eos>`` dropped) of the sources of ``pairs``."""
    device = model.unembed.weight.device
    out = []
    for chunk in chunks(pairs, batch):
        src, _, _ = encode_pairs(chunk, vocabs, model.cfg.max_src, model.cfg.max_tgt)
        src = src[:, : int((src != PAD_ID).sum(1).max())].to(device)  # (B, s)
        for ids in model.greedy_decode_batch(src, src == PAD_ID):
            out.append(vocabs["target"].decode(i for i in ids if i != EOS_ID))
    return out


@torch.no_grad()
def evaluate(model: Seq2SeqTransformer, pairs: Sequence[Pair], vocabs: dict[str, Vocab]) -> dict[str, float]:
    """Held-out figures: greedy exact match ``{"sentences", "dates", "all"}`` and teacher-forced
    ``"token_accuracy"`` (share of target tokens, ``<eos>`` included, whose argmax is right).

    A translation is exactly right when the greedy output (up to ``<eos>``) equals the reference.
    """
    shares = exact_match_shares(translate_pairs(model, pairs, vocabs), list(pairs))
    hits = total = 0
    forward = packed_forward(model.cfg.max_src)
    device = model.unembed.weight.device
    for chunk in chunks(pairs, 512):
        src, tgt_in, tgt_out = encode_pairs(chunk, vocabs, model.cfg.max_src, model.cfg.max_tgt)
        logits = forward(model, torch.cat([src, tgt_in], dim=1).to(device))[:, model.cfg.max_src :]  # (B, T, V)
        scored = tgt_out != IGNORE  # (B, T)
        hits += int((logits.argmax(-1).cpu() == tgt_out)[scored].sum())
        total += int(scored.sum())

    return {**shares, "token_accuracy": hits / total if total else float("nan")}


def sample_translations(
    model: Seq2SeqTransformer, vocabs: dict[str, Vocab], texts: Sequence[str] = SAMPLES
) -> list[str]:
    """``"source → translation"`` for each text (sources split as the app splits them)."""
    pairs = [(source_tokens(text), ["."]) for text in texts]
    return [f"{text} → {target_text(words)}" for text, words in zip(texts, translate_pairs(model, pairs, vocabs))]


# ---- the recipe ---------------------------------------------------------------------------------------


def model_config(vocabs: dict[str, Vocab]) -> Seq2SeqConfig:
    """The shipped size, :class:`Seq2SeqConfig`'s default widths: 2 + 2 layers, 4 heads, d_model 64, sinusoidal
    positions."""
    return Seq2SeqConfig(
        src_vocab=len(vocabs["source"]), tgt_vocab=len(vocabs["target"]), max_src=MAX_SRC, max_tgt=MAX_TGT
    )


def build(out: Path, *, steps: int | None = None, seed: int = 0, log: Callable[[str], None] = print) -> dict:
    """Train ``tiny-translator`` from scratch, evaluate it on the held-out pairs and save it to ``out``."""
    vocabs = vocabularies()
    train_pairs, test_pairs = split_pairs(seed)
    task = TranslationTask(train_pairs, vocabs)
    cfg = model_config(vocabs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Seq2SeqTransformer(cfg)
    config = TrainConfig(
        steps=steps or 2500, batch_size=64, lr=3e-3, warmup=100, snapshot_every=250, seed=seed, eval_batch_size=256
    )
    run = train_logged(
        model,
        task,
        config,
        log=log,
        forward_fn=packed_forward(MAX_SRC),
        trace_fn=probe_tracer(vocabs, MAX_SRC, NAME),
        model_id=NAME,
    )
    model.eval()
    scores = evaluate(model, test_pairs, vocabs)
    n_dates = sum(map(is_date, test_pairs))
    metrics = {
        EXACT_SENTENCES: round(scores["sentences"], 4),
        EXACT_DATES: round(scores["dates"], 4),
        EXACT_ALL: round(scores["all"], 4),
        TOKEN_ACCURACY: round(scores["token_accuracy"], 4),
        f"final training loss (last {config.snapshot_every} steps)": round(run.last_loss, 4),
    }
    card = {
        "title": NAME,
        "label": "Tiny translator En→Fr (own transformer)",
        "family": "encoder-decoder",
        "description": "A 2+2-layer encoder-decoder transformer trained here on a toy English→French grammar "
        "(adjectives that move, gender agreement, elision) and on written dates→ISO; its "
        "cross-attention shows which source words each target word reads.",
        "data": f"{N_PAIRS:,} generated pairs (seed {seed}): toy English→French sentences and "
        f"{DATE_FRACTION:.0%} written dates→ISO; {len(test_pairs):,} held out ({n_dates:,} dates), "
        f"no source on both sides; {len(vocabs['source'])} source / {len(vocabs['target'])} target tokens",
        "batch": f"{config.batch_size} pairs, teacher forcing, lr {config.lr} (warm-up {config.warmup}, cosine)",
        "training_time_s": round(run.training_s, 1),
        "exact match": "greedy decoding of every held-out pair; right when the output equals the reference",
        "samples": sample_translations(model, vocabs),
        **run_fields(NAME, run, steps=config.steps, seed=seed, metrics=metrics),
    }
    save_checkpoint(out, NAME, model, kind="seq2seq", config=cfg.to_dict(), vocab=vocabs, card=card)
    return card
