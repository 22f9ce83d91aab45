"""Tracing Hugging Face text models through one capture path.

In transformers 5.23 every text family the engine reads (BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA,
DistilBERT, GPT-2, Llama, Mistral, Qwen2/3, GPT-NeoX, Phi-3, Gemma 1–3, gpt-oss) computes attention by
calling the function registered under ``config._attn_implementation`` with the projected
(position-encoded, for RoPE) ``query``, ``key``, ``value`` ``[b, heads, n, d_head]`` and the factor
``scaling`` it applies to QKᵀ. The engine loads them with ``attn_implementation="ap_capture"``
(:mod:`engine.capture.hf`): that function records what each call received and hands it to
transformers' own SDPA, so the model runs its fast path and no n×n array is kept. The returned
``AttentionTrace`` computes scores and patterns lazily for the layer and head asked for.

Because Q, K, V and the scale come from the call itself, nothing family-specific is needed to read
them: GPT-2's two scale switches (``scale_attn_weights``, ``scale_attn_by_inverse_layer_idx``) are
already folded into its ``scaling`` (its ``reorder_and_upcast_attn`` changes only the eager path:
scores in float32, which the lazy pattern computes in anyway), and a recorded call is mapped to its
layer by module identity (DistilBERT's and ViT's attention modules carry no ``layer_idx``). What
still differs per family is listed in :mod:`engine.families.hf_text.settings`: where the layers are, the
position-embedding module (the vectors added to the input, read with one forward hook), the
attention output projection that ablation switches heads off at, whether the tokenizer is
byte-level, whether the model masks future tokens by itself (:meth:`HFTextAdapter.default_causal`),
and whether its ``forward`` takes ``use_cache``.

A causal toggle never edits the shared model's config. Turning a self-masking model's mask off
passes ``is_causal=False`` to ``forward`` (transformers 5.23 reads it when it builds the mask and
hands it to the attention function; no mask tensor, so 16k-token inputs are fine). Turning the mask
on for a model that does not mask by itself passes a per-call 4D additive float mask ``[1, 1, n, n]``
(0 where allowed, the dtype's minimum where blocked); that is n² floats, so it is refused above
:data:`MAX_MASK_TOKENS` tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from engine.batching import length_groups
from engine.capture import capture
from engine.capture.contribution import gram_norms, projection_grams
from engine.capture.hf import layer_records, per_query_head, recording
from engine.capture.transfer import to_host
from engine.families.hf_text.generate import generate
from engine.model import Model
from engine.records import EmptyInputError, EngineError, ModelUnavailableError, Tokens
from engine.text import Tokenized, prepare_text
from engine.traces.attention import AttentionTrace
from engine.traces.kinds import config_kinds

#: longest input a causal toggle may build its ``[1, 1, n, n]`` float mask for (64 MB in float32)
MAX_MASK_TOKENS = 4096

#: what one forward pass costs whatever its size (its weights read once), in padded tokens: a batch is split
#: where a second pass costs less than the padding it saves (:meth:`HFTextAdapter.trace_batch`)
PASS_TOKENS = 32


def _row(x: np.ndarray, b: int, n: int, axis: int = 1) -> np.ndarray:
    """Batch row ``b`` of a whole-batch array (records ``[B, H, n_pad, d]``; ``axis=0``: positions ``[B, n_pad,
    d]``; positions may come as one row for the whole batch), its first ``n`` positions: the row itself when it
    is all of the array (no copy: a long single trace's Q/K/V are never doubled), else an array of its own (a
    trace never keeps the padded batch alive)."""
    if x.shape[0] == 1 and x.shape[axis + 1] == n:
        return x[0]
    return np.ascontiguousarray(x[b][(slice(None),) * axis + (slice(0, n),)])


def _or_error(fn):
    """``fn()``, or the exception it raised (one item of a batch)."""
    try:
        return fn()
    except Exception as err:  # noqa: BLE001 — handed back in the item's place
        return err


def _per_layer(values) -> tuple:
    """A per-layer setting as the trace holds it: () when no layer has one."""
    values = tuple(values)
    return values if any(v is not None for v in values) else ()


@dataclass(frozen=True)
class HFTextAdapter:
    """Tracing for one family of Hugging Face text models (settings per family: :mod:`engine.families.hf_text.settings`).

    Attributes:
        family: "encoder" or "decoder".
        layers_path: dotted path from the base model to its list of layers.
        out_proj: the attention output projection inside a layer (its input is the heads' z,
            head-major): where ablation switches heads off.
        pos_path: dotted path to the position-embedding module, or None (RoPE: no vectors added).
        pos_encoding_kind: what the trace reports: "learned" or "rope".
        byte_level: display tokens by decoding ids (byte-level BPE), not by cleaning pieces; None:
            read from the tokenizer when the model is loaded.
        reads_is_decoder: the family's model builds a causal mask when its config says
            ``is_decoder=True`` (BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA; not DistilBERT).
        caches: the base model's ``forward`` takes ``use_cache`` (a trace turns the cache off).
        position_offset: rows of the position table before the first position (RoBERTa-likes: 2, their
            positions start after the padding index), taken off the longest input.
    """

    family: str
    layers_path: str
    out_proj: str
    pos_path: str | None
    pos_encoding_kind: str = "learned"
    byte_level: bool | None = False
    reads_is_decoder: bool = False
    caches: bool = True
    position_offset: int = 0
    #: several texts may share one padded forward pass (:meth:`trace_batch`): families whose padding mask is
    #: checked against single traces and eager attention (tests/unit/test_trace_batch.py)
    batches: bool = False

    # ---- model structure ---------------------------------------------------------------------
    def base(self, module: nn.Module) -> nn.Module:
        """The base model below any task head (``GPT2LMHeadModel.transformer``)."""
        return getattr(module, module.base_model_prefix, module) if hasattr(module, "base_model_prefix") else module

    def _path(self, module: nn.Module, path: str):
        obj = self.base(module)
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj

    def layers(self, module: nn.Module) -> list[nn.Module]:
        return list(self._path(module, self.layers_path))

    def pos_module(self, module: nn.Module) -> nn.Module | None:
        """The module whose output is the position vectors added to the input, or None."""
        return None if self.pos_path is None else self._path(module, self.pos_path)

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

    # ---- tokens ------------------------------------------------------------------------------
    def prepare(self, model: Model, text: str, max_tokens: int, ceiling: int | None = None) -> Tokenized:
        """Clean, check and tokenize ``text`` for ``model`` (:func:`engine.text.prepare_text`): what every trace of
        a Hugging Face text model starts with."""
        return prepare_text(model, text, max_tokens, self.byte_level, ceiling)

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
        """``engine.generate``: decoders write, then trace prompt + output (:mod:`engine.families.hf_text.generate`)."""

        return generate(self, model, prompt, settings, max_tokens=max_tokens)

    # ---- trace -------------------------------------------------------------------------------
    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> AttentionTrace:
        """Tokenize ``text`` (cut to ``max_tokens`` and the model's positions) and trace it (:meth:`trace_ids`)."""
        ids, tokens, n_total, notices = self.prepare(model, text, max_tokens)
        return self.trace_ids(model, ids, tokens, causal=causal, notices=notices, n_input_tokens=n_total)

    def trace_ids(
        self,
        model: Model,
        ids: Sequence[int],
        tokens: Tokens,
        *,
        causal: bool | None,
        notices: Sequence[str] = (),
        n_input_tokens: int | None = None,
    ) -> AttentionTrace:
        """Trace one given id sequence (a tokenized text, or a prompt and the tokens generated after it).

        Args:
            model: a text model loaded by :func:`engine.families.hub.load_hf` (``ap_capture`` attention).
            ids: token ids, at most ``model.max_positions`` of them.
            tokens: their display form (one per id).
            causal: force the causal mask on/off; None keeps the model's default.
            notices: sentences for the UI to carry over (a GPU fallback notice is added after them).
            n_input_tokens: the token count before a cut (``truncated`` when more than ``len(ids)``);
                None: nothing was cut.

        Returns:
            An :class:`AttentionTrace` with one layer per model layer; keys and values of grouped-query
            models are repeated to one per query head (``kv_heads`` says how many the model has).

        Raises:
            EmptyInputError: no ids. EngineError: too many ids, tokens that do not match the ids, a
                model that does not run the capturing attention.
        """
        ids = [int(i) for i in ids]
        n = len(ids)
        if n == 0:
            raise EmptyInputError("There are no tokens to trace.")
        if len(tokens) != n:
            raise EngineError(f"{len(tokens)} display tokens for {n} token ids")
        if n > model.max_positions:
            raise EngineError(f"This model reads at most {model.max_positions} tokens; got {n}.")
        default_causal = bool(model.default_causal)
        causal = default_causal if causal is None else bool(causal)
        records, norms, pos, device, notice = self._forward(model, ids, causal, default_causal)
        return self._assemble(model, records, norms, pos, device, notice, tokens, causal, notices, n_input_tokens)

    def _assemble(
        self, model: Model, records, norms, pos, device, notice, tokens: Tokens, causal: bool, notices, n_input_tokens
    ) -> AttentionTrace:
        """The :class:`AttentionTrace` of one sequence from its per-layer records and output norms (its own row)."""
        n = len(tokens)
        n_heads = records[0].query.shape[0]
        kv_heads = min(r.key.shape[0] for r in records)  # fewer than n_heads: grouped-query attention
        return AttentionTrace(
            model_id=model.spec.id,
            family=model.spec.family,
            tokens=tokens,
            key_tokens=tokens,
            queries=tuple(r.query for r in records),
            keys=tuple(per_query_head(r.key, n_heads) for r in records),
            values=tuple(per_query_head(r.value, n_heads) for r in records),
            scales=tuple(r.scale for r in records),
            causal=causal,
            window=_per_layer(r.sliding_window for r in records),
            softcap=_per_layer(r.softcap for r in records),
            layer_kinds=config_kinds(model.module.config, len(records)),
            sinks=_per_layer(r.sinks for r in records),
            kv_heads=kv_heads if kv_heads < n_heads else None,
            value_out_norms=tuple(norms),
            pos_encoding=pos,
            pos_encoding_kind=self.pos_encoding_kind,
            truncated=n_input_tokens is not None and n_input_tokens > n,
            n_input_tokens=n if n_input_tokens is None else int(n_input_tokens),
            device=device.type,
            notices=tuple(notices) + ((notice,) if notice else ()),
        )

    def trace_batch(
        self, model: Model, texts: Sequence[str], *, causal: bool | None, max_tokens: Sequence[int]
    ) -> list[AttentionTrace | Exception]:
        """Trace several texts with one forward pass over them, right-padded to the longest (what a class
        pressing Enter at once asks for: the weights are read once for all). Texts of very different lengths go in more than one
        pass, each over texts of similar lengths, where that costs less than padding the short ones
        (:func:`engine.batching.length_groups`, :data:`PASS_TOKENS`).

        Each text is prepared on its own, so a text that cannot be traced (empty, a bad token limit) is
        that item's exception and the others still run. The padding tokens are masked out of every
        real token's attention (a ``[b, n]`` padding mask, which the model merges with its own causal
        mask) and cut from the records, so each trace equals :meth:`trace` of its text up to float
        rounding. Texts that need a mask of their own (a causal toggle against the model's default) or a
        family not marked :attr:`batches` are traced one by one.
        """
        prepared: list = []
        for text, limit in zip(texts, max_tokens, strict=True):
            try:
                ids, tokens, n_total, notes = self.prepare(model, text, limit)
                if not ids:
                    raise EmptyInputError("There are no tokens to trace.")
                prepared.append((ids, tokens, notes, n_total))
            except Exception as err:  # noqa: BLE001 — this item's own error, handed back in its place
                prepared.append(err)
        ready = [i for i, p in enumerate(prepared) if not isinstance(p, Exception)]
        default_causal = bool(model.default_causal)
        want = default_causal if causal is None else bool(causal)
        longest = max((len(prepared[i][0]) for i in ready), default=0)
        # what causal_kwargs would pass besides the padding: a mask of its own, or is_causal=False
        own_mask = (want and not default_causal) or (not want and self._may_mask_itself(model.module.config))
        if len(ready) < 2 or not self.batches or own_mask or longest > model.max_positions:
            return [
                p
                if isinstance(p, Exception)
                else _or_error(
                    lambda p=p: self.trace_ids(model, p[0], p[1], causal=want, notices=p[2], n_input_tokens=p[3])
                )
                for p in prepared
            ]
        out: list = list(prepared)
        for group in length_groups([len(prepared[i][0]) for i in ready], PASS_TOKENS):
            rows = [ready[g] for g in group]  # texts of similar lengths: one pass each run (short ones padded less)
            traced, device, notice = self._forward_batch(model, [prepared[i][0] for i in rows])
            for i, (records, norms, pos) in zip(rows, traced, strict=True):
                _, tokens, notes, n_total = prepared[i]
                out[i] = self._assemble(model, records, norms, pos, device, notice, tokens, want, notes, n_total)
        return out

    def output_grams(self, module: nn.Module, n_heads: int) -> list[torch.Tensor]:
        """Per layer, the Gram matrices ``W_O^h W_O^hᵀ`` of the output projection (:attr:`out_proj`) split into one
        block per query head, ``[head, d_head, d_head]`` (:func:`engine.capture.contribution.projection_grams`:
        computed once per weight, not per trace, and kept on the model's device)."""
        return [projection_grams(layer.get_submodule(self.out_proj), n_heads) for layer in self.layers(module)]

    def _forward(self, model: Model, ids: list[int], causal: bool, default_causal: bool):
        """Run the base model once on ``ids``, recording every attention call: ``(records per layer, output norms
        ‖v^h_j W_O^h‖ per layer, position vectors or None, device, notice)``."""
        n = len(ids)
        traced, device, notice = self._run(
            model,
            [ids],
            lambda module, device: self.causal_kwargs(module, n, causal, device=device, default=default_causal),
        )
        records, norms, pos = traced[0]
        return records, norms, pos, device, notice

    def _forward_batch(self, model: Model, rows: list[list[int]]):
        """:meth:`_forward` for several id sequences at once, right-padded, with the model's own mask and the
        padding masked out: ``(records, norms and positions per row, device, notice)``."""
        attention_mask = torch.zeros((len(rows), max(len(r) for r in rows)), dtype=torch.long)
        for b, ids in enumerate(rows):
            attention_mask[b, : len(ids)] = 1
        return self._run(model, rows, lambda module, device: {"attention_mask": attention_mask.to(device)})

    def _run(self, model: Model, rows: list[list[int]], mask_kwargs):
        """One forward pass of the base model over ``rows`` (right-padded to the longest with the tokenizer's
        padding id), stopped after the last layer's attention call. Returns, per row, its records (its own
        tokens only), output norms and position vectors, then the device and any notice (``Model.run``).
        Everything stays on the model's device until one copy brings it all back (:func:`to_host`).
        ``mask_kwargs(module, device)``: the mask arguments of the call."""
        longest = max(len(r) for r in rows)
        pad = getattr(model.tokenizer, "pad_token_id", None)

        def forward(module: nn.Module, device: torch.device):
            input_ids = torch.full((len(rows), longest), 0 if pad is None else int(pad), dtype=torch.long)
            for b, ids in enumerate(rows):
                input_ids[b, : len(ids)] = torch.tensor(ids)
            kwargs = mask_kwargs(module, device)
            if self.caches:
                kwargs["use_cache"] = False  # a trace never reads a key/value cache
            pos_module = self.pos_module(module)
            targets = {} if pos_module is None else {"hook_pos_embed": pos_module}
            layers = self.layers(module)
            # the base model only, and only up to the last layer's attention call: what comes after it (that
            # call's output, the last MLP, an LM head's [n, vocab] logits) is never read by a trace
            with recording(whole_batch=True, stop_after=layers[-1].modules()) as rec, capture(targets) as acts:
                self.base(module)(input_ids=input_ids.to(device), **kwargs)
            records = layer_records(rec.calls, layers)
            n_heads = records[0].query.shape[1]
            grams = self.output_grams(module, n_heads)  # [B, H, n] norms beside the values, on the device
            norms = [gram_norms(per_query_head(r.value, n_heads), g) for r, g in zip(records, grams)]
            return to_host((records, norms, acts.get("hook_pos_embed")))

        (records, norms, pos), device, notice = model.run(forward)
        traced = []
        for b, ids in enumerate(rows):
            n = len(ids)
            own = [
                replace(r, query=_row(r.query, b, n), key=_row(r.key, b, n), value=_row(r.value, b, n)) for r in records
            ]
            traced.append(
                (
                    own,
                    [_row(x, b, n) for x in norms],
                    None if pos is None else _row(pos, min(b, len(pos) - 1), n, axis=0),
                )
            )
        return traced, device, notice
