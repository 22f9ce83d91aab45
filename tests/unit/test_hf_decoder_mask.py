"""BERT-family models configured as decoders are traced with the mask they use themselves.

transformers builds a causal mask for a BERT, RoBERTa or ELECTRA model whose config says
``is_decoder=True`` (and falls back to a bidirectional one when the config also says
``is_causal=False``). Each case is a tiny random model saved with ``save_pretrained`` and loaded
through ``engine.load(folder)``; the references are separate copies loaded by transformers with
``attn_implementation="eager"`` and ``output_attentions=True``:

- ``causal=None``: the decoder's own eager attentions (float32);
- ``causal=False``: the same weights loaded as an *encoder* (``is_decoder=False``) in float64 with
  an all-ones 2D mask, the bidirectional model HF itself builds (an all-ones 2D mask on the decoder
  config stays causal: HF gives a decoder no 2D way to look ahead, checked below).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from tests.hf_helpers import TINY_TEXT

ATOL = 1e-5
MAX_POS = 64
TEXT = "the cat sat on the mat , and the dog watched the cat ."
WORDS = "the cat sat on mat , and dog watched . a it".split()


def _tokenizer(folder: Path):
    from transformers import BertTokenizerFast

    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    return BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)


def _build(kind: str, folder: Path, **flags) -> Path:
    from transformers import BertConfig, BertModel, ElectraConfig, ElectraModel, RobertaConfig, RobertaModel

    folder.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(folder)
    common = dict(vocab_size=len(tok), initializer_range=0.25, pad_token_id=tok.pad_token_id, **TINY_TEXT, **flags)
    if kind == "bert":
        config, cls = BertConfig(max_position_embeddings=MAX_POS, **common), BertModel
    elif kind == "roberta":  # positions start after the padding index
        config, cls = RobertaConfig(max_position_embeddings=MAX_POS + 2, type_vocab_size=1, **common), RobertaModel
    elif kind == "electra":
        config, cls = ElectraConfig(max_position_embeddings=MAX_POS, embedding_size=32, **common), ElectraModel
    else:
        raise ValueError(kind)
    torch.manual_seed(0)
    cls(config).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _eager(folder: Path, dtype=torch.float32, **overrides):
    from transformers import AutoModel

    return AutoModel.from_pretrained(folder, attn_implementation="eager", **overrides).to(dtype).eval()


def _attentions(ref, ids, attention_mask=None) -> list[np.ndarray]:
    with torch.no_grad():
        out = ref(input_ids=torch.tensor([list(ids)]), attention_mask=attention_mask, output_attentions=True)
    return [a[0].double().numpy() for a in out.attentions]


def _assert_equal(tr, atts: list[np.ndarray]) -> None:
    assert tr.n_layers == len(atts) and tr.n_heads == atts[0].shape[0]
    for layer, att in enumerate(atts):
        for head in range(tr.n_heads):
            np.testing.assert_allclose(
                tr.pattern(layer, head), att[head], atol=ATOL, rtol=0, err_msg=f"layer {layer} head {head}"
            )


def _looks_ahead(atts: list[np.ndarray]) -> float:
    return max(float(np.triu(a, 1).sum(axis=(-2, -1)).max()) for a in atts)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hf_decoders")


@pytest.mark.parametrize("kind", ["bert", "roberta", "electra"])
def test_a_bert_family_decoder_is_traced_causal_like_its_own_eager_attention(root: Path, kind: str) -> None:
    folder = _build(kind, root / f"{kind}-decoder", is_decoder=True)
    model = engine.load(str(folder))
    assert model.spec.family == "encoder"  # the architecture; the mask comes from the config
    assert model.default_causal is True
    config_before = dict(model.module.config.to_dict())

    tr = engine.trace(model, TEXT)
    assert tr.causal and len(tr.tokens) == len(TEXT.split()) + 2
    own = _attentions(_eager(folder), tr.tokens.ids)
    assert _looks_ahead(own) == 0.0  # the reference is causal: HF masks the decoder itself
    assert max(float(np.abs(a - a.mean(-1, keepdims=True)).max()) for a in own) > 0.05  # far from uniform
    _assert_equal(tr, own)
    for layer in range(tr.n_layers):
        assert np.all(np.triu(tr.pattern(layer), 1) == 0.0)

    # the toggle off: the same weights as HF's own bidirectional model (an encoder config), float64
    bidirectional = engine.trace(model, TEXT, causal=False)
    assert not bidirectional.causal
    ones = torch.ones(1, len(tr.tokens), dtype=torch.long)
    encoder = _attentions(_eager(folder, torch.float64, is_decoder=False), tr.tokens.ids, ones)
    assert _looks_ahead(encoder) > 0.5
    _assert_equal(bidirectional, encoder)
    # HF offers a decoder no 2D mask that looks ahead: all ones is still causal
    assert _looks_ahead(_attentions(_eager(folder), tr.tokens.ids, ones)) == 0.0

    assert engine.trace(model, TEXT, causal=True).pattern(1).tobytes() == tr.pattern(1).tobytes()
    assert model.module.config.to_dict() == config_before  # the shared config is as it was
    assert all(not m._forward_hooks for m in model.module.modules())


def test_is_causal_false_turns_a_bert_decoder_bidirectional(root: Path) -> None:
    """``create_causal_mask`` falls back to a bidirectional mask when the config says ``is_causal=False``."""
    folder = _build("bert", root / "bert-decoder-not-causal", is_decoder=True, is_causal=False)
    model = engine.load(str(folder))
    assert model.default_causal is False
    tr = engine.trace(model, TEXT)
    assert not tr.causal
    own = _attentions(_eager(folder), tr.tokens.ids)
    assert _looks_ahead(own) > 0.5
    _assert_equal(tr, own)


def test_an_encoder_config_saying_is_causal_is_traced_as_its_eager_path_runs(root: Path) -> None:
    """``is_decoder=False, is_causal=True``: transformers 5.23's eager path ignores ``is_causal`` (SDPA would not)."""
    folder = _build("bert", root / "bert-encoder-is-causal", is_causal=True)
    model = engine.load(str(folder))
    assert model.default_causal is False
    tr = engine.trace(model, TEXT)
    assert not tr.causal
    _assert_equal(tr, _attentions(_eager(folder), tr.tokens.ids))
    blocked = torch.ones(len(tr.tokens), len(tr.tokens), dtype=torch.bool).triu(1)
    additive = torch.zeros(1, 1, *blocked.shape).masked_fill(blocked, torch.finfo(torch.float32).min)
    _assert_equal(engine.trace(model, TEXT, causal=True), _attentions(_eager(folder), tr.tokens.ids, additive))


def test_plain_encoders_and_gpt2_keep_their_defaults(minilm, tiny_gpt2) -> None:
    assert minilm.default_causal is False and tiny_gpt2.default_causal is True
