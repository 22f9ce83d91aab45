"""Our own small transformer, written to be read top to bottom and looked inside.

One file, four modules, nanoGPT-style: :class:`Attention`, :class:`MLP`, :class:`Block`,
:class:`Transformer`. The same weights run as a decoder (causal mask, GPT) or as an encoder (no mask,
BERT-like): the mask is a per-call argument, never a config edit.

Every step worth looking at passes through an identity :class:`~engine.capture.HookPoint` whose
module path is its public name, in TransformerLens's vocabulary (``blocks.0.attn.hook_pattern``).
Names new to TL say so. The names, in module order (``{L}`` = 0 … n_layers − 1)::

    hook_embed                         [batch, pos, d_model]   token embeddings E[tokens]
    hook_pos_embed                     [batch, pos, d_model]   learned / sinusoidal only (absent otherwise)
    blocks.{L}.hook_resid_pre          [batch, pos, d_model]
    blocks.{L}.attn.hook_q|k|v         [batch, pos, head, d_head]   before rotary
    blocks.{L}.attn.hook_rot_q|rot_k   [batch, pos, head, d_head]   RoPE only, after rotary
    blocks.{L}.attn.hook_scores_raw    [batch, head, q_pos, k_pos]  Q Kᵀ (new name)
    blocks.{L}.attn.hook_attn_scores   [batch, head, q_pos, k_pos]  Q Kᵀ/√dh + ALiBi + mask (−inf)
    blocks.{L}.attn.hook_pattern       [batch, head, q_pos, k_pos]  softmax
    blocks.{L}.attn.hook_z             [batch, pos, head, d_head]   pattern V
    blocks.{L}.hook_attn_out           [batch, pos, d_model]
    blocks.{L}.hook_resid_mid          [batch, pos, d_model]        between attention and MLP
    blocks.{L}.mlp.hook_pre|hook_post  [batch, pos, d_mlp]          before / after the GELU
    blocks.{L}.hook_mlp_out            [batch, pos, d_model]
    blocks.{L}.hook_resid_post         [batch, pos, d_model]

An attention-only model (``attn_only=True``) has no ``ln2``, ``mlp``, ``hook_resid_mid`` or MLP hooks:
its blocks are ``x = x + Attn(LN1(x))`` (post-norm: ``x = LN1(x + Attn(x))``).

With ``attn_impl="sdpa"`` the three ``[batch, head, q_pos, k_pos]`` hooks do not fire (the fused
kernel never materialises them); every other hook does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

import torch
import torch.nn.functional as F
from torch import nn

from engine.capture import HookPoint
from engine.families.own import JsonConfig
from engine.families.transformer.positional import alibi_bias, alibi_slopes, apply_rope, rope_cos_sin, sinusoidal

PosEncoding = Literal["sinusoidal", "learned", "rope", "alibi", "none"]
NormPlacement = Literal["pre", "post"]
AttnImpl = Literal["explicit", "sdpa"]
POS_ENCODINGS: tuple[str, ...] = get_args(PosEncoding)
RopeAngles = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class TransformerConfig(JsonConfig):
    """Hyper-parameters of :class:`Transformer`; plain data, JSON round-trip via ``to_dict``/``from_dict``."""

    vocab_size: int = 64  # number of token ids V
    d_model: int = 64  # width of the residual stream D
    n_layers: int = 2  # number of blocks L
    n_heads: int = 4  # attention heads per layer H; d_head = D / H
    d_mlp: int = 256  # hidden width of each MLP (4·D is the usual choice)
    max_len: int = 128  # longest sequence the model accepts (rows of the position tables)
    pos_encoding: PosEncoding = "learned"  # how the model knows word order
    causal: bool = True  # default mask: True = decoder (GPT), False = encoder (BERT); overridable per call
    norm: NormPlacement = "pre"  # LayerNorm before each sublayer (GPT-2) or after the residual add (2017)
    ln_eps: float = 1e-5  # LayerNorm epsilon
    tie_embeddings: bool = False  # the unembedding reuses the token-embedding matrix
    attn_only: bool = False  # blocks without MLPs (Olsson et al.'s attention-only models); d_mlp is unused

    def __post_init__(self) -> None:
        problems = self.positive_int_problems(("vocab_size", "d_model", "n_layers", "n_heads", "d_mlp", "max_len"))
        if not problems and self.d_model % self.n_heads:
            problems.append(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.pos_encoding not in POS_ENCODINGS:
            problems.append(f"pos_encoding must be one of {list(POS_ENCODINGS)}, got {self.pos_encoding!r}")
        elif self.pos_encoding == "rope" and not problems and self.d_head % 2:
            problems.append(f"rope rotates pairs of coordinates: d_head ({self.d_head}) must be even")
        if self.norm not in get_args(NormPlacement):
            problems.append(f"norm must be 'pre' or 'post', got {self.norm!r}")
        if isinstance(self.ln_eps, bool) or not isinstance(self.ln_eps, (int, float)) or self.ln_eps <= 0:
            problems.append(f"ln_eps must be a positive number, got {self.ln_eps!r}")
        for name in ("causal", "tie_embeddings", "attn_only"):
            if not isinstance(getattr(self, name), bool):
                problems.append(f"{name} must be True or False, got {getattr(self, name)!r}")
        self.raise_problems(problems)

    @property
    def d_head(self) -> int:
        """Width of one head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads


def layers_config(shape: Any, max_len: int) -> TransformerConfig:
    """The config another family's :class:`Attention`, :class:`MLP` and :class:`Block` modules are built from:
    ``shape``'s ``d_model``, ``n_layers``, ``n_heads`` and ``d_mlp``, pre-norm, no positions and no mask of their
    own (the family adds its position vectors and passes its masks per call)."""
    dims = {name: getattr(shape, name) for name in ("d_model", "n_layers", "n_heads", "d_mlp")}
    return TransformerConfig(vocab_size=1, max_len=max_len, pos_encoding="none", causal=False, norm="pre", **dims)


class Attention(nn.Module):
    """Multi-head self-attention, one named step per line of the formula::

    Q = x W_Q,  K = x W_K,  V = x W_V        split into H heads of d_head
    Q, K = rope(Q), rope(K)                  RoPE models only
    scores = Q Kᵀ / √d_head + bias + mask    bias: ALiBi (−m_h·|i−j|); mask: 0 or −∞
    pattern = softmax(scores)                a row with every key masked gets all zeros
    z = pattern V;   out = concat_h(z) W_O
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.n_heads, self.d_head = cfg.n_heads, cfg.d_head
        self.scale = 1.0 / math.sqrt(cfg.d_head)
        self.rotary = cfg.pos_encoding == "rope"
        self.w_q = nn.Linear(cfg.d_model, cfg.d_model)
        self.w_k = nn.Linear(cfg.d_model, cfg.d_model)
        self.w_v = nn.Linear(cfg.d_model, cfg.d_model)
        self.w_o = nn.Linear(cfg.d_model, cfg.d_model)
        self.hook_q = HookPoint()  # [batch, pos, head, d_head]
        self.hook_k = HookPoint()  # [batch, pos, head, d_head]
        self.hook_v = HookPoint()  # [batch, pos, head, d_head]
        if self.rotary:
            self.hook_rot_q = HookPoint()  # [batch, pos, head, d_head]
            self.hook_rot_k = HookPoint()  # [batch, pos, head, d_head]
        self.hook_scores_raw = HookPoint()  # [batch, head, query_pos, key_pos]
        self.hook_attn_scores = HookPoint()  # [batch, head, query_pos, key_pos]
        self.hook_pattern = HookPoint()  # [batch, head, query_pos, key_pos]
        self.hook_z = HookPoint()  # [batch, pos, head, d_head]

    def forward(
        self,
        x: torch.Tensor,
        bias: torch.Tensor | None = None,
        rope: RopeAngles | None = None,
        attn_impl: AttnImpl = "explicit",
    ) -> torch.Tensor:
        """Attend from every position to every (allowed) position.

        Args:
            x: ``(B, T, D)`` the (normalised) residual stream.
            bias: additive ``(B|1, H|1, T, T)``: ALiBi bias + mask (0 / −∞), or None.
            rope: ``(cos, sin)``, each ``(T, 1, dh/2)``; required for RoPE models.
            attn_impl: ``"explicit"`` (scores / pattern hooks fire) or ``"sdpa"`` (fused kernel).

        Returns:
            ``(B, T, D)``.
        """
        B, T, D = x.shape
        H, dh = self.n_heads, self.d_head
        # Step 1: project to queries, keys and values, and split the heads
        q = self.hook_q(self.w_q(x).view(B, T, H, dh))  # (B, T, H, dh)
        k = self.hook_k(self.w_k(x).view(B, T, H, dh))  # (B, T, H, dh)
        v = self.hook_v(self.w_v(x).view(B, T, H, dh))  # (B, T, H, dh)
        # Step 2: rotate queries and keys by their position (RoPE only)
        if self.rotary:
            if rope is None:
                raise ValueError("a RoPE attention layer needs the rotary angles (cos, sin)")
            cos, sin = rope  # (T, 1, dh/2) each
            q = self.hook_rot_q(apply_rope(q, cos, sin))  # (B, T, H, dh)
            k = self.hook_rot_k(apply_rope(k, cos, sin))  # (B, T, H, dh)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, T, dh)
        # Steps 3-5: scores, mask, softmax, weighted sum of values
        if attn_impl == "sdpa":
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=self.scale)  # (B, H, T, dh)
        else:
            z = self.attend(q, k, v, bias)  # (B, H, T, dh)
        z = self.hook_z(z.transpose(1, 2))  # (B, T, H, dh)
        # Step 6: concatenate the heads and mix them
        return self.w_o(z.reshape(B, T, D))  # (B, T, D)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """The explicit attention of one layer; q, k, v ``(B, H, T, dh)``, returns z ``(B, H, T, dh)``."""
        # Step 3: raw scores, how well each query matches each key
        scores = q @ k.transpose(-2, -1)  # (B, H, T, dh) @ (B, H, dh, T) -> (B, H, T, T)
        scores = self.hook_scores_raw(scores)  # (B, H, T, T)
        # Step 4: scale by 1/√dh, add the ALiBi bias and the mask (−∞ where blocked)
        scores = scores * self.scale  # (B, H, T, T)
        if bias is not None:
            scores = scores + bias  # (B, H, T, T) + (B|1, H|1, T, T)
        scores = self.hook_attn_scores(scores)  # (B, H, T, T)
        # Step 5: softmax over the keys, then the pattern-weighted sum of the values
        pattern = self.hook_pattern(safe_softmax(scores))  # (B, H, T, T)
        return pattern @ v  # (B, H, T, T) @ (B, H, T, dh) -> (B, H, T, dh)


def safe_softmax(scores: torch.Tensor) -> torch.Tensor:
    """``softmax(scores, dim=-1)``, except that a row whose every entry is −∞ gives zeros, not NaN.

    The row is replaced *before* the softmax, so gradients stay finite too (a ``where`` after a NaN
    softmax would still send NaN gradients back).

    Args:
        scores: ``[..., k_pos]`` scores with −∞ where blocked.

    Returns:
        Weights shaped like ``scores``; rows sum to 1, or to 0 where every key is blocked.
    """
    all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)  # (..., 1)
    pattern = torch.softmax(scores.masked_fill(all_blocked, 0.0), dim=-1)  # (..., k_pos)
    return pattern.masked_fill(all_blocked, 0.0)


class MLP(nn.Module):
    """The position-wise feed-forward network: ``MLP(x) = GELU(x W_in + b_in) W_out + b_out``."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.fc_in = nn.Linear(cfg.d_model, cfg.d_mlp)
        self.hook_pre = HookPoint()  # [batch, pos, d_mlp]
        self.hook_post = HookPoint()  # [batch, pos, d_mlp]
        self.fc_out = nn.Linear(cfg.d_mlp, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Args: x ``(B, T, D)``. Returns ``(B, T, D)``."""
        pre = self.hook_pre(self.fc_in(x))  # (B, T, d_mlp)
        post = self.hook_post(F.gelu(pre))  # (B, T, d_mlp)
        return self.fc_out(post)  # (B, T, D)


class Block(nn.Module):
    """One transformer layer; where the LayerNorms sit depends on ``cfg.norm``::

        pre-norm  (GPT-2):       x = x + Attn(LN1(x));   x = x + MLP(LN2(x))
        post-norm (2017, BERT):  x = LN1(x + Attn(x));   x = LN2(x + MLP(x))

    With ``cfg.attn_only`` the MLP half is absent (no ``ln2``, no ``mlp``).
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.pre_norm = cfg.norm == "pre"
        self.attn_only = cfg.attn_only
        self.hook_resid_pre = HookPoint()  # [batch, pos, d_model]
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.attn = Attention(cfg)
        self.hook_attn_out = HookPoint()  # [batch, pos, d_model]
        if not cfg.attn_only:
            self.hook_resid_mid = HookPoint()  # [batch, pos, d_model]
            self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
            self.mlp = MLP(cfg)
            self.hook_mlp_out = HookPoint()  # [batch, pos, d_model]
        self.hook_resid_post = HookPoint()  # [batch, pos, d_model]

    def forward(
        self,
        x: torch.Tensor,
        bias: torch.Tensor | None = None,
        rope: RopeAngles | None = None,
        attn_impl: AttnImpl = "explicit",
    ) -> torch.Tensor:
        """Args: x ``(B, T, D)``, plus what :meth:`Attention.forward` takes. Returns ``(B, T, D)``."""
        x = self.hook_resid_pre(x)  # (B, T, D)
        attn_in = self.ln1(x) if self.pre_norm else x  # (B, T, D)
        attn_out = self.hook_attn_out(self.attn(attn_in, bias, rope, attn_impl))  # (B, T, D)
        x = x + attn_out if self.pre_norm else self.ln1(x + attn_out)  # (B, T, D)
        if self.attn_only:
            return self.hook_resid_post(x)  # (B, T, D)
        x = self.hook_resid_mid(x)  # (B, T, D)
        mlp_in = self.ln2(x) if self.pre_norm else x  # (B, T, D)
        mlp_out = self.hook_mlp_out(self.mlp(mlp_in))  # (B, T, D)
        x = x + mlp_out if self.pre_norm else self.ln2(x + mlp_out)  # (B, T, D)
        return self.hook_resid_post(x)  # (B, T, D)


def init_weights(module: nn.Module) -> None:
    """GPT-2's initialisation, for ``module.apply``: weights ~ normal(0, 0.02), biases 0 (Linear, Embedding)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class Transformer(nn.Module):
    """Embedding, ``n_layers`` blocks and a language-model head::

        x_0 = E[tokens] + P[pos]          P: learned or sinusoidal table; nothing for rope / alibi / none
        x_{l+1} = Block_l(x_l)            with the causal mask or not, chosen per call
        logits = LN_f(x_L) W_U            LN_f for pre-norm only (post-norm blocks end normalised)

    Initialisation is normal(0, 0.02) for weights and zeros for biases; seed with
    ``torch.manual_seed`` before building for reproducible weights.

    Example:
        >>> model = Transformer(TransformerConfig(pos_encoding="rope"))
        >>> logits = model(torch.tensor([[1, 2, 3]]), causal=False)  # (1, 3, 64)
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.hook_embed = HookPoint()  # [batch, pos, d_model]
        if cfg.pos_encoding == "learned":
            self.pos_embed = nn.Embedding(cfg.max_len, cfg.d_model)
        elif cfg.pos_encoding == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal(cfg.max_len, cfg.d_model), persistent=False)
        if cfg.pos_encoding in ("learned", "sinusoidal"):
            self.hook_pos_embed = HookPoint()  # [batch, pos, d_model]
        elif cfg.pos_encoding == "rope":
            cos, sin = rope_cos_sin(cfg.max_len, cfg.d_head)  # (max_len, dh/2) each
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        elif cfg.pos_encoding == "alibi":
            self.register_buffer("alibi_slopes", alibi_slopes(cfg.n_heads), persistent=False)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps) if cfg.norm == "pre" else nn.Identity()
        self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(init_weights)
        if cfg.tie_embeddings:
            self.unembed.weight = self.embed.weight

    def position_vectors(self, n_pos: int) -> torch.Tensor | None:
        """The vectors added to the embeddings of positions ``0 … n_pos − 1``.

        Args:
            n_pos: number of positions (at most ``cfg.max_len``).

        Returns:
            ``[n_pos, d_model]`` for learned and sinusoidal encodings; None for rope, alibi and none
            (they add nothing to the embeddings).
        """
        if self.cfg.pos_encoding == "learned":
            return self.pos_embed.weight[:n_pos]  # (T, D)
        if self.cfg.pos_encoding == "sinusoidal":
            return self.pos_table[:n_pos]  # (T, D)
        return None

    def attention_bias(self, n_pos: int, causal: bool, key_padding: torch.Tensor | None = None) -> torch.Tensor | None:
        """The additive term of the scores: ALiBi bias plus the mask (0 where allowed, −∞ where blocked).

        Args:
            n_pos: sequence length T.
            causal: block keys after the query (``j > i``).
            key_padding: ``(B, T)`` bool, True where a key is padding (blocked for every query).

        Returns:
            float ``(B|1, H|1, T, T)``, or None when nothing is added (no mask, no ALiBi).
        """
        device, dtype = self.embed.weight.device, self.embed.weight.dtype
        blocked = torch.zeros(1, 1, n_pos, n_pos, dtype=torch.bool, device=device)  # (1, 1, T, T)
        if causal:
            blocked = blocked | torch.ones_like(blocked).triu(diagonal=1)  # (1, 1, T, T), True above diagonal
        if key_padding is not None:
            padding = key_padding.to(device=device, dtype=torch.bool)[:, None, None, :]  # (B, 1, 1, T)
            blocked = blocked | padding  # (B, 1, T, T)
        bias = None
        if causal or key_padding is not None:
            bias = torch.zeros(blocked.shape, dtype=dtype, device=device).masked_fill(blocked, float("-inf"))
        if self.cfg.pos_encoding == "alibi":
            alibi = alibi_bias(self.alibi_slopes, n_pos, n_pos).to(dtype)[None]  # (1, H, T, T)
            bias = alibi if bias is None else alibi + bias  # (B|1, H, T, T)
        return bias

    def forward(
        self,
        tokens: torch.Tensor,
        *,
        causal: bool | None = None,
        key_padding: torch.Tensor | None = None,
        attn_impl: AttnImpl = "explicit",
    ) -> torch.Tensor:
        """Run the model.

        Args:
            tokens: ``(B, T)`` token ids, ``T <= cfg.max_len``.
            causal: apply the causal mask; None uses ``cfg.causal``. The config is never changed.
            key_padding: ``(B, T)`` bool, True where a token is padding (no query attends to it).
            attn_impl: ``"explicit"`` (every hook fires) or ``"sdpa"`` (torch's fused
                ``scaled_dot_product_attention``; the scores and pattern hooks do not fire).

        Returns:
            logits ``(B, T, vocab_size)``.
        """
        B, T = tokens.shape
        if T > self.cfg.max_len:
            raise ValueError(f"{T} tokens is longer than this model's max_len ({self.cfg.max_len})")
        if attn_impl not in get_args(AttnImpl):
            raise ValueError(f"attn_impl must be 'explicit' or 'sdpa', got {attn_impl!r}")
        if key_padding is not None and tuple(key_padding.shape) != (B, T):
            raise ValueError(f"key_padding must have shape {(B, T)}, got {tuple(key_padding.shape)}")
        causal = self.cfg.causal if causal is None else causal
        # Step 1: embed the tokens and add the position vectors (learned / sinusoidal)
        x = self.hook_embed(self.embed(tokens))  # (B, T, D)
        pos = self.position_vectors(T)  # (T, D) or None
        if pos is not None:
            x = x + self.hook_pos_embed(pos.expand(B, T, -1))  # (B, T, D)
        # Step 2: what every attention layer shares: rotary angles and the additive bias + mask
        rope = None
        if self.cfg.pos_encoding == "rope":
            rope = (self.rope_cos[:T, None, :], self.rope_sin[:T, None, :])  # (T, 1, dh/2) each
        bias = self.attention_bias(T, causal, key_padding)  # (B|1, H|1, T, T) or None
        # Step 3: the blocks
        for block in self.blocks:
            x = block(x, bias, rope, attn_impl)  # (B, T, D)
        # Step 4: final norm and unembedding
        return self.unembed(self.ln_final(x))  # (B, T, D) @ (D, V) -> (B, T, V)


def build_model(config: Mapping[str, Any]) -> Transformer:
    """Checkpoint builder of kind ``"transformer"`` (``engine.families``): ``model_config`` dict → fresh module."""
    return Transformer(TransformerConfig.from_dict(config))
