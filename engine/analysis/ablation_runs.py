"""One runner per model family for :func:`engine.analysis.ablation.ablate`, and the next-token summary two runners share.

A runner knows the family's heads (``layout``), where its output projections are, how to turn text
into ids (the same way the family's tracing adapter does), how to compute the output that ablation
is judged by, and how to summarise a before/after pair into :class:`AblationResult` fields.
``run`` is called inside ``Model.run`` (under the model's lock, in inference mode) with the module
to use, which is the shared module or its CPU copy after a GPU out-of-memory error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engine.analysis.ablation_heads import SELF, HeadRef, heads_off
from engine.corpora import target_text
from engine.families.hf_text.adapter import HFTextAdapter
from engine.families.seq2seq.adapter import source_input
from engine.families.seq2seq.network import Seq2SeqTransformer
from engine.families.transformer.adapter import words_of
from engine.families.transformer.network import Transformer
from engine.generation import named_only
from engine.records import EngineError, Tokens
from engine.text import display_tokens, named_ids
from engine.vocab import BOS_ID, decoder_input


@dataclass(frozen=True)
class Prepared:
    """Ids and settings of one input, shared by the before and after runs."""

    ids: tuple[int, ...]
    tokens: Tokens
    notices: tuple[str, ...]
    causal: bool | None = None


def _log_probs(logits: torch.Tensor, n_named: int | None = None) -> np.ndarray:
    """``[vocab]`` logits → float64 numpy log-probabilities; ids the tokenizer cannot name (``>= n_named``,
    :func:`~engine.generation.named_only`) get −inf, so they are never a next-token candidate."""
    z = torch.from_numpy(named_only(logits.double().cpu().numpy(), n_named))
    return torch.log_softmax(z, dim=-1).numpy()


def next_token_summary(p_log_before: np.ndarray, p_log_after: np.ndarray, top_k: int) -> dict:
    """Top tokens, KL and TV from two float64 log-probability vectors ``[vocab]`` (−inf where a token
    cannot be picked: an id the tokenizer cannot name)."""
    p_b, p_a = np.exp(p_log_before), np.exp(p_log_after)
    live = p_b > 0  # 0 · log 0 = 0: ids at −inf before add nothing (and no −inf − −inf)
    kl = float(np.sum(p_b[live] * (p_log_before[live] - p_log_after[live])))
    tv = float(0.5 * np.abs(p_b - p_a).sum())
    key = np.maximum(p_b, p_a)
    k = max(1, int(top_k))
    must = list(dict.fromkeys([int(np.argmax(p_b)), int(np.argmax(p_a))]))[:k]  # both winners always shown
    rest = [int(i) for i in np.argsort(-key, kind="stable")[: k + 2] if int(i) not in must]
    top = sorted(must + rest[: k - len(must)], key=lambda i: (-key[i], i))
    return {
        "top_ids": tuple(int(i) for i in top),
        "top_before": tuple(float(p_b[i]) for i in top),
        "top_after": tuple(float(p_a[i]) for i in top),
        "kl": max(kl, 0.0),
        "tv": tv,
    }


# ---- our own decoder ------------------------------------------------------------------------------
@dataclass(frozen=True)
class OwnDecoderRunner:
    """:class:`~engine.families.transformer.network.Transformer` checkpoints: next-token probabilities."""

    layout: dict
    vocab: Any
    output: str = "next-token"

    @staticmethod
    def projections(module: nn.Module) -> dict[tuple[str, int], nn.Module]:
        return {(SELF, i): block.attn.w_o for i, block in enumerate(module.blocks)}

    @staticmethod
    def layers(module: nn.Module) -> list[nn.Module]:
        """The blocks; each takes the residual stream as its first argument and returns it."""
        return list(module.blocks)

    def prepare(self, model, text: str, *, causal: bool | None, max_tokens: int) -> Prepared:
        inp = decoder_input(text, model.tokenizer, max_tokens, model.max_positions, split=words_of(model))
        return Prepared(inp.ids, inp.tokens, inp.notices, causal)

    @staticmethod
    def logits(module: nn.Module, ids: torch.Tensor, causal: bool | None) -> torch.Tensor:
        """``ids`` ``(B, T)`` → logits ``(B, T, V)``."""
        return module(ids, causal=causal)

    def run(self, module: nn.Module, device: torch.device, prep: Prepared, off: tuple[HeadRef, ...], _before) -> Any:
        ids = torch.tensor([list(prep.ids)], dtype=torch.long, device=device)  # (1, T)
        n_heads = {SELF: module.cfg.n_heads}
        with heads_off(self.projections(module), off, n_heads):
            logits = self.logits(module, ids, prep.causal)  # (1, T, V)
        return _log_probs(logits[0, -1])

    def summarise(self, prep: Prepared, before, after, top_k: int) -> dict:
        out = next_token_summary(before, after, top_k)
        out["top_tokens"] = tuple(self.vocab.decode(out["top_ids"]))
        return out


# ---- Hugging Face text families -------------------------------------------------------------------
def sentence_max_length(model) -> int | None:
    """``max_seq_length`` of a sentence-transformers folder (256 for all-MiniLM-L6-v2), else None."""
    source = model.info.get("source") if isinstance(model.info, dict) else None
    path = Path(source) / "sentence_bert_config.json" if source else None
    try:
        value = json.loads(path.read_text()).get("max_seq_length") if path and path.is_file() else None
    except (OSError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int) and value > 0 else None


@dataclass(frozen=True)
class HFRunner:
    """Hugging Face encoders (sentence embedding) and decoders (next-token probabilities)."""

    layout: dict
    adapter: Any
    tokenizer: Any
    output: str = "next-token"
    default_causal: bool = False  # Model.default_causal: the mask the model applies by itself

    def projections(self, module: nn.Module) -> dict[tuple[str, int], nn.Module]:
        """Each layer's output projection (per family: engine.families.hf_text.settings); a linear-attention layer
        (Qwen3-Next's) has none and is left out."""
        found = [dict(layer.named_modules()).get(self.adapter.out_proj) for layer in self.adapter.layers(module)]
        return {(SELF, i): proj for i, proj in enumerate(found) if proj is not None}

    def layers(self, module: nn.Module) -> list[nn.Module]:
        """The decoder layers; each takes the residual stream as its first argument and returns it."""
        return self.adapter.layers(module)

    def prepare(self, model, text: str, *, causal: bool | None, max_tokens: int) -> Prepared:
        ceiling = model.max_positions
        if self.output == "embedding":
            ceiling = min(ceiling, sentence_max_length(model) or ceiling)
        ready = self.adapter.prepare(model, text, max_tokens, ceiling)
        return Prepared(tuple(ready.ids), ready.tokens, tuple(ready.notices), causal)

    def causal_kwargs(self, module: nn.Module, n: int, causal: bool | None, device: torch.device) -> dict:
        """Tracing's causal toggle (:meth:`HFTextAdapter.causal_kwargs`); None keeps the model's own mask."""
        causal = self.default_causal if causal is None else bool(causal)
        return self.adapter.causal_kwargs(module, n, causal, device, default=self.default_causal)

    def logits(self, module: nn.Module, ids: torch.Tensor, causal: bool | None) -> torch.Tensor:
        """``ids`` ``(B, T)`` → logits ``(B, T, V)`` (decoders)."""
        return module(input_ids=ids, **self.causal_kwargs(module, ids.shape[1], causal, ids.device)).logits

    def run(self, module: nn.Module, device: torch.device, prep: Prepared, off: tuple[HeadRef, ...], _before) -> Any:
        input_ids = torch.tensor([list(prep.ids)], device=device)  # (1, T)
        with heads_off(self.projections(module), off, {SELF: self.layout[SELF][1]}):
            if self.output == "next-token":
                return _log_probs(self.logits(module, input_ids, prep.causal)[0, -1], named_ids(self.tokenizer))
            kwargs = self.causal_kwargs(module, len(prep.ids), prep.causal, device)
            hidden = self.adapter.base(module)(input_ids=input_ids, **kwargs).last_hidden_state[0]  # (T, D)
        pooled = hidden.float().mean(dim=0)  # mean pooling; every token is real (mask all ones)
        return F.normalize(pooled, p=2, dim=0).cpu().numpy()  # (D,) unit length

    def summarise(self, prep: Prepared, before, after, top_k: int) -> dict:
        if self.output == "embedding":
            cosine = float(np.dot(before.astype(np.float64), after.astype(np.float64)))
            return {"embedding_before": before, "embedding_after": after, "cosine": cosine}
        out = next_token_summary(before, after, top_k)
        out["top_tokens"] = display_tokens(self.tokenizer, out["top_ids"], self.adapter.byte_level).strings
        return out


# ---- the encoder-decoder translator ---------------------------------------------------------------
@dataclass(frozen=True)
class Seq2SeqRunner:
    """Our encoder-decoder translator: the greedy translation and its confidence."""

    layout: dict
    tgt_vocab: Any
    output: str = "translation"

    @staticmethod
    def projections(module: nn.Module) -> dict[tuple[str, int], nn.Module]:
        out = {}
        for i, block in enumerate(module.encoder.blocks):
            out[("encoder", i)] = block.attn.w_o
        for i, block in enumerate(module.decoder.blocks):
            out[("decoder", i)] = block.attn.w_o
            out[("cross", i)] = block.cross_attn.w_o
        return out

    def prepare(self, model, text: str, *, causal: bool | None, max_tokens: int) -> Prepared:
        inp = source_input(text, model.tokenizer["source"], max_tokens, model.max_positions)
        return Prepared(inp.ids, inp.tokens, inp.notices, None)

    def run(self, module: nn.Module, device: torch.device, prep: Prepared, off: tuple[HeadRef, ...], before) -> Any:
        n_heads = {block: module.cfg.n_heads for block in self.layout}
        with heads_off(self.projections(module), off, n_heads):
            generated = module.greedy_decode(list(prep.ids))
            reference = generated if before is None else before["generated"]
            src = torch.tensor([list(prep.ids)], device=device)  # (1, S)
            tgt_in = torch.tensor([[BOS_ID, *reference[:-1]]], device=device)  # (1, m)
            logits = module(src, tgt_in, attn_impl="sdpa")[0]  # (m, V), teacher-forced
        probs = torch.softmax(logits.double(), dim=-1)  # (m, V)
        chosen = probs[torch.arange(len(reference)), torch.tensor(reference, device=device)]  # (m,)
        return {"generated": list(generated), "confidence": float(chosen.mean()) if len(reference) else float("nan")}

    def summarise(self, prep: Prepared, before, after, top_k: int) -> dict:
        out = {}
        for side, run in (("before", before), ("after", after)):
            words = self.tgt_vocab.decode(run["generated"])
            out[f"target_{side}"] = tuple(words)
            out[f"translation_{side}"] = target_text(words)
            out[f"confidence_{side}"] = run["confidence"]
        return out


def runner_for(model):
    """The runner for a loaded :class:`~engine.model.Model`.

    Raises:
        EngineError: a family without ablation here (RNN attention, ViT, unknown).
    """

    module = model.module
    if isinstance(module, Transformer):
        return OwnDecoderRunner(layout={SELF: (module.cfg.n_layers, module.cfg.n_heads)}, vocab=model.tokenizer)
    if isinstance(module, Seq2SeqTransformer):
        shape = (module.cfg.n_layers, module.cfg.n_heads)
        return Seq2SeqRunner(
            layout={"encoder": shape, "decoder": shape, "cross": shape}, tgt_vocab=model.tokenizer["target"]
        )
    adapter = model.adapter
    if isinstance(adapter, HFTextAdapter):
        layout = {SELF: (len(adapter.layers(module)), adapter.n_heads(module.config))}
        output = "next-token" if adapter.family == "decoder" else "embedding"
        return HFRunner(
            layout=layout,
            adapter=adapter,
            tokenizer=model.tokenizer,
            output=output,
            default_causal=bool(model.default_causal),
        )
    raise EngineError(
        f"Head ablation works on transformer text models and the transformer translator, not on "
        f"{model.spec.id} ({model.spec.family})."
    )
