"""Tiny random pretrained captioners saved locally (tests/unit/test_caption_hf.py, tests/app/test_caption_hf_page.py).

Two families, each a folder with ``config.json``, safetensors weights, a tokenizer and an image processor, built
here from configs (no download):

- ``save_tiny_ved``: a ``VisionEncoderDecoderModel``, ViT encoder (32×32 pixels in 8-pixel patches: [CLS] + a 4×4
  grid, 2 layers × 2 heads, width 32) and GPT-2 decoder with cross-attention (2 layers × 4 heads, width 48, so the
  encoder's states go through ``enc_to_dec_proj``);
- ``save_tiny_blip``: a ``BlipForConditionalGeneration`` (vision: 32×32 in 8-pixel patches, width 48, 2 heads; text
  decoder: 2 layers × 4 heads, width 32).

The tokenizer is a word-level one over a few caption words, wrapped as a ``PreTrainedTokenizerFast`` (what
``AutoTokenizer`` loads back from ``tokenizer.json``). Weights are seeded; ``initializer_range`` 0.2 keeps the
cross-attention far from uniform, so a parity test that mixed up heads or positions would fail.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tests.hf_helpers import TINY_TEXT, save_image_processor

WORDS = (
    "a",
    "red",
    "blue",
    "green",
    "small",
    "large",
    "circle",
    "square",
    "triangle",
    "above",
    "below",
    "left",
    "of",
    "right",
    "the",
    "cat",
    "on",
    "mat",
)
SPECIALS = ("[PAD]", "[BOS]", "[EOS]", "[UNK]")  # ids 0–3
#: both captioners' vision side but its width: 32×32 pixels in 8-pixel patches, 2 layers × 2 heads
VISION = dict(
    image_size=32, patch_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, initializer_range=0.2
)


def save_tokenizer(folder: Path):
    """A word-level tokenizer: ids 0–3 the specials, then :data:`WORDS`; saved into ``folder``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate((*SPECIALS, *WORDS))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]", unk_token="[UNK]"
    )
    fast.save_pretrained(folder)
    return fast


def save_tiny_ved(folder: Path, *, seed: int = 0) -> Path:
    """Save a tiny random ViT + GPT-2 ``VisionEncoderDecoderModel`` with its tokenizer and image processor."""
    from transformers import GPT2Config, VisionEncoderDecoderConfig, VisionEncoderDecoderModel, ViTConfig

    tok = save_tokenizer(folder)
    encoder = ViTConfig(hidden_size=32, **VISION)
    sizes = dict(n_positions=40, n_embd=48, n_layer=2, n_head=4, initializer_range=0.2)
    ids = dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    decoder = GPT2Config(vocab_size=len(tok), is_decoder=True, add_cross_attention=True, **sizes, **ids)
    config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    config.decoder_start_token_id = tok.bos_token_id
    config.pad_token_id = tok.pad_token_id
    config.eos_token_id = tok.eos_token_id
    torch.manual_seed(seed)
    VisionEncoderDecoderModel(config=config).save_pretrained(folder)
    save_image_processor(folder, 32)
    return folder


def save_tiny_blip(folder: Path, *, seed: int = 0) -> Path:
    """Save a tiny random ``BlipForConditionalGeneration`` with its tokenizer and image processor."""
    from transformers import BlipConfig, BlipForConditionalGeneration

    tok = save_tokenizer(folder)
    text = dict(
        vocab_size=len(tok),
        **TINY_TEXT,
        max_position_embeddings=40,
        initializer_range=0.2,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        sep_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = dict(hidden_size=48, **VISION)
    config = BlipConfig(text_config=text, vision_config=vision)
    torch.manual_seed(seed)
    BlipForConditionalGeneration(config).save_pretrained(folder)
    save_image_processor(folder, 32, "BlipImageProcessor")
    return folder
