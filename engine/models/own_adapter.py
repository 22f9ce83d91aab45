"""Loading and tracing the project's own text models from their checkpoints in ``assets/``.

A checkpoint is ``NAME.safetensors`` + ``NAME.json`` + ``NAME.md`` (see
:mod:`engine.checkpoint`). The catalog entries come from the JSON alone
(:func:`engine.registry.own_specs`, no torch import); this module loads and traces.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.model import Model
from engine.models.loading import checkpoint_model
from engine.models.trace_own import trace_own
from engine.models.word_input import decoder_input
from engine.types import AttentionTrace, ModelSpec


@dataclass(frozen=True)
class OwnTextAdapter:
    """Tracing for our own decoder/encoder :class:`~engine.models.transformer.Transformer`.

    Text is split by the word-level :func:`engine.vocab.tokenize`; a ``<bos>`` token leads.
    Words the vocabulary lacks become ``<unk>`` and the trace lists them in a notice.
    """

    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> AttentionTrace:
        inp = decoder_input(text, model.tokenizer, max_tokens, model.max_positions)
        ids, tokens, notices = list(inp.ids), inp.tokens, list(inp.notices)
        trace, device, notice = model.run(
            lambda module, _device: trace_own(module, ids, tokens, model_id=model.spec.id, causal=causal)
        )
        if notice:
            notices.append(notice)
        return dataclasses.replace(
            trace,
            family=model.spec.family,
            truncated=inp.truncated,
            n_input_tokens=inp.n_input,
            device=device.type,
            notices=tuple(notices),
        )


def load_own(spec: ModelSpec, folder: Path, device: torch.device | None = None) -> Model:
    """Load one of our text checkpoints (kind ``transformer``) as a read-only :class:`Model`.

    Raises:
        CheckpointError: a missing, corrupt or mismatched file (readable message).
    """
    model = checkpoint_model(spec, folder, device, adapter=OwnTextAdapter(), architecture="own transformer",
                             max_positions=lambda module: module.cfg.max_len)
    model.default_causal = bool(model.module.cfg.causal)  # what trace_own does with causal=None
    return model
