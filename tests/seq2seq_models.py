"""Tiny random T5, BART and Marian models with offline tokenizers, saved like Hub downloads (for tests).

The tokenizer is a Metaspace BPE trained on four sentences (English and French), wrapped as a
``PreTrainedTokenizerFast`` with T5/Marian's ``… </s>`` or BART's ``<s> … </s>`` template. Weights
are drawn larger than the default init, so patterns are far from uniform.
"""

from __future__ import annotations

from pathlib import Path

import torch

MAX_POS = 48
_CORPUS = ["the cat sat on the mat", "le chat est assis sur le tapis", "the house is small", "la maison est petite"]


def tokenizer(kind: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.Metaspace(), decoders.Metaspace()
    special = ["<pad>", "</s>", "<unk>", "<s>"]
    tok.train_from_iterator(
        _CORPUS * 4, trainers.BpeTrainer(vocab_size=90, special_tokens=special, show_progress=False)
    )
    single = "<s> $A </s>" if kind == "bart" else "$A </s>"  # BART wraps the source; T5 and Marian end it
    tok.post_processor = processors.TemplateProcessing(single=single, special_tokens=[("<s>", 3), ("</s>", 1)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>", bos_token="<s>"
    )


def module(kind: str, vocab: int):
    import transformers as tf

    ids = dict(vocab_size=vocab, pad_token_id=0, eos_token_id=1)
    if kind == "t5":
        sizes = dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=3, num_heads=4)
        # relative position buckets shorter than the long input: far keys share a bucket
        buckets = dict(relative_attention_num_buckets=8, relative_attention_max_distance=16)
        return tf.T5ForConditionalGeneration(tf.T5Config(decoder_start_token_id=0, **sizes, **buckets, **ids))
    sides = dict(encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4)
    sizes = dict(d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=MAX_POS, **sides)
    if kind == "bart":
        return tf.BartForConditionalGeneration(tf.BartConfig(bos_token_id=3, decoder_start_token_id=1, **sizes, **ids))
    return tf.MarianMTModel(tf.MarianConfig(decoder_start_token_id=0, **sizes, **ids))


def save_tiny_seq2seq(kind: str, folder: Path) -> Path:
    """Build ``kind`` ("t5", "bart", "marian") with seeded random weights and ``save_pretrained`` it to ``folder``."""
    tok = tokenizer(kind)
    torch.manual_seed(0)
    model = module(kind, len(tok))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
