"""What differs between the Hugging Face text families: one table, ``config.model_type`` → adapter.

Every family here is traced by the same capture path (:class:`~engine.pretrained.adapters.HFTextAdapter`
reading ``transformers.AttentionInterface`` calls); an entry says only what that path cannot read
from the calls themselves. Paths are as in transformers 5.23's modelling code.

- BERT-likes: layers ``encoder.layer``, output projection ``attention.output.dense``, positions
  ``embeddings.position_embeddings``;
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

from engine.pretrained.adapters import HFTextAdapter

BERT_LIKE = HFTextAdapter(
    family="encoder",
    layers_path="encoder.layer",
    out_proj="attention.output.dense",
    pos_path="embeddings.position_embeddings",
    reads_is_decoder=True,
)
DISTILBERT = HFTextAdapter(
    family="encoder",
    layers_path="transformer.layer",
    out_proj="attention.out_lin",
    pos_path="embeddings.position_embeddings",
    caches=False,
)
GPT2 = HFTextAdapter(family="decoder", layers_path="h", out_proj="attn.c_proj", pos_path="wpe", byte_level=True)
#: decoders with rotary positions (Llama, Mistral, Qwen2/3, Phi-3, Gemma 1–3)
ROTARY_DECODER = HFTextAdapter(
    family="decoder",
    layers_path="layers",
    out_proj="self_attn.o_proj",
    pos_path=None,
    pos_encoding_kind="rope",
    byte_level=None,
)
GPT_NEOX = replace(ROTARY_DECODER, out_proj="attention.dense")

#: config.model_type → adapter
ADAPTERS: dict[str, HFTextAdapter] = {
    "bert": BERT_LIKE,
    "roberta": BERT_LIKE,
    "xlm-roberta": BERT_LIKE,
    "camembert": BERT_LIKE,
    "electra": BERT_LIKE,
    "distilbert": DISTILBERT,
    "gpt2": GPT2,
    **{name: ROTARY_DECODER for name in ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text")},
    "gpt_neox": GPT_NEOX,
}
