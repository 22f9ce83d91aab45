"""Running a text model from its input embeddings: what :mod:`engine.analysis.attribution` and
:mod:`engine.analysis.attention_swap` differentiate and re-run, for our transformer and Hugging Face text models.

Our transformer gets its word embeddings ``E[tokens]`` replaced through a forward hook on ``hook_embed`` (the
positions are still added by the model); a Hugging Face model gets ``inputs_embeds``. What is returned is the
output the page explains: the log-probabilities at one position (a decoder's next token, a masked LM's blank), or
all-MiniLM-L6-v2's unit sentence embedding (the mean of the last hidden states, normalised). Plus the per-family
token helpers: how text is read (as the family's trace reads it), a token's label, the [MASK] / <unk> that
replaces a token and the padding token of a baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from engine.records import EngineError, Tokens
from engine.text import display_tokens
from engine.vocab import MASK, PAD_ID, UNK_ID, decoder_input

Task = Literal["next-token", "masked-word", "embedding"]
NEEDS_TASK = (
    "This page explains a next-token decoder, a masked-LM encoder of ours (with [MASK]) or a "
    "Hugging Face text encoder (its sentence embedding); {model} is none of them."
)


def task_of(model) -> Task:
    """What :func:`~engine.analysis.attribution.predict` explains for ``model`` (:data:`Task`).

    Raises:
        EngineError: a family this page does not explain (the translator, ViT, an own encoder without [MASK]).
    """
    from engine.families.hf_text.adapter import HFTextAdapter
    from engine.families.transformer.adapter import OwnTextAdapter

    if isinstance(model.adapter, OwnTextAdapter):
        if model.spec.family == "decoder":
            return "next-token"
        if MASK in model.tokenizer:
            return "masked-word"
    elif isinstance(model.adapter, HFTextAdapter):
        return "next-token" if model.adapter.family == "decoder" else "embedding"
    raise EngineError(NEEDS_TASK.format(model=model.spec.id))


def is_own(model) -> bool:
    """True for our own transformer (its word embeddings are replaced through ``hook_embed``)."""
    from engine.families.transformer.adapter import OwnTextAdapter

    return isinstance(model.adapter, OwnTextAdapter)


def embed(model, module, ids: Sequence[int], device) -> Any:
    """The word embeddings of ``ids``, ``(T, D)`` (no positions: those are added inside the model)."""
    import torch

    x = torch.tensor(list(ids), dtype=torch.long, device=device)
    table = module.embed if is_own(model) else model.adapter.base(module).get_input_embeddings()
    return table(x)


def outputs(
    model, module, task: Task, causal: bool, ids: Sequence[int], embeds, position: int | None, *, explicit: bool = False
) -> Any:
    """Run the model on input embeddings ``embeds`` ``(B, T, D)`` (``ids`` give the shape and nothing else).

    Returns:
        next-token / masked-word: log-probabilities at ``position``, ``(B, V)``; embedding: the unit sentence
        embeddings ``(B, D)``. ``explicit``: our transformer's written-out attention, whose ``hook_pattern``
        fires (what :mod:`engine.analysis.attention_swap` replaces); Hugging Face models always run
        ``ap_capture``.
    """
    import torch
    import torch.nn.functional as F

    batch = embeds.shape[0]
    if is_own(model):
        tokens = torch.tensor([list(ids)], dtype=torch.long, device=embeds.device).expand(batch, -1)  # (B, T)
        handle = module.hook_embed.register_forward_hook(lambda _m, _i, _o: embeds)  # E[tokens] := embeds
        try:
            logits = module(tokens, causal=causal, attn_impl="explicit" if explicit else "sdpa")  # (B, T, V)
        finally:
            handle.remove()
        return torch.log_softmax(logits[:, position], dim=-1)  # (B, V)
    adapter = model.adapter
    kwargs = adapter.causal_kwargs(module, embeds.shape[1], causal, embeds.device, default=bool(model.default_causal))
    if adapter.caches:
        kwargs["use_cache"] = False
    if task == "embedding":
        hidden = adapter.base(module)(inputs_embeds=embeds, **kwargs).last_hidden_state  # (B, T, D)
        return F.normalize(hidden.mean(dim=1), p=2, dim=-1)  # (B, D): mean pooling, every token real
    return torch.log_softmax(module(inputs_embeds=embeds, **kwargs).logits[:, position], dim=-1)  # (B, V)


def with_grad(model, fn: Callable[[Any, Any], Any]) -> Any:
    """``fn(module, device)`` under the model's lock with autograd on (the weights themselves stay frozen)."""
    import torch

    with model.lock, torch.inference_mode(False), torch.enable_grad():
        return fn(model.module, model.device)


def read_text(model, task: Task, text: str, max_tokens: int) -> tuple[Tokens, list[str]]:
    """The input's tokens as the model reads them (as its trace does), and the notices."""
    if is_own(model):
        from engine.families.transformer.adapter import words_of

        inp = decoder_input(text, model.tokenizer, max_tokens, model.max_positions, split=words_of(model))
        return inp.tokens, list(inp.notices)

    ready = model.adapter.prepare(model, text, max_tokens)
    return ready.tokens, ready.notices


def token_label(model, token_id: int) -> str:
    if is_own(model):
        return model.tokenizer.decode([token_id])[0]

    return display_tokens(model.tokenizer, [token_id], model.adapter.byte_level).strings[0]


def replacement_id(model) -> int:
    """The token leave-one-out puts in a token's place: [MASK] / <mask> where the vocabulary has one, else the
    unknown-word token."""
    if is_own(model):
        return model.tokenizer.encode([MASK])[0] if MASK in model.tokenizer else UNK_ID
    tok = model.tokenizer
    for name in ("mask_token_id", "unk_token_id", "pad_token_id"):
        if getattr(tok, name, None) is not None:
            return int(getattr(tok, name))
    raise EngineError("This model's tokenizer has no [MASK], unknown or padding token: remove tokens instead.")


def baseline_id(model) -> int:
    """The padding token whose embedding the ``"pad"`` baseline puts at every position."""
    if is_own(model):
        return PAD_ID
    pad = getattr(model.tokenizer, "pad_token_id", None)
    if pad is None:
        raise EngineError("This model has no padding token: use the zero baseline.")
    return int(pad)
