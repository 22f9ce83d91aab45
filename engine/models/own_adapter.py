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

from engine.families.own import checkpoint_model
from engine.model import Model
from engine.models.trace_own import trace_own
from engine.models.word_input import decoder_input
from engine.records import EngineError, ModelSpec
from engine.traces.attention import AttentionTrace


def words_of(model: Model):
    """How ``model`` splits text: :func:`~engine.vocab.tokenize`, keeping ``[MASK]`` as one token for a
    masked-LM model (one whose vocabulary has :data:`~engine.vocab.MASK`), or one token per character
    (spaces dropped) for a model whose every own token is one character (``induction-2l-attn-only``'s letters)."""
    from engine.vocab import MASK, SPECIALS, tokenize, tokenize_with_masks

    if MASK in model.tokenizer:
        return tokenize_with_masks
    own = model.tokenizer.tokens[len(SPECIALS) :]
    return characters if own and all(len(t) == 1 for t in own) else tokenize


def characters(text: str) -> list[str]:
    """One token per visible character, lowercased: ``"Ab c"`` → ``["a", "b", "c"]``."""
    return [c for c in text.lower() if not c.isspace()]


@dataclass(frozen=True)
class OwnTextAdapter:
    """Tracing for our own decoder/encoder :class:`~engine.models.transformer.Transformer`.

    Text is split by the word-level :func:`engine.vocab.tokenize`; a ``<bos>`` token leads.
    Words the vocabulary lacks become ``<unk>`` and the trace lists them in a notice.
    """

    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> AttentionTrace:
        inp = decoder_input(text, model.tokenizer, max_tokens, model.max_positions, split=words_of(model))
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

    def generate(self, model: Model, prompt: str, settings, *, max_tokens: int) -> AttentionTrace:
        """Write up to ``settings.max_new_tokens`` words after ``prompt``; the trace of prompt + words.

        The model has no key/value cache and at most a few hundred positions, so each step re-runs the
        whole sequence (``sdpa``, no capture); one traced pass at the end captures Q, K, V. Each step and
        the traced pass take the model's lock on their own (a page tracing this model waits for one of
        them, not for the whole continuation). ``<eos>`` ends the loop early and is kept as the last token.
        """
        from engine.decoding import NEEDS_DECODER, decode_loop, generation_notice, room_for
        from engine.vocab import EOS_ID

        if model.spec.family != "decoder" or not model.default_causal:
            raise EngineError(NEEDS_DECODER)
        inp = decoder_input(prompt, model.tokenizer, max_tokens, model.max_positions, split=words_of(model))
        n_new = room_for(len(inp.ids), settings, model.max_positions)
        notices: list[str] = []

        def step(ids: list[int]):
            def last_scores(module, device: torch.device):
                x = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
                return module(x, causal=True, attn_impl="sdpa")[0, -1].float().cpu().numpy()  # (V,)

            scores, _device, notice = model.run(last_scores)
            if notice and notice not in notices:
                notices.append(notice)
            return scores

        new, stopped = decode_loop(step, inp.ids, settings, {EOS_ID}, n_new)
        ids = [*inp.ids, *new]
        said = generation_notice(
            settings, len(new), stopped, len(new) < settings.max_new_tokens and not stopped, model.max_positions
        )
        trace, device, notice = model.run(
            lambda module, _device: trace_own(
                module, ids, model.tokenizer.tokens_for_display(ids), model_id=model.spec.id, causal=True
            )
        )
        if notice and notice not in notices:
            notices.append(notice)
        return dataclasses.replace(
            trace,
            family=model.spec.family,
            generated_from=len(inp.ids),
            truncated=inp.truncated,
            n_input_tokens=inp.n_input,
            device=device.type,
            notices=(*inp.notices, said, *notices),
        )


def load_own(spec: ModelSpec, folder: Path, device: torch.device | None = None) -> Model:
    """Load one of our text checkpoints (kind ``transformer``) as a read-only :class:`Model`.

    Raises:
        CheckpointError: a missing, corrupt or mismatched file (readable message).
    """
    model = checkpoint_model(
        spec,
        folder,
        device,
        adapter=OwnTextAdapter(),
        architecture="own transformer",
        max_positions=lambda module: module.cfg.max_len,
    )
    model.default_causal = bool(model.module.cfg.causal)  # what trace_own does with causal=None
    return model
