r"""An RNN encoder-decoder with attention (Bahdanau et al., 2015; Luong et al., 2015), step by step.

The encoder reads the source with a bidirectional GRU; each source word ``j`` gets both directions'
states side by side. The decoder is a GRU cell that writes one target word per step and, before each
step, looks back at every source word::

    h(j)    = [→h(j); ←h(j)]                          encoder state of source word j  [2·d_enc]
    s(0)    = tanh(W_init ←h(1))                      the backward GRU's summary of the sentence
    e(i, j) = vᵀ tanh(W s(i−1) + U h(j))              additive (Bahdanau) energy
            = s(i−1) · (W_h h(j))                     dot variant (Luong's "general" score: W_h maps
                                                      the 2·d_enc encoder states to d_dec)
    α(i, j) = softmax_j e(i, j)                       padding positions get e = −∞, so α = 0 there
    c(i)    = Σ_j α(i, j) h(j)                        context vector                  [2·d_enc]
    s(i)    = GRU([y(i−1); c(i)], s(i−1))             y(i−1): embedding of the previous word
    p(y(i)) = softmax(W_o tanh(W_t [s(i); c(i); y(i−1)]))

Both variants share this decoder; only the energy differs (Luong's own decoder attends with s(i)
after the step, we keep Bahdanau's order so the two are directly comparable).

Hook points (module paths are the public names; the decoder's are called **once per decoding step**):

    encoder.hook_states          [batch, src_pos, 2·d_enc]  h(j)
    decoder.hook_state           [batch, d_dec]             s(i−1), the state the attention reads
    decoder.attn.hook_energies   [batch, src_pos]           e(i, ·) with −∞ at padding (softmax input)
    decoder.attn.hook_alignment  [batch, src_pos]           α(i, ·)
    decoder.attn.hook_context    [batch, 2·d_enc]           c(i)

:func:`engine.capture.capture` keeps the last call of a hook; :func:`record_steps` keeps every step.
:func:`trace_alignment` turns one greedy translation into an :class:`~engine.traces.alignment.AlignmentTrace`;
:func:`load_model` loads a checkpoint of kind ``"rnn-attention"`` as an :class:`~engine.model.Model`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from engine.capture import HookPoint
from engine.corpora import target_text
from engine.corpora.translation import suggest
from engine.families.own import JsonConfig, checkpoint_model, source_target_vocab
from engine.model import Model
from engine.records import EmptyInputError, ModelSpec, Tokens
from engine.text import check_max_tokens, clean_input, length_notices, unknown_words_notice
from engine.traces.alignment import AlignmentTrace
from engine.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocab

Variant = Literal["additive", "dot"]
VARIANTS: tuple[str, ...] = ("additive", "dot")
KIND = "rnn-attention"
STEP_HOOKS = (
    "decoder.hook_state",
    "decoder.attn.hook_energies",
    "decoder.attn.hook_alignment",
    "decoder.attn.hook_context",
)


@dataclass(frozen=True)
class RNNAttentionConfig(JsonConfig):
    """Hyper-parameters of :class:`RNNAttentionModel`; JSON round-trip via ``to_dict``/``from_dict``. Apart from
    the vocabulary sizes, the defaults are the shipped translators'."""

    src_vocab: int = 256  # source token ids
    tgt_vocab: int = 320  # target token ids
    d_emb: int = 64  # word embedding width (both sides)
    d_enc: int = 128  # GRU state width per direction; h(j) has 2·d_enc
    d_dec: int = 128  # decoder GRU state width
    d_attn: int = 64  # width of W s + U h inside the additive energy (unused by "dot")
    variant: Variant = "additive"  # "additive" (Bahdanau) or "dot" (Luong's general score)
    max_src: int = 32  # longest source the model is used with, in tokens
    max_tgt: int = 32  # most target words greedy decoding writes (<eos> included)

    def __post_init__(self) -> None:
        problems = self.positive_int_problems(f.name for f in fields(self) if f.name != "variant")
        if self.variant not in VARIANTS:
            problems.append(f"variant must be one of {list(VARIANTS)}, got {self.variant!r}")
        self.raise_problems(problems)


class Encoder(nn.Module):
    """Bidirectional GRU: ``h(j) = [→h(j); ←h(j)]``; padding is packed away, so ←h starts at the last word."""

    def __init__(self, cfg: RNNAttentionConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.src_vocab, cfg.d_emb, padding_idx=PAD_ID)
        self.gru = nn.GRU(cfg.d_emb, cfg.d_enc, batch_first=True, bidirectional=True)
        self.hook_states = HookPoint()  # [batch, src_pos, 2·d_enc]

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``src`` [B, S] (padded with ``<pad>``) → ``(h [B, S, 2·d_enc], ←h(1) [B, d_enc])``."""
        x = self.embed(src)  # (B, S, d_emb)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, last = self.gru(packed)  # last: (2, B, d_enc), [1] = backward direction after word 1
        h, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # (B, S, 2·d_enc)
        return self.hook_states(h), last[1]


class Attention(nn.Module):
    """One decoding step's attention: energies → alignment (softmax over source words) → context."""

    def __init__(self, cfg: RNNAttentionConfig) -> None:
        super().__init__()
        self.variant = cfg.variant
        d_keys = 2 * cfg.d_enc
        if cfg.variant == "additive":
            self.w = nn.Linear(cfg.d_dec, cfg.d_attn, bias=False)  # W: s(i−1) → d_attn
            self.u = nn.Linear(d_keys, cfg.d_attn, bias=False)  # U: h(j) → d_attn
            self.v = nn.Linear(cfg.d_attn, 1, bias=False)  # vᵀ
        else:
            self.w_h = nn.Linear(d_keys, cfg.d_dec, bias=False)  # W_h: h(j) → d_dec
        self.hook_energies = HookPoint()  # [batch, src_pos]
        self.hook_alignment = HookPoint()  # [batch, src_pos]
        self.hook_context = HookPoint()  # [batch, 2·d_enc]

    def keys(self, h: torch.Tensor) -> torch.Tensor:
        """The part of the energy that depends on ``h`` only, computed once per sentence:
        ``U h(j)`` (additive, [B, S, d_attn]) or ``W_h h(j)`` (dot, [B, S, d_dec])."""
        return self.u(h) if self.variant == "additive" else self.w_h(h)

    def forward(
        self, s_prev: torch.Tensor, h: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``s_prev`` [B, d_dec], ``h`` [B, S, 2·d_enc], ``mask`` [B, S] (True = a real word) → ``(c, α)``."""
        if self.variant == "additive":
            energies = self.v(torch.tanh(self.w(s_prev)[:, None, :] + keys)).squeeze(-1)  # (B, S)
        else:
            energies = torch.bmm(keys, s_prev[:, :, None]).squeeze(-1)  # (B, S)
        energies = self.hook_energies(energies.masked_fill(~mask, float("-inf")))
        alignment = self.hook_alignment(torch.softmax(energies, dim=-1))  # (B, S), rows sum to 1
        context = torch.bmm(alignment[:, None, :], h).squeeze(1)  # (B, 2·d_enc)
        return self.hook_context(context), alignment


class Decoder(nn.Module):
    """GRU cell with attention; :meth:`step` writes one target word."""

    def __init__(self, cfg: RNNAttentionConfig) -> None:
        super().__init__()
        d_keys = 2 * cfg.d_enc
        self.embed = nn.Embedding(cfg.tgt_vocab, cfg.d_emb, padding_idx=PAD_ID)
        self.init = nn.Linear(cfg.d_enc, cfg.d_dec)  # W_init: ←h(1) → s(0)
        self.hook_state = HookPoint()  # [batch, d_dec]
        self.attn = Attention(cfg)
        self.cell = nn.GRUCell(cfg.d_emb + d_keys, cfg.d_dec)
        self.pre_out = nn.Linear(cfg.d_dec + d_keys + cfg.d_emb, cfg.d_dec)  # W_t
        self.out = nn.Linear(cfg.d_dec, cfg.tgt_vocab)  # W_o

    def step(
        self, y_prev: torch.Tensor, s_prev: torch.Tensor, h: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``y_prev`` [B] ids, ``s_prev`` [B, d_dec] → ``(logits [B, tgt_vocab], s(i) [B, d_dec])``."""
        s_prev = self.hook_state(s_prev)
        context, _ = self.attn(s_prev, h, keys, mask)  # (B, 2·d_enc)
        y = self.embed(y_prev)  # (B, d_emb)
        s = self.cell(torch.cat([y, context], dim=-1), s_prev)  # (B, d_dec)
        logits = self.out(torch.tanh(self.pre_out(torch.cat([s, context, y], dim=-1))))  # (B, V)
        return logits, s


@dataclass(frozen=True)
class Encoded:
    """What the decoder needs from the encoder: states, precomputed keys, mask, first decoder state."""

    h: torch.Tensor  # [B, S, 2·d_enc]
    keys: torch.Tensor  # [B, S, d_attn] or [B, S, d_dec]
    mask: torch.Tensor  # [B, S] bool, True = a real word
    s0: torch.Tensor  # [B, d_dec]


class RNNAttentionModel(nn.Module):
    """Bidirectional GRU encoder + GRU decoder with additive or dot attention (see the module docstring)."""

    def __init__(self, cfg: RNNAttentionConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)

    def encode(self, src: torch.Tensor) -> Encoded:
        """``src`` [B, S] ids, padded at the end with ``<pad>`` (every row has at least one word)."""
        mask = src != PAD_ID  # (B, S)
        lengths = mask.sum(dim=1)
        if bool((lengths == 0).any()):
            raise ValueError("every source sentence needs at least one token")
        h, back_first = self.encoder(src, lengths)
        s0 = torch.tanh(self.decoder.init(back_first))  # (B, d_dec)
        return Encoded(h, self.decoder.attn.keys(h), mask, s0)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: ``tgt_in`` [B, T] starts with ``<bos>``; returns logits [B, T, tgt_vocab]."""
        enc = self.encode(src)
        s, logits = enc.s0, []
        for i in range(tgt_in.shape[1]):
            step_logits, s = self.decoder.step(tgt_in[:, i], s, enc.h, enc.keys, enc.mask)
            logits.append(step_logits)
        return torch.stack(logits, dim=1)  # (B, T, V)


@torch.no_grad()
def greedy_decode(model: RNNAttentionModel, src: torch.Tensor, max_len: int | None = None) -> list[list[int]]:
    """Greedy translations of a batch ``src`` [B, S]: per row the chosen ids up to and including ``<eos>``.

    Args:
        model: the model (read only; run it in eval mode).
        src: source ids padded with ``<pad>``, on the model's device.
        max_len: most words written per row (default ``cfg.max_tgt``); a row that reaches it has no ``<eos>``.
    """
    max_len = max_len or model.cfg.max_tgt
    enc = model.encode(src)
    y = torch.full((src.shape[0],), BOS_ID, dtype=torch.long, device=src.device)
    s, done = enc.s0, torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    out: list[torch.Tensor] = []
    for _ in range(max_len):
        logits, s = model.decoder.step(y, s, enc.h, enc.keys, enc.mask)
        y = logits.argmax(dim=-1)
        out.append(y)
        done |= y == EOS_ID
        if bool(done.all()):
            break
    rows = torch.stack(out, dim=1).tolist()  # (B, T)
    return [row[: row.index(EOS_ID) + 1] if EOS_ID in row else row for row in rows]


@contextmanager
def record_steps(model: nn.Module, names: tuple[str, ...] = STEP_HOOKS) -> Iterator[dict[str, list[torch.Tensor]]]:
    """Like :func:`engine.capture.capture`, but keeps every call: ``{name: [step 1, step 2, …]}`` (detached).

    Example:
        >>> with record_steps(model) as steps:
        ...     greedy_decode(model, src)
        >>> torch.stack(steps["decoder.attn.hook_alignment"], 1)  # [batch, tgt_pos, src_pos]
    """
    modules = dict(model.named_modules())
    store: dict[str, list[torch.Tensor]] = {n: [] for n in names}
    handles = []
    try:
        for name in names:

            def hook(_m: nn.Module, _i: tuple, out: torch.Tensor, name: str = name) -> None:
                store[name].append(out.detach())

            handles.append(modules[name].register_forward_hook(hook))
        yield store
    finally:
        for handle in handles:
            handle.remove()


# ---- tracing -----------------------------------------------------------------------------------------

_SOURCE_TOKEN = re.compile(r"\d|[^\W\d]+|[^\w\s]")


def source_tokens(text: str) -> list[str]:
    """Source tokens as in training: lowercase words, one token per digit and per punctuation mark.

    This is :func:`engine.corpora.dates.to_tokens_src`; on the English sentences (no digits,
    no apostrophes) it gives exactly :func:`engine.corpora.translation.tokenize`'s tokens.
    """
    return _SOURCE_TOKEN.findall(text.lower())


def _numpy(steps: list[torch.Tensor]) -> np.ndarray:
    """Per-step ``[1, …]`` tensors → float32 ``[step, …]``."""
    return np.ascontiguousarray(torch.cat(steps, dim=0).to("cpu", torch.float32).numpy())


@torch.no_grad()
def trace_alignment(
    model: RNNAttentionModel, src_ids: list[int], src_tokens: Tokens, tgt_vocab: Vocab, *, model_id: str
) -> AlignmentTrace:
    """Translate one source sentence greedily and record every step's attention through the hook points.

    Args:
        model: the model (read only; the caller puts it in eval mode and holds its lock).
        src_ids: source ids, no padding.
        src_tokens: display tokens of ``src_ids``.
        tgt_vocab: the target vocabulary (for the generated words).
        model_id: recorded in the trace.

    Returns:
        An :class:`AlignmentTrace`; ``target`` ends with ``<eos>`` when the model wrote it (its row is the
        attention of the step that chose it).
    """
    if not src_ids:
        raise EmptyInputError("Type a sentence first: there is nothing to translate.")
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], dtype=torch.long, device=device)  # (1, S)
    enc = model.encode(src)
    y = torch.tensor([BOS_ID], device=device)
    s, chosen, probs = enc.s0, [], []
    with record_steps(model) as steps:
        for _ in range(model.cfg.max_tgt):
            logits, s = model.decoder.step(y, s, enc.h, enc.keys, enc.mask)
            p = torch.softmax(logits.float(), dim=-1)[0]  # (V,)
            y = p.argmax().reshape(1)
            chosen.append(int(y))
            probs.append(float(p[y]))
            if chosen[-1] == EOS_ID:
                break
    words = [w for i, w in zip(chosen, tgt_vocab.decode(chosen)) if i != EOS_ID]
    return AlignmentTrace(
        model_id=model_id,
        variant=model.cfg.variant,
        source=src_tokens,
        target=tgt_vocab.tokens_for_display(chosen),
        output_text=target_text(words),
        encoder_states=np.ascontiguousarray(enc.h[0].to("cpu", torch.float32).numpy()),
        decoder_states=_numpy(steps["decoder.hook_state"]),
        energies=_numpy(steps["decoder.attn.hook_energies"]),
        alignment=_numpy(steps["decoder.attn.hook_alignment"]),
        contexts=_numpy(steps["decoder.attn.hook_context"]),
        output_probs=np.asarray(probs, dtype=np.float32),
    )


@dataclass(frozen=True)
class AlignmentAdapter:
    """Tracing for :class:`RNNAttentionModel`: English sentence or written date in, alignment map out.

    Words outside the source vocabulary become ``<unk>``; a notice names them with suggestions
    (:func:`engine.corpora.translation.suggest`). ``causal`` does not apply and is ignored.
    """

    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> AlignmentTrace:
        text, cut_chars = clean_input(text)
        max_tokens = check_max_tokens(max_tokens, 1)
        vocab: Vocab = model.tokenizer["source"]
        words = source_tokens(text)
        if not words:
            raise EmptyInputError("The text has no words this model can read.")
        limit = min(max_tokens, model.max_positions)
        ids = vocab.encode(words[:limit])
        unknown = list(dict.fromkeys(w for w, i in zip(words, ids) if i == UNK_ID))
        notices = [n for n in [unknown_words_notice(unknown, suggest)] if n]
        notices += length_notices(
            len(words),
            limit,
            max_tokens=max_tokens,
            max_positions=model.max_positions,
            cut_chars=cut_chars,
            verb="translated",
        )
        tokens = vocab.tokens_for_display(ids)
        trace, device, notice = model.run(
            lambda module, _dev: trace_alignment(module, ids, tokens, model.tokenizer["target"], model_id=model.spec.id)
        )
        if notice:
            notices.append(notice)
        return dataclasses.replace(trace, notices=tuple(notices), device=device.type)


def build_model(config: Mapping[str, Any]) -> RNNAttentionModel:
    """Checkpoint builder for kind ``"rnn-attention"`` (``engine.families``): a fresh model from a config dict."""
    return RNNAttentionModel(RNNAttentionConfig.from_dict(config))


def load_model(spec: ModelSpec, folder: Path, device: torch.device | None = None) -> Model:
    """Load checkpoint ``spec.id`` from ``folder`` as a read-only :class:`Model`.

    Raises:
        CheckpointError: a missing, corrupt or mismatched file, or a checkpoint without
            ``{"source": …, "target": …}`` vocabularies (readable message).
    """
    return checkpoint_model(
        spec,
        folder,
        device,
        adapter=AlignmentAdapter(),
        max_positions=lambda module: module.cfg.max_src,
        architecture="GRU encoder-decoder with attention",
        validate=source_target_vocab(KIND),
    )
