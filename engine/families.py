"""One record per family of our own models: how a checkpoint of it is built, loaded, traced.

A record names (as ``"module:attribute"`` strings, imported only when used) the pieces one model file
provides:

- ``builder``: ``model_config dict -> freshly initialised nn.Module`` (the checkpoint format builds
  one to check the file's tensors against; raises ``ValueError``/``TypeError`` on a bad config);
- ``loader``: ``(ModelSpec, folder, device) -> engine.model.Model`` (what ``engine.load`` calls);
- ``adapter``: the class ``engine.trace`` dispatches to (``Model.adapter``);
- ``trace_type``: the :mod:`engine.types` class its adapter returns (it follows ``Trace``).

Why strings: listing the catalog reads this table and each checkpoint's JSON without importing torch
(the first page must appear fast), and ``engine.checkpoint`` (the file format, shared by models and
training) reads builders from here instead of importing model code, so neither ``engine.models``
nor the format imports ``engine.training``.

Adding a family is its model file, one record in :data:`RECORDS`, and its test (see docs/DESIGN.md,
"Adding a family"). Hugging Face models are not here: ``engine.pretrained`` loads any supported
architecture from a folder or the Hub with its own per-architecture adapters, not from our checkpoints.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, get_args

from engine.types import Family

#: every catalog family (``ModelSpec.family``); the static type is :data:`engine.types.Family`
FAMILIES: frozenset[str] = frozenset(get_args(Family))


def resolve(path: str) -> Any:
    """The object ``"package.module:attribute"`` names (the module is imported on first use)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class FamilyRecord:
    """One family of our own models, as its checkpoints store it.

    Attributes:
        kind: the ``"kind"`` in ``NAME.json`` (e.g. ``"seq2seq"``).
        families: catalog families its checkpoints may be (``metadata.family``).
        builder, loader, adapter: ``"module:attribute"`` of the builder function, the loader function
            and the adapter class (see the module docstring).
        trace_type: the name of the trace class in :mod:`engine.types` that its adapter returns.
    """

    kind: str
    families: tuple[Family, ...]
    builder: str
    loader: str
    adapter: str
    trace_type: str

    def build(self, config: Any) -> Any:
        """A fresh module from a ``model_config`` dict (imports the family's model file)."""
        return resolve(self.builder)(config)

    def load(self, spec: Any, folder: Any, device: Any = None) -> Any:
        """``engine.model.Model`` of checkpoint ``spec.id`` in ``folder``."""
        return resolve(self.loader)(spec, folder, device)


RECORDS: tuple[FamilyRecord, ...] = (
    FamilyRecord("transformer", ("decoder", "encoder"), builder="engine.models.transformer:build_model",
                 loader="engine.models.own_adapter:load_own", adapter="engine.models.own_adapter:OwnTextAdapter",
                 trace_type="AttentionTrace"),
    FamilyRecord("seq2seq", ("encoder-decoder",), builder="engine.models.seq2seq:build_from_config",
                 loader="engine.models.seq2seq_adapter:load_model",
                 adapter="engine.models.seq2seq_adapter:Seq2SeqAdapter", trace_type="Seq2SeqTrace"),
    FamilyRecord("rnn-attention", ("rnn-attention",), builder="engine.models.bahdanau:build_model",
                 loader="engine.models.bahdanau:load_model", adapter="engine.models.bahdanau:AlignmentAdapter",
                 trace_type="AlignmentTrace"),
    FamilyRecord("vit", ("vit",), builder="engine.models.vit:build_model", loader="engine.models.vit:load_model",
                 adapter="engine.models.vit:ViTAdapter", trace_type="VisionTrace"),
)  # fmt: skip

#: checkpoint kind → its record
KINDS: dict[str, FamilyRecord] = {record.kind: record for record in RECORDS}
