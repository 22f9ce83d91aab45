"""Pretrained encoder-decoders (T5, BART, Marian): a source sentence in, a decoded output, three kinds of attention.

In transformers 5.23 their encoder self-attention, decoder self-attention and cross-attention all
call the function registered with ``transformers.AttentionInterface``, so the model is loaded with
``attn_implementation="ap_capture"`` (:mod:`engine.capture.hf`) like the modern decoders.
A trace is made in two steps, as for the own translator (:mod:`engine.families.seq2seq.adapter`):

1. decode: the encoder runs once, then the decoder writes one token at a time (with its key/value
   cache) until the end-of-sequence token or the limit. Each step's scores first go through the rules
   the model's generation config sets for transformers' own ``generate`` (:func:`generation_rules`:
   Marian's ``bad_words_ids`` keep its pad token out, BART's ``forced_bos_token_id`` and
   ``forced_eos_token_id`` fix its first and last token), then the token is picked greedily or by
   sampling (:mod:`engine.generation`). So greedy decoding writes what ``generate(do_sample=False)``
   writes, token for token (T5 may write its pad token: nothing in its config forbids it), except that
   ids the tokenizer cannot name are never picked;
2. capture: one teacher-forced pass over the source and the decoder input (the start token and the
   generated tokens, without a final end token) records every attention call. Row ``i`` of the
   decoder and cross-attention traces is the decoder reading ``target[i]`` while predicting
   ``target[i + 1]``.

Which stack a call belongs to is read from the module's name: ``…encoder…`` is the encoder,
``EncDecAttention`` (T5) or ``encoder_attn`` (BART, Marian) is cross-attention, the rest is the
decoder. T5 adds a learned relative-position bias (shared by all layers of a stack) and does not
scale QKᵀ (``scaling = 1``); both come from what the call received.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engine.capture.contribution import attention_norms
from engine.capture.hf import per_query_head, recording, register
from engine.capture.transfer import to_host
from engine.families import hub_record
from engine.families.hf_api import hf
from engine.families.hub import byte_level, sdpa_builder
from engine.generation import SEQ2SEQ_NEW_TOKENS, DecodeSettings, TokenPicker
from engine.model import Model, pick_device
from engine.records import EngineError, ModelSpec, ModelUnavailableError, Tokens
from engine.text import display_tokens, error_reason, named_ids, prepare_text, quote_input
from engine.traces.attention import AttentionTrace
from engine.traces.seq2seq import Seq2SeqTrace, written_tokens


def positions(model_type: str) -> str:
    """How the encoder of a ``model_type`` encodes positions (its record in :data:`engine.families.TABLE`):
    ``"relative"`` (T5: a bias on the scores), ``"learned"`` or ``"sinusoidal"`` (a table added to the input)."""
    record = hub_record(model_type)
    return (record.positions if record is not None else None) or "learned"


def part_of(name: str) -> str:
    """``"encoder"``, ``"decoder"`` or ``"cross"`` for an attention module's dotted name."""
    parts = name.split(".")
    if "encoder" in parts:
        return "encoder"
    return "cross" if parts[-1] in {"EncDecAttention", "encoder_attn"} else "decoder"


def generation_rules(gen, ends: list[int], max_new_tokens: int, device: torch.device):
    """The score rules transformers' ``generate`` applies before picking, read from a generation config.

    The same processors, in the same order, that ``GenerationMixin._get_logits_processor`` builds from
    these settings of the config (those encoder-decoder checkpoints set: bans, length limits, forced
    tokens, repetition rules), with the decoder input so far as their ``input_ids``. Greedy decoding
    through them equals ``generate(do_sample=False, num_beams=1)``.

    Args:
        gen: the model's ``generation_config``.
        ends: the end-of-sequence ids.
        max_new_tokens: the most tokens written after the start token (``max_length`` is one more, as
            in ``generate``): ``forced_eos_token_id`` is forced at the last of them.
        device: where the scores are.

    Returns:
        A ``LogitsProcessorList``: ``rules(ids [1, n], scores [1, V]) -> scores [1, V]``.
    """
    from transformers import LogitsProcessorList
    from transformers.generation import logits_process as lp

    rules = LogitsProcessorList()
    if gen.repetition_penalty is not None and gen.repetition_penalty != 1.0:
        rules.append(lp.RepetitionPenaltyLogitsProcessor(gen.repetition_penalty))
    if gen.no_repeat_ngram_size:
        rules.append(lp.NoRepeatNGramLogitsProcessor(gen.no_repeat_ngram_size))
    if gen.bad_words_ids is not None:  # Marian: [[pad]]
        rules.append(lp.NoBadWordsLogitsProcessor(gen.bad_words_ids, ends))
    if gen.min_length and ends:
        rules.append(lp.MinLengthLogitsProcessor(gen.min_length, ends, device=device))
    if gen.min_new_tokens and ends:
        rules.append(lp.MinNewTokensLengthLogitsProcessor(1, gen.min_new_tokens, ends, device=device))
    if gen.forced_bos_token_id is not None:
        rules.append(lp.ForcedBOSTokenLogitsProcessor(gen.forced_bos_token_id))
    if gen.forced_eos_token_id is not None:
        rules.append(lp.ForcedEOSTokenLogitsProcessor(1 + max_new_tokens, gen.forced_eos_token_id, device=device))
    if gen.suppress_tokens is not None:
        rules.append(lp.SuppressTokensLogitsProcessor(gen.suppress_tokens, device=device))
    if gen.begin_suppress_tokens is not None:  # the first written token (the second under a forced first)
        begin = 1 if gen.forced_bos_token_id is None else 2
        rules.append(lp.SuppressTokensAtBeginLogitsProcessor(gen.begin_suppress_tokens, begin, device=device))
    return rules


@dataclass(frozen=True)
class Seq2SeqHFAdapter:
    """``engine.trace`` / ``engine.generate`` for a Hugging Face encoder-decoder: text → :class:`Seq2SeqTrace`.

    ``causal`` is ignored: the decoder is always causal, the encoder and cross-attention never are.
    ``max_tokens`` bounds the source.
    """

    model_type: str
    byte_level: bool = False
    family: str = "encoder-decoder"

    # ---- tokens ------------------------------------------------------------------------------
    def source(self, model: Model, text: str, max_tokens: int) -> tuple[list[int], Tokens, list[str], int]:
        """Source ids (cut to ``max_tokens``), display tokens, notices and the uncut count."""
        ids, tokens, n_total, notices = prepare_text(model, text, max_tokens, self.byte_level)
        return ids, tokens, notices, n_total

    def position_table(self, module: nn.Module) -> tuple[np.ndarray, str, str] | None:
        """The encoder's position vectors ``[pos, d_model]``, their kind and module name; None for T5 (a bias).

        BART's learned table starts two rows in (rows 0–1 are an offset from fairseq), Marian's is a fixed
        sinusoidal table.
        """
        kind = positions(self.model_type)
        if kind not in {"learned", "sinusoidal"}:
            return None
        table = module.get_encoder().embed_positions
        values = table.weight.detach().to("cpu", torch.float32).numpy()
        offset = int(getattr(table, "offset", 0) or 0)
        return values[offset:].copy(), kind, "encoder.embed_positions"

    # ---- decoding ----------------------------------------------------------------------------
    @staticmethod
    def _special_ids(module: nn.Module) -> tuple[int, set[int]]:
        """(decoder start id, end ids), from the generation config or else the model config."""
        cfg, gen = module.config, getattr(module, "generation_config", None)

        def read(name):
            value = getattr(gen, name, None) if gen is not None else None
            return getattr(cfg, name, None) if value is None else value

        start = read("decoder_start_token_id")
        if start is None:
            start = read("pad_token_id")
        if start is None:
            raise EngineError("This encoder-decoder's config names no decoder start token.")
        eos = read("eos_token_id")
        ends = set(eos if isinstance(eos, (list, tuple)) else [] if eos is None else [eos])
        return int(start), {int(e) for e in ends}

    def decode(
        self,
        module: nn.Module,
        device: torch.device,
        src_ids: list[int],
        settings: DecodeSettings,
        n_named: int | None = None,
    ) -> tuple[list[int], bool]:
        """Generated ids (without the start token) and whether an end token finished them.

        ``n_named``: how many ids the tokenizer names; higher ids are never picked (T5 pads its vocabulary).
        """
        start, ends = self._special_ids(module)
        rules = generation_rules(module.generation_config, sorted(ends), settings.max_new_tokens, device)
        pick = TokenPicker(settings, n_named)
        src = torch.tensor([src_ids], device=device)
        encoder_outputs = module.get_encoder()(input_ids=src)
        ids = torch.tensor([[start]], device=device)  # (1, 1 + written): what the rules read
        past = None
        for _ in range(settings.max_new_tokens):
            res = module(
                encoder_outputs=encoder_outputs, decoder_input_ids=ids[:, -1:], past_key_values=past, use_cache=True
            )
            past = res.past_key_values
            scores = rules(ids, res.logits[:, -1].float())  # (1, V)
            token = pick(scores[0].cpu().numpy())
            ids = torch.cat([ids, torch.tensor([[token]], device=device)], dim=1)
            if token in ends:
                return ids[0, 1:].tolist(), True
        return ids[0, 1:].tolist(), False

    # ---- capture -----------------------------------------------------------------------------
    def capture(self, module: nn.Module, device: torch.device, src_ids: list[int], tgt_ids: list[int]):
        """One teacher-forced pass; ``{part: [record per layer]}`` in layer order."""

        names = {id(m): n for n, m in module.named_modules()}
        with recording() as rec:
            module(
                input_ids=torch.tensor([src_ids], device=device),
                decoder_input_ids=torch.tensor([tgt_ids], device=device),
                use_cache=False,
            )
        parts: dict[str, list] = {"encoder": [], "decoder": [], "cross": []}
        for mod, record in rec.calls:
            # what each key adds through each head: the value carried through the module's own o / out_proj
            record.out_norms = attention_norms(mod, per_query_head(record.value, record.query.shape[-3]))
            parts[part_of(names.get(id(mod), ""))].append(record)
        if not parts["encoder"] or len(parts["decoder"]) != len(parts["cross"]):
            raise EngineError(
                f"captured {', '.join(f'{k}: {len(v)}' for k, v in parts.items())} attention calls; "
                "expected an encoder and one cross-attention per decoder layer"
            )
        return to_host(parts)

    @staticmethod
    def _attention(
        model: Model, records: list, queries: Tokens, keys: Tokens, causal: bool, kind: str, device: str
    ) -> AttentionTrace:
        relative = [None if r.relative_bias is None or not r.relative_bias.any() else r.relative_bias for r in records]
        return AttentionTrace(
            model_id=model.spec.id,
            family="encoder-decoder",
            tokens=queries,
            key_tokens=keys,
            queries=tuple(r.query for r in records),
            keys=tuple(r.key for r in records),
            values=tuple(r.value for r in records),
            scales=tuple(r.scale for r in records),
            causal=causal,
            relative_bias=tuple(relative) if any(b is not None for b in relative) else (),
            value_out_norms=tuple(r.out_norms for r in records),
            pos_encoding_kind=kind,
            n_input_tokens=len(keys),
            device=device,
        )

    # ---- engine.trace / engine.generate ------------------------------------------------------
    def generate(self, model: Model, text: str, settings: DecodeSettings, *, max_tokens: int) -> Seq2SeqTrace:
        """Decode ``text`` with ``settings``, then capture encoder, decoder and cross-attention."""
        src_ids, src_tokens, notices, n_total = self.source(model, text, max_tokens)

        def run(module: nn.Module, device: torch.device):
            generated, finished = self.decode(module, device, src_ids, settings, named_ids(model.tokenizer))
            start = self._special_ids(module)[0]
            tgt_ids = [start, *(generated[:-1] if finished else generated)]
            return generated, finished, tgt_ids, self.capture(module, device, src_ids, tgt_ids)

        (generated, finished, tgt_ids, parts), device, notice = model.run(run)
        target = display_tokens(model.tokenizer, tgt_ids, self.byte_level)
        kind = positions(self.model_type)
        if not finished:
            notices.append(f"The output did not end within {len(generated)} tokens; it was cut there.")
        notices.append(f"Decoding: {settings.describe()}.")
        if notice:
            notices.append(notice)
        encoder = self._attention(model, parts["encoder"], src_tokens, src_tokens, False, kind, device.type)
        return Seq2SeqTrace(
            model_id=model.spec.id,
            source=src_tokens,
            target=target,
            output_text=model.tokenizer.decode(generated, skip_special_tokens=True),
            encoder=replace(encoder, truncated=n_total > len(src_ids), n_input_tokens=n_total),
            decoder=self._attention(model, parts["decoder"], target, target, True, kind, device.type),
            cross=self._attention(model, parts["cross"], target, src_tokens, False, "none", device.type),
            notices=tuple(notices),
            written=written_tokens(display_tokens(model.tokenizer, generated, self.byte_level), finished),
        )

    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> Seq2SeqTrace:
        """Greedy decoding of up to :data:`SEQ2SEQ_NEW_TOKENS` tokens (see :meth:`generate`)."""
        return self.generate(model, text, DecodeSettings(max_new_tokens=SEQ2SEQ_NEW_TOKENS), max_tokens=max_tokens)


def load_hf_seq2seq(
    model_id: str, path: Path, config: dict, *, spec: ModelSpec | None = None, device: torch.device | None = None
) -> Model:
    """A T5, BART or Marian model with its tokenizer, read through ``ap_capture`` (all three attentions)."""

    api = hf()
    model_type = config.get("model_type")
    shown = quote_input(model_id)
    try:
        tokenizer = api.AutoTokenizer.from_pretrained(path)
    except Exception as err:  # noqa: BLE001 — any loader error (see hub.sdpa_builder) means this model cannot load
        raise ModelUnavailableError(f"The tokenizer of {shown} cannot be loaded: {error_reason(err)}") from err
    build = sdpa_builder(api.AutoModelForSeq2SeqLM, path, model_id, register())
    module = build(device or pick_device())
    relative = positions(model_type) == "relative"  # no position table: the tokenizer's limit, else T5's 512
    max_pos = int(config.get("n_positions") or 512) if relative else int(config.get("max_position_embeddings") or 512)
    return Model(
        spec=spec or ModelSpec(id=model_id, family="encoder-decoder", label=model_id, offline=True),
        module=module,
        tokenizer=tokenizer,
        adapter=Seq2SeqHFAdapter(model_type=model_type, byte_level=byte_level(tokenizer)),
        device=next(module.parameters()).device,
        max_positions=max_pos,
        reload=build,
        info={"source": str(path), "architecture": model_type},
        default_causal=False,
    )
