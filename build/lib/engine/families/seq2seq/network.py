"""Our own encoder-decoder transformer ("Attention Is All You Need"), tiny, for translation.

The encoder reads the source with self-attention (no causal mask; padded keys blocked); the decoder
writes the target one token at a time with causal self-attention, then *cross-attention* from each
target position to the encoder's output, then an MLP::

    m   = Encoder(E_src[src] + P[pos])                 blocks: x = x + Attn(LN(x)); x = x + MLP(LN(x))
    y_0 = E_tgt[tgt_in] + P[pos]
    y   = y + SelfAttn(LN1(y))                         causal: position i sees target positions ≤ i
    y   = y + CrossAttn(LN2(y), m)                     Q from the decoder, K and V from the encoder
    y   = y + MLP(LN3(y))
    logits = LN_f(y) W_U

The attention math, the MLP and the encoder block are :mod:`engine.families.transformer.network`'s own
:class:`Attention`, :class:`MLP` and :class:`Block`; cross-attention is the same module reading keys
and values from another sequence. Hook names (public API, TransformerLens vocabulary; ``{L}`` = 0 …
n_layers − 1), in module order::

    encoder.hook_embed | hook_pos_embed                 [batch, src_pos, d_model]
    encoder.blocks.{L}.*                                as blocks.{L}.* of the decoder-only Transformer
    decoder.hook_embed | hook_pos_embed                 [batch, tgt_pos, d_model]
    decoder.blocks.{L}.hook_resid_pre                   [batch, tgt_pos, d_model]
    decoder.blocks.{L}.attn.hook_q|k|v|…|hook_z         causal self-attention
    decoder.blocks.{L}.hook_attn_out | hook_resid_mid
    decoder.blocks.{L}.cross_attn.hook_q                [batch, tgt_pos, head, d_head]
    decoder.blocks.{L}.cross_attn.hook_k|hook_v         [batch, src_pos, head, d_head]
    decoder.blocks.{L}.cross_attn.hook_scores_raw|hook_attn_scores|hook_pattern  [batch, head, tgt_pos, src_pos]
    decoder.blocks.{L}.cross_attn.hook_z                [batch, tgt_pos, head, d_head]
    decoder.blocks.{L}.hook_cross_attn_out | hook_resid_mid_cross   (TL's T5 names)
    decoder.blocks.{L}.mlp.hook_pre|hook_post, hook_mlp_out, hook_resid_post

The tracing (:func:`~engine.families.seq2seq.adapter.trace_seq2seq`), the adapter ``engine.trace``
uses and the checkpoint loader are in :mod:`engine.families.seq2seq.adapter`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import torch
import torch.nn.functional as F
from torch import nn

from engine.capture import HookPoint
from engine.families.own import JsonConfig
from engine.families.transformer.network import (
    MLP,
    Attention,
    AttnImpl,
    Block,
    TransformerConfig,
    init_weights,
    layers_config,
)
from engine.families.transformer.positional import sinusoidal
from engine.vocab import BOS_ID, EOS_ID

Seq2SeqPosEncoding = Literal["sinusoidal", "learned"]


@dataclass(frozen=True)
class Seq2SeqConfig(JsonConfig):
    """Hyper-parameters of :class:`Seq2SeqTransformer`; JSON round-trip via ``to_dict``/``from_dict``."""

    src_vocab: int = 64  # source token ids
    tgt_vocab: int = 64  # target token ids (rows of the unembedding)
    d_model: int = 64  # width of the residual stream D (encoder and decoder)
    n_layers: int = 2  # encoder blocks, and as many decoder blocks
    n_heads: int = 4  # heads of every attention layer; d_head = D / H
    d_mlp: int = 256  # hidden width of each MLP
    max_src: int = 32  # longest source, in tokens
    max_tgt: int = 32  # longest decoder input (<bos> + target), in tokens
    pos_encoding: Seq2SeqPosEncoding = "sinusoidal"  # position vectors added to both embeddings

    def __post_init__(self) -> None:
        problems = self.positive_int_problems(
            ("src_vocab", "tgt_vocab", "d_model", "n_layers", "n_heads", "d_mlp", "max_src", "max_tgt")
        )
        if not problems and self.d_model % self.n_heads:
            problems.append(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.pos_encoding not in get_args(Seq2SeqPosEncoding):
            problems.append(f"pos_encoding must be 'sinusoidal' or 'learned', got {self.pos_encoding!r}")
        self.raise_problems(problems)

    @property
    def d_head(self) -> int:
        """Width of one head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads

    def layer_config(self) -> TransformerConfig:
        """The :class:`TransformerConfig` that the shared Attention / MLP / Block modules are built from."""
        return layers_config(self, max(self.max_src, self.max_tgt))


def padding_bias(key_padding: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Additive mask ``(B, 1, 1, S)``: 0 for real keys, −∞ for padding (blocked for every query)."""
    zeros = torch.zeros(key_padding.shape, dtype=dtype, device=key_padding.device)  # (B, S)
    return zeros.masked_fill(key_padding.bool(), float("-inf"))[:, None, None, :]  # (B, 1, 1, S)


def causal_bias(n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Additive mask ``(1, 1, n, n)``: −∞ above the diagonal (key after the query), 0 elsewhere."""
    blocked = torch.ones(n, n, dtype=torch.bool, device=device).triu(diagonal=1)  # (n, n)
    return torch.zeros(n, n, dtype=dtype, device=device).masked_fill(blocked, float("-inf"))[None, None]


class CrossAttention(Attention):
    """Attention from the decoder to the encoder: the :class:`Attention` formula with Q from ``x``
    and K, V from the encoder output ``memory``::

        Q = x W_Q,  K = m W_K,  V = m W_V;   pattern = softmax(Q Kᵀ / √d_head + padding mask);   z = pattern V
    """

    def forward(  # type: ignore[override]
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        bias: torch.Tensor | None = None,
        attn_impl: AttnImpl = "explicit",
    ) -> torch.Tensor:
        """Args: x ``(B, T, D)``, memory ``(B, S, D)``, bias ``(B|1, 1, 1|T, S)`` or None. Returns ``(B, T, D)``."""
        B, T, D = x.shape
        S = memory.shape[1]
        H, dh = self.n_heads, self.d_head
        q = self.hook_q(self.w_q(x).view(B, T, H, dh))  # (B, T, H, dh)
        k = self.hook_k(self.w_k(memory).view(B, S, H, dh))  # (B, S, H, dh)
        v = self.hook_v(self.w_v(memory).view(B, S, H, dh))  # (B, S, H, dh)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, T|S, dh)
        if attn_impl == "sdpa":
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=self.scale)  # (B, H, T, dh)
        else:
            z = self.attend(q, k, v, bias)  # (B, H, T, S) pattern inside; (B, H, T, dh) out
        z = self.hook_z(z.transpose(1, 2))  # (B, T, H, dh)
        return self.w_o(z.reshape(B, T, D))  # (B, T, D)


class DecoderBlock(nn.Module):
    """``y += SelfAttn(LN1(y))`` (causal), ``y += CrossAttn(LN2(y), memory)``, ``y += MLP(LN3(y))``."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.hook_resid_pre = HookPoint()  # [batch, pos, d_model]
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.attn = Attention(cfg)
        self.hook_attn_out = HookPoint()  # [batch, pos, d_model]
        self.hook_resid_mid = HookPoint()  # [batch, pos, d_model]
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.cross_attn = CrossAttention(cfg)
        self.hook_cross_attn_out = HookPoint()  # [batch, pos, d_model]
        self.hook_resid_mid_cross = HookPoint()  # [batch, pos, d_model]
        self.ln3 = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.mlp = MLP(cfg)
        self.hook_mlp_out = HookPoint()  # [batch, pos, d_model]
        self.hook_resid_post = HookPoint()  # [batch, pos, d_model]

    def forward(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        self_bias: torch.Tensor,
        cross_bias: torch.Tensor | None,
        attn_impl: AttnImpl = "explicit",
    ) -> torch.Tensor:
        """Args: y ``(B, T, D)``, memory ``(B, S, D)``, the two additive masks. Returns ``(B, T, D)``."""
        y = self.hook_resid_pre(y)  # (B, T, D)
        y = self.hook_resid_mid(y + self.hook_attn_out(self.attn(self.ln1(y), self_bias, None, attn_impl)))
        cross = self.cross_attn(self.ln2(y), memory, cross_bias, attn_impl)  # (B, T, D)
        y = self.hook_resid_mid_cross(y + self.hook_cross_attn_out(cross))  # (B, T, D)
        y = y + self.hook_mlp_out(self.mlp(self.ln3(y)))  # (B, T, D)
        return self.hook_resid_post(y)  # (B, T, D)


class _Stack(nn.Module):
    """What :class:`Encoder` and :class:`Decoder` share: token embedding + position vectors, ``n_layers`` blocks of
    type ``block``, a final LayerNorm."""

    def __init__(self, vocab: int, max_len: int, cfg: Seq2SeqConfig, block: type[nn.Module]) -> None:
        super().__init__()
        self.pos_kind = cfg.pos_encoding
        self.embed = nn.Embedding(vocab, cfg.d_model)
        self.hook_embed = HookPoint()  # [batch, pos, d_model]
        if cfg.pos_encoding == "learned":
            self.pos_embed = nn.Embedding(max_len, cfg.d_model)
        else:
            self.register_buffer("pos_table", sinusoidal(max_len, cfg.d_model), persistent=False)
        self.hook_pos_embed = HookPoint()  # [batch, pos, d_model]
        self.blocks = nn.ModuleList(block(cfg.layer_config()) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model)

    def position_vectors(self, n_pos: int) -> torch.Tensor:
        """``[n_pos, d_model]``: the vectors added to the embeddings of positions ``0 … n_pos − 1``."""
        return self.pos_embed.weight[:n_pos] if self.pos_kind == "learned" else self.pos_table[:n_pos]

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` ids → ``(B, T, D)`` token embedding + position vector."""
        B, T = ids.shape
        x = self.hook_embed(self.embed(ids))  # (B, T, D)
        return x + self.hook_pos_embed(self.position_vectors(T).expand(B, T, -1))  # (B, T, D)


class Encoder(_Stack):
    """Source embedding and ``n_layers`` non-causal :class:`Block`s, then a final LayerNorm."""

    def __init__(self, cfg: Seq2SeqConfig) -> None:
        super().__init__(cfg.src_vocab, cfg.max_src, cfg, Block)

    def forward(self, src: torch.Tensor, bias: torch.Tensor | None, attn_impl: AttnImpl) -> torch.Tensor:
        """Args: src ``(B, S)``, bias ``(B, 1, 1, S)`` padding mask or None. Returns memory ``(B, S, D)``."""
        x = self.embed_tokens(src)  # (B, S, D)
        for block in self.blocks:
            x = block(x, bias, None, attn_impl)  # (B, S, D)
        return self.ln_final(x)  # (B, S, D)


class Decoder(_Stack):
    """Target embedding and ``n_layers`` :class:`DecoderBlock`s, then a final LayerNorm."""

    def __init__(self, cfg: Seq2SeqConfig) -> None:
        super().__init__(cfg.tgt_vocab, cfg.max_tgt, cfg, DecoderBlock)

    def forward(
        self, tgt_in: torch.Tensor, memory: torch.Tensor, cross_bias: torch.Tensor | None, attn_impl: AttnImpl
    ) -> torch.Tensor:
        """Args: tgt_in ``(B, T)``, memory ``(B, S, D)``, cross_bias ``(B, 1, 1, S)`` or None. Returns ``(B, T, D)``."""
        y = self.embed_tokens(tgt_in)  # (B, T, D)
        self_bias = causal_bias(tgt_in.shape[1], y.dtype, y.device)  # (1, 1, T, T)
        for block in self.blocks:
            y = block(y, memory, self_bias, cross_bias, attn_impl)  # (B, T, D)
        return self.ln_final(y)  # (B, T, D)


class Seq2SeqTransformer(nn.Module):
    """Encoder, decoder and the target unembedding. Weights ~ normal(0, 0.02), biases 0.

    Example:
        >>> model = Seq2SeqTransformer(Seq2SeqConfig(src_vocab=40, tgt_vocab=50))
        >>> logits = model(torch.tensor([[7, 8, 2]]), torch.tensor([[1, 9]]))  # (1, 2, 50)
        >>> model.greedy_decode([7, 8, 2], max_len=10)  # ids after <bos>, ending with <eos> if produced
    """

    def __init__(self, cfg: Seq2SeqConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.unembed = nn.Linear(cfg.d_model, cfg.tgt_vocab, bias=False)
        self.apply(init_weights)

    def _check(self, ids: torch.Tensor, limit: int, what: str) -> None:
        if ids.ndim != 2 or ids.shape[1] == 0:
            raise ValueError(f"{what} must be (batch, positions) with at least one position, got {tuple(ids.shape)}")
        if ids.shape[1] > limit:
            raise ValueError(f"{what} has {ids.shape[1]} tokens; this model takes at most {limit}")

    def encode(
        self, src: torch.Tensor, src_padding: torch.Tensor | None = None, attn_impl: AttnImpl = "explicit"
    ) -> torch.Tensor:
        """The encoder output ``(B, S, D)`` for source ids ``(B, S)`` (``src_padding``: True = padding)."""
        self._check(src, self.cfg.max_src, "the source")
        bias = None if src_padding is None else padding_bias(src_padding, self.unembed.weight.dtype)
        return self.encoder(src, bias, attn_impl)

    def decode(
        self,
        memory: torch.Tensor,
        tgt_in: torch.Tensor,
        src_padding: torch.Tensor | None = None,
        attn_impl: AttnImpl = "explicit",
    ) -> torch.Tensor:
        """Next-token logits ``(B, T, tgt_vocab)`` for decoder inputs ``(B, T)`` given the encoder output."""
        self._check(tgt_in, self.cfg.max_tgt, "the decoder input")
        bias = None if src_padding is None else padding_bias(src_padding, memory.dtype)
        return self.unembed(self.decoder(tgt_in, memory, bias, attn_impl))  # (B, T, V)

    def forward(
        self,
        src: torch.Tensor,
        tgt_in: torch.Tensor,
        src_padding: torch.Tensor | None = None,
        *,
        attn_impl: AttnImpl = "explicit",
    ) -> torch.Tensor:
        """Teacher-forced logits.

        Args:
            src: ``(B, S)`` source ids.
            tgt_in: ``(B, T)`` decoder inputs (``<bos>`` + target so far); position t predicts token t+1.
            src_padding: ``(B, S)`` bool, True where the source is padding (no query attends to it);
                None = no padding.
            attn_impl: ``"explicit"`` (every hook fires) or ``"sdpa"`` (fused kernel; the
                scores / pattern hooks do not fire).

        Returns:
            logits ``(B, T, tgt_vocab)``.
        """
        if attn_impl not in get_args(AttnImpl):
            raise ValueError(f"attn_impl must be 'explicit' or 'sdpa', got {attn_impl!r}")
        if src_padding is not None and tuple(src_padding.shape) != tuple(src.shape):
            raise ValueError(f"src_padding must have shape {tuple(src.shape)}, got {tuple(src_padding.shape)}")
        memory = self.encode(src, src_padding, attn_impl)  # (B, S, D)
        return self.decode(memory, tgt_in, src_padding, attn_impl)  # (B, T, V)

    @torch.no_grad()
    def greedy_decode_batch(
        self,
        src: torch.Tensor,
        src_padding: torch.Tensor | None = None,
        max_len: int | None = None,
        attn_impl: AttnImpl = "sdpa",
    ) -> list[list[int]]:
        """Greedy translations of a batch: argmax token by token until ``<eos>`` or ``max_len`` tokens.

        Returns:
            One list per source: the generated ids (no ``<bos>``), ending with ``<eos>`` when one was
            produced within ``max_len`` (default and upper bound ``max_tgt − 1``).
        """
        limit = self.cfg.max_tgt - 1 if max_len is None else min(int(max_len), self.cfg.max_tgt - 1)
        memory = self.encode(src, src_padding, attn_impl)  # (B, S, D)
        B = src.shape[0]
        ids = torch.full((B, 1), BOS_ID, dtype=torch.long, device=src.device)  # (B, 1)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
        for _ in range(limit):  # the whole prefix is re-run each step: tiny models, short outputs
            nxt = self.decode(memory, ids, src_padding, attn_impl)[:, -1].argmax(-1)  # (B,)
            ids = torch.cat([ids, nxt[:, None]], dim=1)  # (B, t + 1)
            done |= nxt == EOS_ID
            if bool(done.all()):
                break
        out = []
        for row in ids[:, 1:].tolist():
            out.append(row[: row.index(EOS_ID) + 1] if EOS_ID in row else row)
        return out

    def greedy_decode(self, src_ids: Sequence[int], max_len: int | None = None) -> list[int]:
        """Greedy translation of one source (ids, no padding); see :meth:`greedy_decode_batch`."""
        device = self.unembed.weight.device
        return self.greedy_decode_batch(torch.tensor([list(src_ids)], device=device), None, max_len)[0]


def build_from_config(config: Mapping[str, Any]) -> Seq2SeqTransformer:
    """Checkpoint builder of kind ``"seq2seq"`` (``engine.families``): ``model_config`` dict → fresh module."""
    return Seq2SeqTransformer(Seq2SeqConfig.from_dict(config))
