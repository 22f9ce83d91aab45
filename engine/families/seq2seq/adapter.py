"""Tracing the encoder-decoder translator (:mod:`engine.families.seq2seq.network`) and loading it from a checkpoint.

:func:`trace_seq2seq` translates one source greedily and captures one teacher-forced pass over what
was generated; :class:`Seq2SeqAdapter` is what ``engine.trace`` uses for text → :class:`Seq2SeqTrace`;
:func:`load_model` loads a ``seq2seq`` checkpoint (its record in ``engine.families``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from engine.capture import capture
from engine.capture.transfer import to_host
from engine.corpora import target_text
from engine.corpora.dates import to_tokens_src
from engine.corpora.translation import suggest, tokenize
from engine.decoding import decode_loop
from engine.families.own import captured_heads, checkpoint_model, qkv_names, source_target_vocab
from engine.families.seq2seq.network import Seq2SeqTransformer
from engine.model import Model
from engine.records import EmptyInputError, ModelSpec, Tokens
from engine.text import length_notices, unknown_words_notice
from engine.traces.attention import AttentionTrace
from engine.traces.seq2seq import Seq2SeqTrace, written_tokens
from engine.vocab import BOS_ID, EOS_ID, UNK_ID, Vocab, WordInput, checked_words


def trace_seq2seq(
    model: Seq2SeqTransformer,
    src_ids: Sequence[int],
    src_tokens: Tokens,
    tgt_vocab: Vocab,
    *,
    model_id: str,
    generated: Sequence[int] | None = None,
) -> Seq2SeqTrace:
    """Translate one source (greedily, or take ``generated``), then capture one teacher-forced pass over it.

    The decoder input is ``<bos>`` + the generated tokens (the final ``<eos>`` is not fed back): row
    ``i`` of the decoder and cross-attention traces reads ``target[i]`` and predicted
    ``target[i + 1]`` (the last row predicted ``<eos>``). Only Q, K, V are captured; the traces
    compute scores and patterns lazily, equal to the model's own ``hook_pattern``.

    Args:
        model: the translator (read only; no mode or device change).
        src_ids: source ids (with the trailing ``<eos>`` the model was trained with).
        src_tokens: display tokens of ``src_ids``.
        tgt_vocab: the target vocabulary.
        model_id: the id recorded in the traces.
        generated: the output ids already decoded (no ``<bos>``; ending with ``<eos>`` when decoding
            finished), e.g. sampled by :meth:`Seq2SeqAdapter.generate`; None decodes greedily here.

    Returns:
        A :class:`Seq2SeqTrace` (family ``"encoder-decoder"`` on all three attention traces).
    """
    cfg = model.cfg
    if not src_ids:
        raise EmptyInputError("there is nothing to translate: the source has no tokens")
    if len(src_ids) != len(src_tokens):
        shown = list(src_tokens.strings)[:20]
        raise ValueError(f"{len(src_ids)} source ids but {len(src_tokens)} display tokens {shown}")
    generated = model.greedy_decode(src_ids) if generated is None else list(generated)
    finished = bool(generated) and generated[-1] == EOS_ID
    tgt_ids = [BOS_ID, *(generated[:-1] if finished else generated)]
    target = tgt_vocab.tokens_for_display(tgt_ids)
    layers = range(cfg.n_layers)
    parts = {
        "encoder": "encoder.blocks.{}.attn",
        "decoder": "decoder.blocks.{}.attn",
        "cross": "decoder.blocks.{}.cross_attn",
    }
    names = qkv_names([prefix.format(layer) for prefix in parts.values() for layer in layers])
    device = model.unembed.weight.device
    src = torch.tensor([list(src_ids)], device=device)  # (1, S)
    tgt = torch.tensor([tgt_ids], device=device)  # (1, T)
    with torch.no_grad(), capture(model, names=names) as acts:
        model(src, tgt, attn_impl="sdpa")
        heads = {}
        for part, prefix in parts.items():
            prefixes = [prefix.format(layer) for layer in layers]
            heads[part] = captured_heads(acts, prefixes, [model.get_submodule(p) for p in prefixes])
        pos_src, pos_tgt = model.encoder.position_vectors(len(src_ids)), model.decoder.position_vectors(len(tgt_ids))
    heads, pos_src, pos_tgt = to_host((heads, pos_src, pos_tgt))  # one copy from the model's device

    def attention(part: str, queries: Tokens, keys: Tokens, causal: bool, pos: np.ndarray | None) -> AttentionTrace:
        return AttentionTrace(
            model_id=model_id,
            family="encoder-decoder",
            tokens=queries,
            key_tokens=keys,
            **heads[part],
            causal=causal,
            pos_encoding=pos,
            pos_encoding_kind=cfg.pos_encoding,
            n_input_tokens=len(keys),
            device=device.type,
        )

    notices = ()
    if not finished:
        notices = (f"The translation did not end within {len(generated)} tokens; it was cut there.",)
    return Seq2SeqTrace(
        model_id=model_id,
        source=src_tokens,
        target=target,
        output_text=target_text(tgt_vocab.decode(generated)),
        encoder=attention("encoder", src_tokens, src_tokens, False, pos_src),
        decoder=attention("decoder", target, target, True, pos_tgt),
        cross=attention("cross", target, src_tokens, False, None),
        notices=notices,
        written=written_tokens(tgt_vocab.tokens_for_display(generated), finished),
    )


def source_tokens(text: str) -> list[str]:
    """Split source text as the training data was split: with a digit in it, as a date
    (:func:`~engine.corpora.dates.to_tokens_src`, one token per digit), otherwise as an
    English sentence (:func:`~engine.corpora.translation.tokenize`)."""
    return to_tokens_src(text) if any(ch.isdigit() for ch in text) else tokenize(text)


def source_input(text: str, vocab: Vocab, max_tokens: int, max_positions: int) -> WordInput:
    """A translator's source: the words of ``text`` + ``<eos>``, unknown words with spelling suggestions."""
    words, cut_chars, max_tokens = checked_words(text, max_tokens, source_tokens)
    limit = min(max_tokens, max_positions)
    kept = words[: limit - 1]
    ids = [*vocab.encode(kept), EOS_ID]
    unknown = list(dict.fromkeys(w for w, i in zip(kept, ids) if i == UNK_ID))
    notices = [n for n in [unknown_words_notice(unknown, lambda w: suggest(w, k=2))] if n]
    notices += length_notices(
        len(words) + 1,
        limit,
        max_tokens=max_tokens,
        max_positions=max_positions,
        cut_chars=cut_chars,
        verb="translated",
    )
    return WordInput(tuple(ids), vocab.tokens_for_display(ids), tuple(notices), len(words) + 1, len(kept) < len(words))


@dataclass(frozen=True)
class Seq2SeqAdapter:
    """``engine.trace`` for the encoder-decoder translator: text → :class:`Seq2SeqTrace`.

    The source is split by :func:`source_tokens` and ends with ``<eos>``; unknown words become
    ``<unk>`` (listed in a notice). ``causal`` is ignored: the decoder is always causal, the encoder
    and cross-attention never. ``max_tokens`` bounds the source (``<eos>`` included).
    """

    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> Seq2SeqTrace:
        tgt_vocab = model.tokenizer["target"]
        inp = source_input(text, model.tokenizer["source"], max_tokens, model.max_positions)
        ids, tokens, notices = list(inp.ids), inp.tokens, list(inp.notices)
        trace, device, notice = model.run(
            lambda module, _device: trace_seq2seq(module, ids, tokens, tgt_vocab, model_id=model.spec.id)
        )
        notices += list(trace.notices) + ([notice] if notice else [])
        encoder = dataclasses.replace(trace.encoder, truncated=inp.truncated, n_input_tokens=inp.n_input)
        return dataclasses.replace(trace, encoder=encoder, notices=tuple(notices), device=device.type)

    def generate(self, model: Model, text: str, settings, *, max_tokens: int) -> Seq2SeqTrace:
        """Translate ``text`` with ``settings`` (greedy or sampled, up to ``settings.max_new_tokens``
        words), then capture the three attentions over that output as :meth:`trace` does.

        The decoder has no key/value cache and at most ``max_tgt`` positions, so each step re-runs the
        decoder over the output so far (``sdpa``, no capture) and takes the model's lock on its own, as
        our decoder's ``generate`` does. Greedy settings write what :meth:`trace` writes.
        """
        tgt_vocab = model.tokenizer["target"]
        inp = source_input(text, model.tokenizer["source"], max_tokens, model.max_positions)
        ids, tokens, notices = list(inp.ids), inp.tokens, list(inp.notices)
        extra: list[str] = []

        def step(out: list[int]) -> np.ndarray:
            def last_scores(module: Seq2SeqTransformer, device: torch.device) -> np.ndarray:
                src = torch.tensor([ids], device=device)  # (1, S)
                tgt = torch.tensor([out], device=device)  # (1, T)
                memory = module.encode(src, attn_impl="sdpa")  # (1, S, D)
                return module.decode(memory, tgt, attn_impl="sdpa")[0, -1].float().cpu().numpy()  # (V,)

            scores, _device, notice = model.run(last_scores)
            if notice and notice not in extra:
                extra.append(notice)
            return scores

        n_new = min(settings.max_new_tokens, model.module.cfg.max_tgt - 1)
        generated, _stopped = decode_loop(step, [BOS_ID], settings, {EOS_ID}, n_new)
        trace, device, notice = model.run(
            lambda module, _device: trace_seq2seq(
                module, ids, tokens, tgt_vocab, model_id=model.spec.id, generated=generated
            )
        )
        notices += [*trace.notices, f"Decoding: {settings.describe()}."]
        notices += [n for n in [*extra, notice] if n and n not in notices]
        encoder = dataclasses.replace(trace.encoder, truncated=inp.truncated, n_input_tokens=inp.n_input)
        return dataclasses.replace(trace, encoder=encoder, notices=tuple(notices), device=device.type)


def load_model(spec: ModelSpec, folder: Path, device: torch.device | None = None) -> Model:
    """Load a ``seq2seq`` checkpoint as a read-only :class:`Model` (tokenizer: ``{"source", "target"}`` vocabs).

    Raises:
        CheckpointError: a missing, corrupt or mismatched file, or vocabularies that do not fit.
    """
    return checkpoint_model(
        spec,
        folder,
        device,
        adapter=Seq2SeqAdapter(),
        max_positions=lambda module: module.cfg.max_src,
        architecture="own encoder-decoder transformer",
        validate=source_target_vocab("seq2seq"),
    )
