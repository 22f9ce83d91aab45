"""Every model family the engine reads, in one table: our own checkpoints and Hugging Face models alike.

A family is one :class:`FamilyRecord`: its key (the ``"kind"`` of our checkpoint's ``NAME.json``, or a
Hugging Face ``config.model_type``), the catalog families its models are (``ModelSpec.family``), and,
as ``"module:attribute"`` strings imported only when used, the pieces one family module provides:

- ``loader``: what ``engine.load`` calls. Own: ``(ModelSpec, folder, device) -> engine.model.Model``;
  Hugging Face: ``(model_id, folder, config dict, *, spec, device) -> Model``;
- ``adapter``: what ``engine.trace`` dispatches to (``Model.adapter``): our adapter classes, a Hugging
  Face text family's :class:`~engine.families.hf_text.adapter.HFTextAdapter` settings, or the adapter class
  of the Hugging Face encoder-decoders and ViTs;
- ``trace_type``: the name of the :mod:`engine.traces` class its adapter returns (it follows ``Trace``);
- ``builder`` (own only): ``model_config dict -> freshly initialised nn.Module`` (the checkpoint format
  builds one to check the file's tensors against).

The code that differs lives next to this table, one file (or folder) per family: ours are
``transformer/`` (decoders and encoders), ``seq2seq/`` (the translator), ``bahdanau.py`` (GRUs with additive
or dot attention), ``vit/`` and ``captioner.py``, sharing ``own.py`` (configs, checkpoint loading); the Hugging
Face ones are ``hf_text/`` (BERT-likes, GPT-2, the rotary decoders), ``hf_seq2seq.py`` (T5, BART, Marian),
``hf_vit.py`` (ViT, DeiT), ``hf_swin.py`` (Swin: windowed attention, its own trace type) and ``hf_caption.py``
(ViT + GPT-2 and BLIP captioners: cross-attention over the image's patches), sharing ``hub.py`` (folders, Hub
ids, the server's policy), ``hf_api.py`` (the one locked import of transformers) and :mod:`engine.capture.hf`
(one capture path). Everything that needs a list of
families reads it from here: the checkpoint format and the catalog (:data:`KINDS`),
:func:`engine.families.hub.load_hf` (:func:`hub_record`), the encoder-decoders' position kinds
(:attr:`FamilyRecord.positions`) and the pages' model pickers (:func:`text_families`).

Why strings: listing the catalog reads this table and each checkpoint's JSON without importing torch
(the first page must appear fast), and ``engine.checkpoint`` (the file format, shared by models and
training) reads builders from here instead of importing model code.

Adding a family is its module (or a settings object in one), one record in :data:`TABLE`, and its test
(see docs/DESIGN.md, "Adding a family").
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal, get_args

from engine.records import Family

#: every catalog family (``ModelSpec.family``); the static type is :data:`engine.records.Family`
FAMILIES: frozenset[str] = frozenset(get_args(Family))

#: trace types the text pages (Explore, Heads, Step by step, …) draw: layers × heads over a sentence
TEXT_TRACES = ("AttentionTrace", "Seq2SeqTrace")


def resolve(path: str) -> Any:
    """The object ``"package.module:attribute"`` names (the module is imported on first use)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class FamilyRecord:
    """One family of models (see the module docstring for what each piece is called with).

    Attributes:
        key: own: the checkpoint's ``"kind"`` (``"seq2seq"``); Hugging Face: ``config.model_type``.
        source: ``"own"`` (our checkpoints in ``assets/checkpoints``) or ``"hf"`` (a folder or Hub id).
        families: catalog families its models may be (``ModelSpec.family``).
        loader, adapter: ``"module:attribute"`` of the loader function and the adapter.
        trace_type: the name of the trace class (:mod:`engine.traces`) that its adapter returns.
        label: the family's name for people ("RoBERTa"), in help texts and messages.
        builder: own only: ``"module:attribute"`` of the builder function.
        positions: Hugging Face encoder-decoders: how the encoder encodes positions (``"relative"``:
            a bias on the scores, ``"learned"`` or ``"sinusoidal"``: a table added to the input).
    """

    key: str
    source: Literal["own", "hf"]
    families: tuple[Family, ...]
    loader: str
    adapter: str
    trace_type: str
    label: str
    builder: str | None = None
    positions: str | None = None

    @property
    def kind(self) -> str:
        """An own checkpoint's ``"kind"`` (the key; the name the checkpoint format uses)."""
        return self.key

    def build(self, config: Any) -> Any:
        """A fresh module from a ``model_config`` dict (own families; imports the family's model file)."""
        if self.builder is None:
            raise TypeError(f"{self.key} models are not built from our checkpoints")
        return resolve(self.builder)(config)

    def load(self, *args: Any, **kwargs: Any) -> Any:
        """``engine.model.Model`` through the family's loader (own: ``(spec, folder, device)``; Hugging
        Face: ``(model_id, folder, config, *, spec, device)``)."""
        return resolve(self.loader)(*args, **kwargs)


_TEXT, _S2S, _VIT = "engine.families.hf_text.settings", "engine.families.hf_seq2seq", "engine.families.hf_vit"


def _hf_text(model_type: str, family: Family, settings: str, label: str) -> FamilyRecord:
    return FamilyRecord(
        model_type, "hf", (family,), f"{_TEXT}:load_hf_text", f"{_TEXT}:{settings}", "AttentionTrace", label
    )


def _hf_seq2seq(model_type: str, positions: str, label: str) -> FamilyRecord:
    return FamilyRecord(
        model_type,
        "hf",
        ("encoder-decoder",),
        f"{_S2S}:load_hf_seq2seq",
        f"{_S2S}:Seq2SeqHFAdapter",
        "Seq2SeqTrace",
        label,
        positions=positions,
    )


def _hf_vit(model_type: str, label: str) -> FamilyRecord:
    return FamilyRecord(model_type, "hf", ("vit",), f"{_VIT}:load_hf_vit", f"{_VIT}:HFViTAdapter", "VisionTrace", label)


def _hf_captioner(model_type: str, kind: str, label: str) -> FamilyRecord:
    return FamilyRecord(
        model_type,
        "hf",
        ("captioner",),
        "engine.families.hf_caption:load_hf_captioner",
        f"engine.families.hf_caption:{kind.upper()}",
        "PatchCaptionTrace",
        label,
    )


#: THE table: every family, once (checked by tests/unit/test_families.py)
TABLE: tuple[FamilyRecord, ...] = (
    # ---- our own checkpoints ------------------------------------------------------------------------------
    FamilyRecord(
        "transformer",
        "own",
        ("decoder", "encoder"),
        "engine.families.transformer.adapter:load_own",
        "engine.families.transformer.adapter:OwnTextAdapter",
        "AttentionTrace",
        "our transformer",
        builder="engine.families.transformer.network:build_model",
    ),
    FamilyRecord(
        "seq2seq",
        "own",
        ("encoder-decoder",),
        "engine.families.seq2seq.adapter:load_model",
        "engine.families.seq2seq.adapter:Seq2SeqAdapter",
        "Seq2SeqTrace",
        "our translator",
        builder="engine.families.seq2seq.network:build_from_config",
    ),
    FamilyRecord(
        "rnn-attention",
        "own",
        ("rnn-attention",),
        "engine.families.bahdanau:load_model",
        "engine.families.bahdanau:AlignmentAdapter",
        "AlignmentTrace",
        "our GRU with Bahdanau attention",
        builder="engine.families.bahdanau:build_model",
    ),
    FamilyRecord(
        "vit",
        "own",
        ("vit",),
        "engine.families.vit.adapter:load_model",
        "engine.families.vit.adapter:ViTAdapter",
        "VisionTrace",
        "our ViT",
        builder="engine.families.vit.network:build_model",
    ),
    FamilyRecord(
        "captioner",
        "own",
        ("captioner",),
        "engine.families.captioner:load_model",
        "engine.families.captioner:CaptionAdapter",
        "CaptionTrace",
        "our image captioner with soft attention",
        builder="engine.families.captioner:build_model",
    ),
    # ---- Hugging Face text models (hf_text/settings.py) ---------------------------------------------------
    _hf_text("bert", "encoder", "BERT_LIKE", "BERT"),
    _hf_text("roberta", "encoder", "ROBERTA_LIKE", "RoBERTa"),
    _hf_text("xlm-roberta", "encoder", "ROBERTA_LIKE", "XLM-R"),
    _hf_text("camembert", "encoder", "ROBERTA_LIKE", "CamemBERT"),
    _hf_text("electra", "encoder", "BERT_LIKE", "ELECTRA"),
    _hf_text("distilbert", "encoder", "DISTILBERT", "DistilBERT"),
    _hf_text("gpt2", "decoder", "GPT2", "GPT-2"),
    _hf_text("llama", "decoder", "ROTARY_DECODER", "Llama"),
    _hf_text("mistral", "decoder", "ROTARY_DECODER", "Mistral"),
    _hf_text("qwen2", "decoder", "ROTARY_DECODER", "Qwen2"),
    _hf_text("qwen3", "decoder", "ROTARY_DECODER", "Qwen3"),
    _hf_text("phi3", "decoder", "ROTARY_DECODER", "Phi-3"),
    _hf_text("gemma", "decoder", "ROTARY_DECODER", "Gemma"),
    _hf_text("gemma2", "decoder", "ROTARY_DECODER", "Gemma 2"),
    _hf_text("gemma3_text", "decoder", "ROTARY_DECODER", "Gemma 3"),
    _hf_text("gpt_neox", "decoder", "GPT_NEOX", "GPT-NeoX"),
    _hf_text("gpt_oss", "decoder", "ROTARY_DECODER", "gpt-oss"),
    # ---- Hugging Face encoder-decoders (hf_seq2seq.py) ----------------------------------------------------
    _hf_seq2seq("t5", "relative", "T5"),
    _hf_seq2seq("mt5", "relative", "mT5"),
    _hf_seq2seq("bart", "learned", "BART"),
    _hf_seq2seq("marian", "sinusoidal", "Marian"),
    # ---- Hugging Face vision models (hf_vit.py, hf_swin.py) -----------------------------------------------
    _hf_vit("vit", "ViT"),
    _hf_vit("deit", "DeiT"),
    FamilyRecord(
        "swin",
        "hf",
        ("vit",),
        "engine.families.hf_swin:load_hf_swin",
        "engine.families.hf_swin:HFSwinAdapter",
        "WindowTrace",
        "Swin",
    ),
    # ---- Hugging Face captioners (hf_caption.py) ----------------------------------------------------------
    _hf_captioner("vision-encoder-decoder", "ved", "ViT + GPT-2 captioner"),
    _hf_captioner("blip", "blip", "BLIP"),
)

#: own checkpoints' records, in table order (the checkpoint format and the catalog read these)
RECORDS: tuple[FamilyRecord, ...] = tuple(r for r in TABLE if r.source == "own")
#: checkpoint kind → its record
KINDS: dict[str, FamilyRecord] = {r.key: r for r in RECORDS}
#: Hugging Face ``config.model_type`` → its record
HUB_TYPES: dict[str, FamilyRecord] = {r.key: r for r in TABLE if r.source == "hf"}


def own_record(kind: str) -> FamilyRecord | None:
    """The record of our checkpoints of ``kind`` (``NAME.json``'s ``"kind"``), or None."""
    return KINDS.get(kind)


def hub_record(model_type: str) -> FamilyRecord | None:
    """The record of Hugging Face models whose ``config.model_type`` is ``model_type``, or None."""
    return HUB_TYPES.get(model_type)


def text_families() -> frozenset[str]:
    """Catalog families the text pages draw (layers × heads over a sentence: not the ViT's images, not the
    RNN's single alignment): what their model pickers offer."""
    table, found = _TEXT_FAMILIES
    if table is not TABLE:  # once per table (every page run asks: the model picker)
        found = frozenset(f for r in TABLE if r.trace_type in TEXT_TRACES for f in r.families)
        _TEXT_FAMILIES[:] = [TABLE, found]
    return found


_TEXT_FAMILIES: list = [None, frozenset()]  # (the table it was read from, its text families)


def hub_labels(*families: str) -> tuple[str, ...]:
    """People's names of the Hugging Face families whose models are one of ``families`` (all: none given), in
    table order and once each: what a model field's help lists."""
    labels = [r.label for r in TABLE if r.source == "hf" and (not families or set(r.families) & set(families))]
    return tuple(dict.fromkeys(labels))
