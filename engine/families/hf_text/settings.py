"""Hugging Face text models (BERT-likes, GPT-2, the rotary decoders): what differs per family, and loading.

Every family here is traced by the same capture path (:class:`~engine.families.hf_text.adapter.HFTextAdapter`
reading ``transformers.AttentionInterface`` calls); a settings object says only what that path cannot
read from the calls themselves. Which ``config.model_type`` uses which settings is one record each in
the family table (:data:`engine.families.TABLE`). Paths are as in transformers 5.23's modelling code.

- BERT-likes: layers ``encoder.layer``, output projection ``attention.output.dense``, positions
  ``embeddings.position_embeddings`` (RoBERTa, XLM-R, CamemBERT: their positions start after the
  padding index, two rows in);
- DistilBERT: ``transformer.layer``, ``attention.out_lin``, ``embeddings.position_embeddings``;
- GPT-2: ``h``, ``attn.c_proj`` (a Conv1D), ``wpe``;
- rotary decoders: ``layers``, ``self_attn.o_proj`` (GPT-NeoX: ``attention.dense``), no position
  vectors (RoPE is applied inside attention, to the recorded Q and K).

BERT-likes (BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA) build a causal mask when their config says
``is_decoder=True``; DistilBERT never does and its ``forward`` takes no ``use_cache``. GPT-2's
tokenizer is byte-level BPE; the RoPE decoders' tokenizers are read at load (byte-level for
Llama 3, Qwen, GPT-NeoX; SentencePiece pieces for Llama 2, Mistral, Gemma).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch

from engine.capture.hf import register
from engine.families import hub_record, resolve
from engine.families.hf_api import hf
from engine.families.hf_text.adapter import HFTextAdapter
from engine.families.hub import byte_level, sdpa_builder
from engine.model import Model, pick_device
from engine.records import ModelSpec, ModelUnavailableError
from engine.text import error_reason, quote_input

BERT_LIKE = HFTextAdapter(
    family="encoder",
    layers_path="encoder.layer",
    out_proj="attention.output.dense",
    pos_path="embeddings.position_embeddings",
    reads_is_decoder=True,
    batches=True,
)
ROBERTA_LIKE = replace(BERT_LIKE, position_offset=2)
DISTILBERT = HFTextAdapter(
    family="encoder",
    layers_path="transformer.layer",
    out_proj="attention.out_lin",
    pos_path="embeddings.position_embeddings",
    caches=False,
    batches=True,
)
GPT2 = HFTextAdapter(
    family="decoder", layers_path="h", out_proj="attn.c_proj", pos_path="wpe", byte_level=True, batches=True
)
#: decoders with rotary positions (Llama, Mistral, Qwen2/3, Phi-3, Gemma 1–3, gpt-oss: its sinks come with each call)
ROTARY_DECODER = HFTextAdapter(
    family="decoder",
    layers_path="layers",
    out_proj="self_attn.o_proj",
    pos_path=None,
    pos_encoding_kind="rope",
    byte_level=None,
    batches=False,  # not checked with padding (sliding windows, softcaps): traced one by one
)
GPT_NEOX = replace(ROTARY_DECODER, out_proj="attention.dense")


def load_hf_text(
    model_id: str, path: Path, config: dict, *, spec: ModelSpec | None = None, device: torch.device | None = None
) -> Model:
    """A text model of a family in the table, with its tokenizer, read through ``ap_capture``.

    Args:
        model_id: the id the user gave (for messages and the catalog entry).
        path: a local folder (:func:`engine.families.hub.resolve`).
        config: its parsed ``config.json`` (its ``model_type`` names a text record of the table).
        spec: the catalog entry to report; defaults to one built from the id and family.
        device: defaults to CUDA when present, else CPU.
    """

    adapter: HFTextAdapter = resolve(hub_record(config.get("model_type")).adapter)
    shown = quote_input(model_id)
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ModelUnavailableError(
            f"{shown} uses {quote_input(config['position_embedding_type'], 40)} positions, not supported yet."
        )

    api = hf()  # slow import: only here
    cls = api.AutoModelForCausalLM if adapter.family == "decoder" else api.AutoModel
    device = device or pick_device()

    build = sdpa_builder(cls, path, model_id, register())

    try:
        tokenizer = api.AutoTokenizer.from_pretrained(path)
    except Exception as err:  # noqa: BLE001 — any loader error (see hub.sdpa_builder) means this model cannot load
        raise ModelUnavailableError(f"The tokenizer of {shown} cannot be loaded: {error_reason(err)}") from err
    module = build(device)
    if adapter.byte_level is None:  # byte-level BPE (Llama 3, Qwen, GPT-NeoX) or SentencePiece pieces
        adapter = replace(adapter, byte_level=byte_level(tokenizer))
    max_pos = int(config.get("max_position_embeddings") or config.get("n_positions") or 512) - adapter.position_offset
    spec = spec or ModelSpec(id=model_id, family=adapter.family, label=model_id, offline=True)
    return Model(
        spec=spec,
        module=module,
        tokenizer=tokenizer,
        adapter=adapter,
        device=device,
        max_positions=max_pos,
        reload=build,
        info={"source": str(path), "architecture": config.get("model_type")},
        default_causal=adapter.default_causal(module.config),  # read once, before any session uses it
    )
