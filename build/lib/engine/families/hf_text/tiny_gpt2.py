"""``tiny-random-gpt2``: a small, randomly initialised GPT-2 with a tokenizer built here.

It exists so the decoder path works offline before our own trained decoder lands: real GPT-2
modelling code from transformers, real byte-level BPE tokenization (``Ġ`` markers and all), but
random weights (seeded, so every machine gets the same model). Its patterns are not meaningful.
It reads up to 16,384 tokens, so the long-input views (``AttentionTrace.overview``) can be tried
offline.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.builds import BUILD_LOCK
from engine.capture.hf import register
from engine.families import hub_record, resolve
from engine.families.hf_api import hf
from engine.model import Model, freeze, pick_device
from engine.records import ModelSpec

SEED = 0
VOCAB_SIZE = 1024
EOS = "<|endoftext|>"
MAX_POSITIONS = 16384  # long-input views need a long-context model that exists offline

# A small corpus written for this project; the tokenizer's merges are learned from it.
CORPUS = """
The cat sat on the mat because it was tired. The dog chased the ball across the garden.
A teacher explains attention to the class, and the students watch the heads light up.
Lily found a red ball. She gave it to Tom, who threw it over the fence.
The animal didn't cross the street because it was too wide. The trophy didn't fit in the suitcase.
Transformers read every word at once and decide, for each word, which other words matter.
Queries ask, keys answer, and values carry what is passed along. Softmax turns scores into weights.
In the morning the sun rose over the hills; by the evening the rain had washed the streets clean.
Numbers like 1, 2, 3 and dates like 21 November 2026 appear in stories too.
""".strip()


def build_tokenizer():
    """Train a byte-level BPE tokenizer on the built-in corpus (deterministic)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS.splitlines(), trainer=trainer)
    return hf().PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, bos_token=EOS, unk_token=EOS)


def load_tiny_random_gpt2(spec: ModelSpec, device: torch.device | None = None) -> Model:
    """Build the model for its catalog entry ``spec``: 4 layers, 4 heads, d_model 128, 16,384 positions, seeded
    random weights."""
    api = hf()
    tokenizer = build_tokenizer()
    config = api.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=MAX_POSITIONS,
        n_embd=128,
        n_layer=4,
        n_head=4,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        attn_implementation=register(),  # SDPA that records Q, K, V for a trace
    )
    device = device or pick_device()

    def build(dev: torch.device) -> nn.Module:
        with BUILD_LOCK:  # the seed and the weights drawn from it are this build's alone (engine.builds)
            torch.manual_seed(SEED)
            return freeze(api.GPT2LMHeadModel(config).to(dev))

    return Model(
        spec=spec,
        module=build(device),
        tokenizer=tokenizer,
        adapter=resolve(hub_record("gpt2").adapter),  # GPT-2 code, GPT-2 settings
        device=device,
        max_positions=config.n_positions,
        reload=build,
        info={"source": "built from a config", "architecture": "gpt2"},
    )
