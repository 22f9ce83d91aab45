"""Loading and tracing the project's own text models from their checkpoints in ``assets/``.

A checkpoint is ``NAME.safetensors`` + ``NAME.json`` + ``NAME.md`` (see
:mod:`engine.training.checkpoint`). The catalog entries come from the JSON alone
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
from engine.text import clean_input
from engine.training.vocab import BOS_ID, UNK_ID, tokenize
from engine.types import AttentionTrace, EngineError, ModelSpec

MAX_UNKNOWN_LISTED = 8


@dataclass(frozen=True)
class OwnTextAdapter:
    """Tracing for our own decoder/encoder :class:`~engine.models.transformer.Transformer`.

    Text is split by the word-level :func:`engine.training.vocab.tokenize`; a ``<bos>`` token leads.
    Words the vocabulary lacks become ``<unk>`` and the trace lists them in a notice.
    """

    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> AttentionTrace:
        text, cut_chars = clean_input(text)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 2:
            raise EngineError(f"max_tokens must be a whole number of at least 2, got {max_tokens!r}.")
        vocab = model.tokenizer
        words = tokenize(text)
        if not words:
            raise EngineError("The text has no words this model can read.")
        ids_all = [BOS_ID, *vocab.encode(words)]
        notices: list[str] = []
        limit = min(max_tokens, model.max_positions)
        if max_tokens > model.max_positions and len(ids_all) > limit:
            notices.append(f"This model reads at most {model.max_positions} tokens; the limit was lowered to that.")
        ids = ids_all[:limit]
        unknown = list(dict.fromkeys(w for w, i in zip(words, ids_all[1:limit]) if i == UNK_ID))
        if unknown:
            shown = ", ".join(unknown[:MAX_UNKNOWN_LISTED]) + (" …" if len(unknown) > MAX_UNKNOWN_LISTED else "")
            notices.append(f"Words this model never saw in training are shown as <unk>: {shown}.")
        if len(ids_all) > limit:
            notices.append(f"The text has {len(ids_all)} tokens; only the first {limit} were traced.")
        elif cut_chars:
            notices.append("The text was very long and was cut before tokenizing.")
        tokens = vocab.tokens_for_display(ids)
        trace, device, notice = model.run(
            lambda module, _device: trace_own(module, ids, tokens, model_id=model.spec.id, causal=causal)
        )
        if notice:
            notices.append(notice)
        return dataclasses.replace(
            trace,
            family=model.spec.family,
            truncated=len(ids_all) > limit,
            n_input_tokens=len(ids_all),
            device=device.type,
            notices=tuple(notices),
        )


def load_own(spec: ModelSpec, folder: Path, device: torch.device | None = None) -> Model:
    """Load one of our text checkpoints (kind ``transformer``) as a read-only :class:`Model`.

    Raises:
        CheckpointError: a missing, corrupt or mismatched file (readable message).
    """
    return checkpoint_model(spec, folder, device, adapter=OwnTextAdapter(), architecture="own transformer",
                            max_positions=lambda module: module.cfg.max_len)
