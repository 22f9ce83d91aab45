"""Tiny random Hugging Face text models for the parity tests (tests/unit/test_hf_parity.py, test_hf_capture.py).

``build(kind, folder)`` saves one model of ``KINDS`` with its tokenizer (trained offline, no
downloads); the helpers below compare an engine trace with the model's own eager
``output_attentions``. The models use a large ``initializer_range`` so their patterns are far from
uniform: a wrong scale or a mask in the wrong place would not hide inside near-uniform rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

ATOL = 1e-5
MAX_POS = 128  # position table of the tiny models
#: the tiny BERT-like text models' sizes (their configs' names): 2 layers × 4 heads, width 32, MLP 64
TINY_TEXT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)

_TRAIN_TEXT = [
    "The cat sat on the mat.",
    "The quick brown fox jumps over the lazy dog, and the cat watches it.",
    "Attention is all you need, they said; queries, keys and values!",
    "Héllo wörld, naïve café. 東京 is a big city. Numbers 1 2 3.",
    "A teacher explains attention to the class, and the students watch.",
]


# ---- building the tiny models ----------------------------------------------------------------
def wordpiece_tokenizer():
    """A small WordPiece (BERT-style) tokenizer trained on a few sentences."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=300, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False
    )
    tok.train_from_iterator(_TRAIN_TEXT * 3, trainer=trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def build(kind: str, folder: Path) -> None:
    """Save a tiny random model of ``kind`` (one of :data:`KINDS`) and its tokenizer to ``folder``."""
    from transformers import (
        BertConfig,
        BertModel,
        CamembertConfig,
        CamembertModel,
        DistilBertConfig,
        DistilBertModel,
        ElectraConfig,
        ElectraModel,
        GPT2Config,
        GPT2LMHeadModel,
        RobertaConfig,
        RobertaModel,
        XLMRobertaConfig,
        XLMRobertaModel,
    )

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    init = 0.25  # peaked, non-uniform random attention
    if kind.startswith("gpt2"):
        tokenizer = build_tokenizer()
        extra = {
            "gpt2": {},
            "gpt2-layerscale": {"scale_attn_by_inverse_layer_idx": True},
            "gpt2-unscaled": {"scale_attn_weights": False},
            # only eager reads it (scores in float32, scaled before the matmul): the same math in float32
            "gpt2-upcast": {"reorder_and_upcast_attn": True, "scale_attn_by_inverse_layer_idx": True},
        }[kind]
        config = GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=MAX_POS,
            n_embd=32,
            n_layer=2,
            n_head=4,
            initializer_range=init,
            bos_token_id=tokenizer.eos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            **extra,
        )
        cls = GPT2LMHeadModel
    else:
        tokenizer = wordpiece_tokenizer()
        common = dict(vocab_size=len(tokenizer), initializer_range=init, pad_token_id=tokenizer.pad_token_id)
        if kind == "bert":
            config, cls = BertConfig(max_position_embeddings=MAX_POS, **TINY_TEXT, **common), BertModel
        elif family(kind) == "roberta":
            # RoBERTa's positions start after the padding index: the table has 2 more rows.
            config_cls, cls = {
                "roberta": (RobertaConfig, RobertaModel),
                "xlm-roberta": (XLMRobertaConfig, XLMRobertaModel),
                "camembert": (CamembertConfig, CamembertModel),
            }[kind]
            config = config_cls(max_position_embeddings=MAX_POS + 2, type_vocab_size=1, **TINY_TEXT, **common)
        elif kind == "electra":  # embeddings of 16 dims projected to the hidden 32
            config = ElectraConfig(embedding_size=16, max_position_embeddings=MAX_POS, **TINY_TEXT, **common)
            cls = ElectraModel
        elif kind == "distilbert":
            config, cls = (
                DistilBertConfig(
                    dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=MAX_POS, **common
                ),
                DistilBertModel,
            )
        else:
            raise ValueError(kind)
    torch.manual_seed(0)
    model = cls(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


KINDS = (
    "bert",
    "roberta",
    "xlm-roberta",
    "camembert",
    "electra",
    "distilbert",
    "gpt2",
    "gpt2-layerscale",
    "gpt2-unscaled",
    "gpt2-upcast",
)


def tiny_llama(vocab_size: int, eos_id: int, **overrides):
    """A tiny random Llama's config: :data:`TINY_TEXT` with grouped-query attention (2 key/value heads for the 4
    query heads), 64 positions, peaked random weights; ``eos_id`` also its bos and pad; ``overrides`` on top."""
    from transformers import LlamaConfig

    ids = dict(vocab_size=vocab_size, bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id)
    settings = dict(num_key_value_heads=2, max_position_embeddings=64, initializer_range=0.25, **TINY_TEXT, **ids)
    return LlamaConfig(**{**settings, **overrides})


def save_image_processor(folder: Path, side: int, processor: str = "ViTImageProcessor") -> None:
    """A tiny vision model's image processor (``processor``, a transformers class) into ``folder``: ``side``×``side``
    pixels, normalised with a mean and spread of their own (not ImageNet's: a processor read wrongly shows)."""
    import transformers

    normalise = dict(image_mean=[0.4, 0.5, 0.6], image_std=[0.2, 0.3, 0.25])
    getattr(transformers, processor)(size={"height": side, "width": side}, **normalise).save_pretrained(folder)


#: the tiny ViT / DeiT's shape: 16×16 pixels in patches of 4, 2 layers × 4 heads, width 32, peaked random weights
TINY_VIT = dict(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
VIT_LABELS = {0: "cat", 1: "dog", 2: "<b>fish</b>"}


def save_tiny_vit(folder: Path, kind: str) -> Path:
    """Save a tiny random ``kind`` ("vit", "deit": distilled, with [DIST]; "vit-base": no classifier) with 3 labels
    and its image processor into ``folder``."""
    import transformers as hf

    labels = dict(num_labels=3, id2label=VIT_LABELS, label2id={v: k for k, v in VIT_LABELS.items()})
    settings = dict(intermediate_size=48, initializer_range=0.5, **TINY_VIT, **labels)
    torch.manual_seed(0)
    if kind == "deit":
        model = hf.DeiTForImageClassificationWithTeacher(hf.DeiTConfig(**settings))
    elif kind == "vit":
        model = hf.ViTForImageClassification(hf.ViTConfig(**settings))
    else:
        model = hf.ViTModel(hf.ViTConfig(**settings), add_pooling_layer=False)
    model.save_pretrained(folder)
    save_image_processor(folder, 16)
    return folder


def photo(height: int, width: int, seed: int = 0) -> np.ndarray:
    """Random RGB pixels (uint8) of a size no tiny vision model takes: its processor resizes them."""
    return np.random.default_rng(seed).integers(0, 256, size=(height, width, 3), dtype=np.uint8)


def traced_photo(folder: Path, height: int, width: int) -> tuple:
    """``engine.load(folder)`` (its attention recorded by ``ap_capture``: checked) and its trace of a :func:`photo`:
    ``(model, photo, trace)``."""
    import engine

    model = engine.load(str(folder))
    assert model.module.config._attn_implementation == "ap_capture"
    image = photo(height, width)
    return model, image, engine.trace(model, image)


def family(kind: str) -> str:
    """The kind whose layout ``kind`` shares: ``"gpt2"`` for every GPT-2 variant, ``"roberta"`` for
    XLM-R and CamemBERT (RoBERTa's modelling code under other names), else the kind itself."""
    if kind.startswith("gpt2"):
        return "gpt2"
    return "roberta" if kind in ("xlm-roberta", "camembert") else kind


def build_all(root: Path) -> dict[str, Path]:
    """Every kind of :data:`KINDS` saved under ``root`` (one folder each)."""
    for kind in KINDS:
        build(kind, root / kind)
    return {kind: root / kind for kind in KINDS}


_LOADED: dict[str, tuple] = {}


def engine_and_eager(kind: str, folders: dict[str, Path]) -> tuple:
    """``(engine model, a separate eager copy)`` of ``folders[kind]``, loaded once per folder for the session
    (both read-only)."""
    key = str(folders[kind])
    if key not in _LOADED:
        from transformers import AutoModel, AutoModelForCausalLM

        import engine

        cls = AutoModelForCausalLM if family(kind) == "gpt2" else AutoModel
        ref = cls.from_pretrained(folders[kind], attn_implementation="eager").eval()
        _LOADED[key] = (engine.load(key), ref)
    return _LOADED[key]


# ---- comparing with the model's own attentions ------------------------------------------------
def reference_attentions(ref, ids, attention_mask=None) -> list[np.ndarray]:
    with torch.no_grad():
        out = ref(input_ids=torch.tensor([list(ids)]), attention_mask=attention_mask, output_attentions=True)
    assert out.attentions is not None and len(out.attentions) > 0
    return [a[0].float().numpy() for a in out.attentions]


def assert_parity(tr, atts: list[np.ndarray]) -> None:
    assert tr.n_layers == len(atts)
    assert tr.n_heads == atts[0].shape[0]
    n = len(tr.tokens)
    for layer, att in enumerate(atts):
        assert att.shape[-2:] == (n, n)
        for head in range(tr.n_heads):
            np.testing.assert_allclose(
                tr.pattern(layer, head), att[head], atol=ATOL, rtol=0, err_msg=f"layer {layer} head {head}"
            )


def assert_not_uniform(atts: list[np.ndarray]) -> None:
    """The comparison means something only if the patterns are not (close to) uniform rows."""
    spread = max(float(np.abs(a - a.mean(axis=-1, keepdims=True)).max()) for a in atts)
    assert spread > 0.05, f"reference patterns are nearly uniform (max deviation {spread:.3g})"


def assert_equals_eager(tr, ref, attention_mask=None, *, peaked: bool = False) -> list[np.ndarray]:
    """Every head of trace ``tr`` equals the eager model ``ref``'s own attentions on ``tr``'s ids (with
    ``attention_mask``) to :data:`ATOL`; ``peaked``: eager's patterns are first checked far from uniform.
    Returns eager's attentions."""
    atts = reference_attentions(ref, tr.tokens.ids, attention_mask=attention_mask)
    if peaked:
        assert_not_uniform(atts)
    assert_parity(tr, atts)
    return atts


def additive_causal_mask(n: int) -> torch.Tensor:
    blocked = torch.ones(n, n, dtype=torch.bool).triu(1)
    return torch.zeros(1, 1, n, n).masked_fill(blocked, torch.finfo(torch.float32).min)
