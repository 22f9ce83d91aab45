"""Recipes ``bahdanau-translator`` (additive attention) and ``luong-translator`` (dot attention).

Both train an :class:`~engine.families.bahdanau.RNNAttentionModel` on the toy English → French grammar
mixed with written dates → ISO (:func:`engine.corpora.translation_corpus`), with teacher
forcing::

    pairs        = translation_corpus(N_PAIRS, seed)                   # 20 % dates
    train, test  = train_test_split(pairs, TEST_FRACTION, seed, key=source)   # no source on both sides
    training     = train, with the final "." dropped from 25 % of the sentence pairs (both sides)
    one step:    batch of B training pairs;  logits = model(src, [<bos>] + tgt)
                 loss = cross_entropy(logits, tgt + [<eos>]), padding ignored
                 AdamW, lr from TrainConfig.lr_at (warm-up + cosine), ‖grad‖ ≤ 1

and are then judged on the held-out pairs by greedy decoding: exact match of whole sentences (and
dates), and how often the alignment α points where the grammar's gold alignment
(:func:`engine.corpora.translation.alignment`) says the target word comes from.

The evaluation helpers (:func:`held_out_pairs`, :func:`exact_match`, :func:`alignment_agreement`) are
public so tests can re-measure a shipped checkpoint.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from engine.checkpoint import save_checkpoint
from engine.corpora import target_text
from engine.corpora.translation import alignment
from engine.families.bahdanau import (
    RNNAttentionConfig,
    RNNAttentionModel,
    greedy_decode,
    record_steps,
    source_tokens,
)
from engine.training.loop import TrainConfig, make_optimizer, resolve_device, update
from engine.training.recipes.common import Log, LossLog, Run, chunks, log_line, run_fields
from engine.training.recipes.translation_data import (
    DATE_FRACTION,
    N_PAIRS,
    Pair,
    exact_match_shares,
    is_date,
    split_pairs,
    vocabularies,
)
from engine.training.recipes.translation_data import SAMPLES as TRANSLATOR_SAMPLES
from engine.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

NO_STOP_FRACTION = 0.25  # training sentences also shown without their final "." (people often omit it)
SAMPLES = (TRANSLATOR_SAMPLES[0], TRANSLATOR_SAMPLES[0].removesuffix(" ."), *TRANSLATOR_SAMPLES[1:])


def without_stop(pair: Pair) -> Pair:
    """A sentence pair without its final full stop on both sides (other pairs unchanged)."""
    src, tgt = pair
    return (src[:-1], tgt[:-1]) if src[-1:] == ["."] and tgt[-1:] == ["."] and len(src) > 1 else pair


def drop_some_stops(pairs: Sequence[Pair], seed: int) -> list[Pair]:
    """``pairs`` with the final "." removed from a seeded ``NO_STOP_FRACTION`` of the sentence pairs."""
    rng = random.Random(seed)
    return [without_stop(p) if not is_date(p) and rng.random() < NO_STOP_FRACTION else p for p in pairs]


def held_out_pairs(seed: int = 0) -> list[Pair]:
    """The held-out side of :func:`split_pairs`."""
    return split_pairs(seed)[1]


def encode_pairs(pairs: Sequence[Pair], vocabs: dict[str, Vocab]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(src [N, S], tgt_in [N, T+1], tgt_out [N, T+1])``, padded with ``<pad>`` (id 0).

    ``tgt_in`` is ``<bos> y1 … yn`` and ``tgt_out`` is ``y1 … yn <eos>``.
    """
    s_len = max(len(s) for s, _ in pairs)
    t_len = max(len(t) for _, t in pairs) + 1
    src = torch.full((len(pairs), s_len), PAD_ID, dtype=torch.long)
    tgt_in = torch.full((len(pairs), t_len), PAD_ID, dtype=torch.long)
    tgt_out = torch.full((len(pairs), t_len), PAD_ID, dtype=torch.long)
    for row, (s, t) in enumerate(pairs):
        ids_t = vocabs["target"].encode(t)
        src[row, : len(s)] = torch.tensor(vocabs["source"].encode(s))
        tgt_in[row, : len(t) + 1] = torch.tensor([BOS_ID, *ids_t])
        tgt_out[row, : len(t) + 1] = torch.tensor([*ids_t, EOS_ID])
    return src, tgt_in, tgt_out


@torch.no_grad()
def translate(
    model: RNNAttentionModel, pairs: Sequence[Pair], vocabs: dict[str, Vocab], batch: int = 256
) -> list[list[str]]:
    """Greedy translations (target words, ``<eos>`` dropped) of the sources of ``pairs`` (model in eval mode)."""
    device = next(model.parameters()).device
    out = []
    for chunk in chunks(pairs, batch):
        src, _, _ = encode_pairs(chunk, vocabs)
        for ids in greedy_decode(model, src.to(device)):
            out.append(vocabs["target"].decode([i for i in ids if i != EOS_ID]))
    return out


def exact_match(model: RNNAttentionModel, pairs: Sequence[Pair], vocabs: dict[str, Vocab]) -> dict[str, float]:
    """Share of pairs translated exactly right by greedy decoding: ``{"sentences", "dates", "all"}``."""
    return exact_match_shares(translate(model, pairs, vocabs), list(pairs))


@torch.no_grad()
def alignment_agreement(model: RNNAttentionModel, pairs: Sequence[Pair], vocabs: dict[str, Vocab]) -> float:
    """Share of target words (sentences only, teacher-forced on the reference) whose argmax α is the
    source word the gold alignment links them to (model in eval mode)."""
    device = next(model.parameters()).device
    sentences = [p for p in pairs if not is_date(p)]
    hits = total = 0
    for chunk in chunks(sentences, 256):
        src, tgt_in, _ = encode_pairs(chunk, vocabs)
        with record_steps(model, ("decoder.attn.hook_alignment",)) as steps:
            model(src.to(device), tgt_in.to(device))
        alpha = torch.stack(steps["decoder.attn.hook_alignment"], dim=1).argmax(dim=-1).cpu()  # (B, T)
        for row, (s, t) in enumerate(chunk):
            gold = {fr: en for en, fr in alignment(" ".join(s))}
            hits += sum(int(alpha[row, fr]) == gold[fr] for fr in range(len(t)))
            total += len(t)
    return hits / total


def train_model(
    cfg: RNNAttentionConfig,
    train_pairs: Sequence[Pair],
    vocabs: dict[str, Vocab],
    config: TrainConfig,
    log: Log = log_line,
) -> tuple[RNNAttentionModel, Run]:
    """Teacher-forced training; returns the model in eval mode and the run (time, device, last mean loss)."""
    device = resolve_device(config.device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = RNNAttentionModel(cfg).to(device)
    src_all, in_all, out_all = encode_pairs(train_pairs, vocabs)
    gen = torch.Generator().manual_seed(config.seed)
    optimizer = make_optimizer(model, config, device)
    model.train()
    losses = LossLog(config, config.snapshot_every, log)
    for step in range(config.steps):
        idx = torch.randint(len(train_pairs), (config.batch_size,), generator=gen)
        src, tgt_in, tgt_out = src_all[idx], in_all[idx], out_all[idx]
        s_len, t_len = int((src != PAD_ID).sum(1).max()), int((tgt_out != PAD_ID).sum(1).max())
        src, tgt_in, tgt_out = src[:, :s_len].to(device), tgt_in[:, :t_len].to(device), tgt_out[:, :t_len].to(device)
        logits = model(src, tgt_in)  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID)
        update(model, optimizer, loss, config, step)
        losses.add(step, float(loss.detach()))
    model.eval()
    return model, losses.run(device.type)


def _sample_translations(model: RNNAttentionModel, vocabs: dict[str, Vocab]) -> list[str]:
    pairs = [(source_tokens(text), ["."]) for text in SAMPLES]
    return [f"{text} → {target_text(words)}" for text, words in zip(SAMPLES, translate(model, pairs, vocabs))]


def _build(out: Path, name: str, variant: str, label: str, description: str, *, steps: int | None, seed: int) -> dict:
    vocabs = vocabularies()
    train_pairs, test_pairs = split_pairs(seed)
    # the config's default widths (embeddings 64, GRU states 128, energy 64) and lengths (32) are the shipped ones
    cfg = RNNAttentionConfig(src_vocab=len(vocabs["source"]), tgt_vocab=len(vocabs["target"]), variant=variant)
    config = TrainConfig(steps=steps or 2000, batch_size=64, lr=3e-3, warmup=100, snapshot_every=250, seed=seed)
    model, run = train_model(cfg, drop_some_stops(train_pairs, seed), vocabs, config)
    match = exact_match(model, test_pairs, vocabs)
    no_stop = exact_match(model, [without_stop(p) for p in test_pairs if not is_date(p)], vocabs)["sentences"]
    agreement = alignment_agreement(model, test_pairs, vocabs)
    n_dates = sum(map(is_date, test_pairs))
    metrics = {
        "held-out exact match (sentences)": round(match["sentences"], 4),
        "held-out exact match (dates)": round(match["dates"], 4),
        "held-out exact match (all)": round(match["all"], 4),
        "held-out exact match (sentences typed without the final '.')": round(no_stop, 4),
        "alignment agreement with gold (held-out sentences)": round(agreement, 4),
        "final training loss (last 250 steps)": round(run.last_loss, 4),
    }
    card = {
        "title": name,
        "label": label,
        "family": "rnn-attention",
        "description": description,
        "data": f"{N_PAIRS:,} generated pairs (seed {seed}): toy English→French sentences and "
        f"{DATE_FRACTION:.0%} written dates→ISO; {len(test_pairs):,} held out ({n_dates:,} dates), "
        f"no source on both sides; {len(vocabs['source'])} source / {len(vocabs['target'])} target tokens",
        "batch": f"{config.batch_size} pairs, teacher forcing",
        "alignment agreement": "share of target words whose argmax α(i, ·) is the gold source word "
        "(teacher-forced on the reference translation)",
        "samples": _sample_translations(model, vocabs),
        **run_fields(name, run, steps=config.steps, seed=seed, metrics=metrics),
    }
    save_checkpoint(out, name, model, kind="rnn-attention", config=cfg.to_dict(), vocab=vocabs, card=card)
    return card


def build(out: Path, *, steps: int | None = None, seed: int = 0) -> dict:
    """``bahdanau-translator``: GRU encoder-decoder with additive attention."""
    return _build(
        out,
        "bahdanau-translator",
        "additive",
        "Bahdanau translator En→Fr (GRU + additive attention)",
        "A bidirectional GRU encoder and a GRU decoder with additive (Bahdanau) attention, trained here on a "
        "toy English→French grammar and on dates; its alignment map shows which English word each French word "
        "reads.",
        steps=steps,
        seed=seed,
    )


def build_luong(out: Path, *, steps: int | None = None, seed: int = 0) -> dict:
    """``luong-translator``: the same model and data with the dot (Luong) energy."""
    return _build(
        out,
        "luong-translator",
        "dot",
        "Luong translator En→Fr (GRU + dot attention)",
        "The Bahdanau translator's twin with a dot-product (Luong) energy s(i−1)·W_h h(j) instead of the "
        "additive one; same data, steps and seed, for comparing the two alignment maps.",
        steps=steps,
        seed=seed,
    )
