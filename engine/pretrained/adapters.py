"""Adapters that capture Q, K and V from Hugging Face text models.

BERT-family models and GPT-2 are read with forward hooks (below); decoders whose attention goes
through ``transformers.AttentionInterface`` (Llama, Mistral, Qwen2/3, GPT-NeoX, Phi-3, Gemma 1–3) are
read by :class:`InterfaceAdapter` through one registered attention function
(:mod:`engine.pretrained.interface`).

The model runs on its own default (fast, SDPA) attention path; hooks on the Q/K/V projections
record ``[batch, pos, heads·d_head]`` activations, and the returned ``AttentionTrace`` computes
scores and patterns lazily for the layer and head asked for. What each family needs to say:

- where its Q, K, V projections are (one fused module for GPT-2's ``c_attn``),
- the factor it applies to QKᵀ (GPT-2 has two config switches for it),
- its position-embedding module (the vectors added to the input),
- whether it masks future tokens by itself (:meth:`HFTextAdapter.default_causal`: GPT-2 does, a
  BERT-family model does when its config says ``is_decoder=True``), and whether its tokenizer is
  byte-level.

A causal toggle never edits the shared model's config. Turning a self-masking model's mask off
passes ``is_causal=False`` to ``forward`` (transformers 5.23 reads it when it builds the mask and
hands it to the attention function; no mask tensor, so 16k-token inputs are fine). Turning the mask
on for a model that does not mask by itself passes a per-call 4D additive float mask ``[1, 1, n, n]``
(0 where allowed, the dtype's minimum where blocked); that is n² floats, so it is refused above
:data:`MAX_MASK_TOKENS` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from engine.capture import capture
from engine.model import Model
from engine.text import byte_level_display, check_max_tokens, clean_input, clean_token, length_notices, special_flags
from engine.types import AttentionTrace, EmptyInputError, EngineError, ModelUnavailableError, Tokens

#: longest input a causal toggle may build its ``[1, 1, n, n]`` float mask for (64 MB in float32)
MAX_MASK_TOKENS = 4096


def _heads(x: torch.Tensor, n_heads: int) -> np.ndarray:
    """``[1, T, H·dh]`` → ``[H, T, dh]`` float32 numpy."""
    _, t, d = x.shape
    return x[0].reshape(t, n_heads, d // n_heads).transpose(0, 1).float().cpu().numpy()  # (H, T, dh)


@dataclass(frozen=True)
class HFTextAdapter:
    """Tracing for one family of Hugging Face text models.

    Attributes:
        family: "encoder" or "decoder".
        layers_path: dotted path from the base model to its list of layers.
        qkv: names of the Q, K, V projections inside a layer, or a single fused name.
        pos_path: dotted path to the position-embedding module, or None.
        byte_level: display tokens by decoding ids (byte-level BPE), not by cleaning pieces.
        reads_is_decoder: the family's model builds a causal mask when its config says
            ``is_decoder=True`` (BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA; not DistilBERT).
    """

    family: str
    layers_path: str
    qkv: tuple[str, ...]
    pos_path: str | None
    byte_level: bool = False
    reads_is_decoder: bool = False

    # ---- model structure ---------------------------------------------------------------------
    def base(self, module: nn.Module) -> nn.Module:
        """The base model below any task head (``GPT2LMHeadModel.transformer``)."""
        return getattr(module, module.base_model_prefix, module) if hasattr(module, "base_model_prefix") else module

    def layers(self, module: nn.Module) -> list[nn.Module]:
        obj = self.base(module)
        for part in self.layers_path.split("."):
            obj = getattr(obj, part)
        return list(obj)

    def n_heads(self, config) -> int:
        for name in ("num_attention_heads", "n_head", "n_heads"):
            if hasattr(config, name):
                return int(getattr(config, name))
        raise ModelUnavailableError("cannot find the number of attention heads in the model config")

    def default_causal(self, config) -> bool:
        """Whether the model masks future tokens by itself: what ``engine.trace(..., causal=None)`` does.

        Read from the modelling code of transformers 5.23: GPT-2 calls ``create_causal_mask``; a
        BERT-family model calls it when ``config.is_decoder`` is True and ``create_bidirectional_mask``
        otherwise; ``create_causal_mask`` falls back to a bidirectional mask when the config sets
        ``is_causal=False``. (A BERT-family *encoder* whose config sets ``is_causal=True`` is causal on
        the SDPA path only, because transformers then hands ``is_causal=True`` to SDPA; its eager path,
        which ``output_attentions`` uses, is not, so it counts as bidirectional here and the trace's
        forward pass is run bidirectional to match.)
        """
        says = getattr(config, "is_causal", None)
        if self.family == "decoder":
            return says is not False
        return self.reads_is_decoder and bool(getattr(config, "is_decoder", False)) and says is not False

    def _may_mask_itself(self, config) -> bool:
        """True when some attention path of the model could apply a causal mask with no mask passed."""
        return (
            self.family == "decoder"
            or (self.reads_is_decoder and bool(getattr(config, "is_decoder", False)))
            or bool(getattr(config, "is_causal", False))
        )

    def scales(self, config, n_layers: int, d_head: int) -> tuple[float, ...]:
        """Factor applied to QKᵀ in each layer."""
        if self.family == "decoder" and getattr(config, "model_type", "") == "gpt2":
            base = 1.0 / d_head**0.5 if getattr(config, "scale_attn_weights", True) else 1.0
            by_layer = getattr(config, "scale_attn_by_inverse_layer_idx", False)
            return tuple(base / (i + 1) if by_layer else base for i in range(n_layers))
        return tuple(1.0 / d_head**0.5 for _ in range(n_layers))

    def targets(self, module: nn.Module) -> dict[str, nn.Module]:
        """``{activation name: module}`` to hook, named in TransformerLens's vocabulary."""
        out: dict[str, nn.Module] = {}
        for i, layer in enumerate(self.layers(module)):
            mods = dict(layer.named_modules())
            if len(self.qkv) == 1:
                out[f"blocks.{i}.attn.hook_qkv"] = mods[self.qkv[0]]
            else:
                for short, name in zip(("q", "k", "v"), self.qkv):
                    out[f"blocks.{i}.attn.hook_{short}"] = mods[name]
        if self.pos_path is not None:
            obj = self.base(module)
            for part in self.pos_path.split("."):
                obj = getattr(obj, part)
            out["hook_pos_embed"] = obj
        return out

    # ---- tokens ------------------------------------------------------------------------------
    def tokenize(self, tokenizer, text: str, max_tokens: int) -> tuple[list[int], Tokens, int]:
        """Token ids (cut to ``max_tokens``), display tokens, and the uncut token count."""
        full = tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        n_total = len(full)
        if n_total > max_tokens:
            ids = tokenizer(text, add_special_tokens=True, truncation=True, max_length=max_tokens)["input_ids"]
        else:
            ids = list(full)
        special = special_flags(tokenizer, ids)  # [UNK] stands for the user's text: not special
        if all(special):
            raise EmptyInputError("The text has no tokens this model can read (only special tokens).")
        show = byte_level_display if self.byte_level else clean_token
        strings = tuple(p if s else show(p) for p, s in zip(tokenizer.convert_ids_to_tokens(ids), special))
        return list(ids), Tokens(strings=strings, ids=tuple(ids), special=special), n_total

    def prepare(self, model: Model, text: str, max_tokens: int) -> tuple[list[int], Tokens, int, int, int]:
        """Clean, check and tokenize ``text`` for ``model``: ``(ids, tokens, uncut count, max_tokens as
        asked, characters cut)``; what every trace of a Hugging Face text model starts with."""
        text, cut_chars = clean_input(text)
        requested = check_max_tokens(max_tokens, model.tokenizer.num_special_tokens_to_add() + 1)
        ids, tokens, n_total = self.tokenize(model.tokenizer, text, min(requested, model.max_positions))
        return ids, tokens, n_total, requested, cut_chars

    # ---- causal toggle -----------------------------------------------------------------------
    def causal_kwargs(self, module: nn.Module, n: int, causal: bool, device: torch.device, *, default: bool) -> dict:
        """Keyword arguments for ``forward`` that give ``n`` tokens the mask ``causal`` asks for.

        Args:
            module: the model (its config says whether it masks by itself).
            n: the number of tokens.
            causal: the mask wanted.
            device: where the mask tensor goes.
            default: :meth:`default_causal` of the model (``Model.default_causal``).

        Returns:
            ``{}`` when the model does what is asked by itself; ``{"is_causal": False}`` to turn a
            self-masking model's mask off (transformers reads it when it builds the mask and in its
            SDPA attention: no mask tensor); otherwise a 4D additive float mask ``[1, 1, n, n]`` (0
            where allowed, the dtype's minimum where blocked), which the model uses as given.

        Raises:
            EngineError: that mask would be needed for more than :data:`MAX_MASK_TOKENS` tokens.
        """
        if not causal:
            return {"is_causal": False} if self._may_mask_itself(module.config) else {}
        if default:
            return {}
        if n > MAX_MASK_TOKENS:
            raise EngineError(
                f"Turning the causal mask on for this model needs an {n}×{n} mask: at most {MAX_MASK_TOKENS} "
                f"tokens, this input has {n}. Use a shorter text or a lower token limit, or keep the model's "
                "own mask setting."
            )
        dtype = next(module.parameters()).dtype
        blocked = torch.ones(n, n, dtype=torch.bool, device=device).triu(1)
        mask = torch.zeros(1, 1, n, n, dtype=dtype, device=device).masked_fill(blocked, torch.finfo(dtype).min)
        return {"attention_mask": mask}

    def generate(self, model: Model, prompt: str, settings, *, max_tokens: int) -> AttentionTrace:
        """``engine.generate``: decoders write, then trace prompt + output (:mod:`engine.pretrained.generate_hf`)."""
        from engine.pretrained.generate_hf import generate

        return generate(self, model, prompt, settings, max_tokens=max_tokens)

    # ---- trace -------------------------------------------------------------------------------
    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> AttentionTrace:
        ids, tokens, n_total, requested, cut_chars = self.prepare(model, text, max_tokens)
        default_causal = bool(model.default_causal)
        causal = default_causal if causal is None else bool(causal)
        n = len(ids)
        config = model.module.config
        n_heads = self.n_heads(config)

        def forward(module: nn.Module, device: torch.device) -> dict[str, torch.Tensor]:
            input_ids = torch.tensor([ids], device=device)
            kwargs = self.causal_kwargs(module, n, causal, device=device, default=default_causal)
            with capture(self.targets(module)) as acts:
                # the base model only: an LM head would build [n, vocab] logits a trace never reads
                self.base(module)(input_ids=input_ids, **kwargs)
            return dict(acts)

        acts, device, notice = model.run(forward)
        notices = length_notices(n_total, n, max_tokens=requested, max_positions=model.max_positions,
                                 cut_chars=cut_chars) + ([notice] if notice else [])  # fmt: skip

        n_layers = len(self.layers(model.module))
        qs, ks, vs = [], [], []
        for i in range(n_layers):
            if len(self.qkv) == 1:
                q, k, v = acts[f"blocks.{i}.attn.hook_qkv"].chunk(3, dim=-1)  # 3 × (1, T, D)
            else:
                q, k, v = (acts[f"blocks.{i}.attn.hook_{s}"] for s in "qkv")
            qs.append(_heads(q, n_heads))
            ks.append(_heads(k, n_heads))
            vs.append(_heads(v, n_heads))
        d_head = qs[0].shape[-1]
        pos = acts.get("hook_pos_embed")
        return AttentionTrace(
            model_id=model.spec.id,
            family=model.spec.family,
            tokens=tokens,
            key_tokens=tokens,
            queries=tuple(qs),
            keys=tuple(ks),
            values=tuple(vs),
            scales=self.scales(config, n_layers, d_head),
            causal=causal,
            pos_encoding=None if pos is None else pos[0].float().cpu().numpy(),
            pos_encoding_kind="learned" if pos is not None else "none",
            truncated=n_total > n,
            n_input_tokens=n_total,
            device=device.type,
            notices=tuple(notices),
        )


BERT_LIKE = HFTextAdapter(
    family="encoder",
    layers_path="encoder.layer",
    qkv=("attention.self.query", "attention.self.key", "attention.self.value"),
    pos_path="embeddings.position_embeddings",
    reads_is_decoder=True,
)
DISTILBERT = HFTextAdapter(
    family="encoder",
    layers_path="transformer.layer",
    qkv=("attention.q_lin", "attention.k_lin", "attention.v_lin"),
    pos_path="embeddings.position_embeddings",
)
GPT2 = HFTextAdapter(family="decoder", layers_path="h", qkv=("attn.c_attn",), pos_path="wpe", byte_level=True)

#: config.model_type → adapter
ADAPTERS: dict[str, HFTextAdapter] = {
    "bert": BERT_LIKE,
    "roberta": BERT_LIKE,
    "xlm-roberta": BERT_LIKE,
    "camembert": BERT_LIKE,
    "electra": BERT_LIKE,
    "distilbert": DISTILBERT,
    "gpt2": GPT2,
}


@dataclass(frozen=True)
class InterfaceAdapter(HFTextAdapter):
    """Tracing for decoder families that call ``transformers.AttentionInterface`` (Llama, Mistral, …).

    The model is loaded with ``attn_implementation="ap_capture"`` (:mod:`engine.pretrained.interface`),
    which records each layer's position-encoded Q, K, V, ``scaling`` and ``sliding_window`` and runs
    transformers' SDPA. Grouped-query key/value heads are repeated to one per query head (head ``h``
    reads key/value head ``h // (H / H_kv)``, as transformers' ``repeat_kv``).
    """

    pos_encoding_kind: str = "rope"
    #: the attention output projection inside a layer (its input is the heads' z, head-major): ablation
    out_proj: str = "self_attn.o_proj"

    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> AttentionTrace:
        from engine.pretrained.interface import recording

        ids, tokens, n_total, requested, cut_chars = self.prepare(model, text, max_tokens)
        default_causal = bool(model.default_causal)
        causal = default_causal if causal is None else bool(causal)
        n = len(ids)

        def forward(module: nn.Module, device: torch.device):
            input_ids = torch.tensor([ids], device=device)
            kwargs = self.causal_kwargs(module, n, causal, device=device, default=default_causal)
            with recording() as rec:
                self.base(module)(input_ids=input_ids, use_cache=False, **kwargs)
            return rec.layers

        layers, device, notice = model.run(forward)
        notices = length_notices(n_total, n, max_tokens=requested, max_positions=model.max_positions,
                                 cut_chars=cut_chars) + ([notice] if notice else [])  # fmt: skip
        n_layers = len(self.layers(model.module))
        if sorted(layers) != list(range(n_layers)):
            raise EngineError(f"captured attention for layers {sorted(layers)}, expected 0–{n_layers - 1}")
        qs, ks, vs, scales, windows, caps = [], [], [], [], [], []
        for i in range(n_layers):
            r = layers[i]
            n_rep = r.query.shape[0] // r.key.shape[0]
            qs.append(r.query)
            ks.append(np.repeat(r.key, n_rep, axis=0) if n_rep > 1 else r.key)
            vs.append(np.repeat(r.value, n_rep, axis=0) if n_rep > 1 else r.value)
            scales.append(r.scaling if r.scaling is not None else 1.0 / r.query.shape[-1] ** 0.5)
            windows.append(r.sliding_window)
            caps.append(r.softcap)
        return AttentionTrace(
            model_id=model.spec.id,
            family=model.spec.family,
            tokens=tokens,
            key_tokens=tokens,
            queries=tuple(qs),
            keys=tuple(ks),
            values=tuple(vs),
            scales=tuple(scales),
            causal=causal,
            window=tuple(windows),
            softcap=tuple(caps) if any(c is not None for c in caps) else (),
            kv_heads=layers[0].key.shape[0] if layers[0].key.shape[0] < layers[0].query.shape[0] else None,
            pos_encoding=None,
            pos_encoding_kind=self.pos_encoding_kind,
            truncated=n_total > n,
            n_input_tokens=n_total,
            device=device.type,
            notices=tuple(notices),
        )


#: decoder families whose attention goes through ``transformers.AttentionInterface`` in 5.23
INTERFACE_DECODER = InterfaceAdapter(family="decoder", layers_path="layers", qkv=(), pos_path=None)
GPT_NEOX = InterfaceAdapter(family="decoder", layers_path="layers", qkv=(), pos_path=None, out_proj="attention.dense")
for _name in ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text"):
    ADAPTERS[_name] = INTERFACE_DECODER
ADAPTERS["gpt_neox"] = GPT_NEOX
