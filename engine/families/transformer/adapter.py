"""Tracing our own transformer (:mod:`engine.families.transformer.network`) and loading it from a checkpoint.

:func:`trace_own` is one forward pass as an ``AttentionTrace``. Only Q, K and V are captured (O(layers · n ·
d)); the trace computes scores and patterns lazily, one layer and head at a time. For RoPE models the
rotated queries and keys (``hook_rot_q`` / ``hook_rot_k``) are captured, since those are what enter the dot
product; for ALiBi models the slopes are stored so that ``AttentionTrace.bias`` rebuilds the model's bias
exactly. :class:`OwnTextAdapter` is what ``engine.trace`` and ``engine.generate`` use; :func:`load_own`
loads a ``transformer`` checkpoint (``NAME.safetensors`` + ``NAME.json`` + ``NAME.md``, :mod:`engine.checkpoint`;
the catalog entries come from the JSON alone, without torch).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.capture import capture
from engine.capture.transfer import to_host
from engine.decoding import NEEDS_DECODER, decode_loop, generation_notice, room_for
from engine.families.own import captured_heads, checkpoint_model, qkv_names
from engine.families.transformer.network import Transformer
from engine.model import Model
from engine.records import EmptyInputError, EngineError, ModelSpec, Tokens
from engine.traces.attention import AttentionTrace
from engine.vocab import EOS_ID, MASK, SPECIALS, WordInput, decoder_input, tokenize, tokenize_with_masks


def trace_own(
    model: Transformer,
    token_ids: list[int],
    tokens: Tokens,
    *,
    model_id: str,
    causal: bool | None = None,
) -> AttentionTrace:
    """One no-grad forward pass of ``model`` on one sequence, captured as an :class:`AttentionTrace`.

    The model is only read: no ``.eval()``/``.to()``, no config change; the causal choice goes through
    the forward call. Hooks are attached for the duration of the call only; callers that share the
    model between threads hold its lock around this call. The forward pass runs on the device of the
    model's parameters and uses the fused ``sdpa`` attention (nothing O(n²) is kept).

    Args:
        model: the transformer.
        token_ids: the sequence, at most ``model.cfg.max_len`` ids.
        tokens: display tokens for the same sequence (one per id).
        model_id: the id to record in the trace.
        causal: apply the causal mask; None uses ``model.cfg.causal``.

    Returns:
        A trace with per-layer ``[head, pos, d_head]`` queries (post-rotary for RoPE), keys, values,
        scales ``1/√d_head``, ALiBi slopes (alibi only), the added position vectors ``[pos, d_model]``
        (learned / sinusoidal only), family ``"decoder"`` when causal else ``"encoder"``.

    Raises:
        EmptyInputError: no tokens.
        ValueError: ``tokens`` and ``token_ids`` differ in length, or the sequence is too long.
    """
    cfg = model.cfg
    if not token_ids:
        raise EmptyInputError("there is nothing to trace: the input has no tokens")
    if len(token_ids) != len(tokens):
        raise ValueError(f"{len(token_ids)} token ids but {len(tokens)} display tokens {list(tokens.strings)[:20]}")
    causal = cfg.causal if causal is None else causal
    q_name, k_name = ("hook_rot_q", "hook_rot_k") if cfg.pos_encoding == "rope" else ("hook_q", "hook_k")
    prefixes = [f"blocks.{layer}.attn" for layer in range(cfg.n_layers)]
    names = qkv_names(prefixes, q_name, k_name)
    device = next(model.parameters()).device
    ids = torch.tensor([token_ids], dtype=torch.long, device=device)  # (1, T)
    with torch.no_grad(), capture(model, names=names) as acts:
        model(ids, causal=causal, attn_impl="sdpa")
        pos = model.position_vectors(len(token_ids))  # (T, D) or None
        heads = captured_heads(acts, prefixes, [block.attn for block in model.blocks], q_name, k_name)
    slopes = model.alibi_slopes if cfg.pos_encoding == "alibi" else None  # (H,) or None
    heads, slopes, pos = to_host((heads, slopes, pos))  # one copy from the model's device
    return AttentionTrace(
        model_id=model_id,
        family="decoder" if causal else "encoder",
        tokens=tokens,
        key_tokens=tokens,
        **heads,
        causal=bool(causal),
        alibi_slopes=slopes,
        pos_encoding=pos,
        pos_encoding_kind=cfg.pos_encoding,
        n_input_tokens=len(token_ids),
        device=device.type,
    )


def trace_input(model: Model, inp: WordInput, causal: bool | None) -> AttentionTrace:
    """:func:`trace_own` of a prepared input on the model's device: the trace carries the input's notices and
    cut (``truncated``, ``n_input_tokens``), the model's family and the device it ran on."""
    ids, tokens = list(inp.ids), inp.tokens
    trace, device, notice = model.run(
        lambda module, _device: trace_own(module, ids, tokens, model_id=model.spec.id, causal=causal)
    )
    return dataclasses.replace(
        trace,
        family=model.spec.family,
        truncated=inp.truncated,
        n_input_tokens=inp.n_input,
        device=device.type,
        notices=(*inp.notices, notice) if notice else tuple(inp.notices),
    )


def words_of(model: Model):
    """How ``model`` splits text: :func:`~engine.vocab.tokenize`, keeping ``[MASK]`` as one token for a
    masked-LM model (one whose vocabulary has :data:`~engine.vocab.MASK`), or one token per character
    (spaces dropped) for a model whose every own token is one character (``induction-2l-attn-only``'s letters)."""
    if MASK in model.tokenizer:
        return tokenize_with_masks
    own = model.tokenizer.tokens[len(SPECIALS) :]
    return characters if own and all(len(t) == 1 for t in own) else tokenize


def characters(text: str) -> list[str]:
    """One token per visible character, lowercased: ``"Ab c"`` → ``["a", "b", "c"]``."""
    return [c for c in text.lower() if not c.isspace()]


@dataclass(frozen=True)
class OwnTextAdapter:
    """Tracing for our own decoder/encoder :class:`~engine.families.transformer.network.Transformer`.

    Text is split by the word-level :func:`engine.vocab.tokenize`; a ``<bos>`` token leads.
    Words the vocabulary lacks become ``<unk>`` and the trace lists them in a notice.
    """

    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> AttentionTrace:
        inp = decoder_input(text, model.tokenizer, max_tokens, model.max_positions, split=words_of(model))
        return trace_input(model, inp, causal)

    def trace_ids(self, model: Model, ids: list[int], tokens: Tokens, *, causal: bool | None) -> AttentionTrace:
        """Trace one given id sequence (``<bos>`` and all), as the Hugging Face adapter's ``trace_ids`` does."""
        ids = [int(i) for i in ids]
        if len(ids) > model.max_positions:
            raise EngineError(f"This model reads at most {model.max_positions} tokens; got {len(ids)}.")
        return trace_input(model, WordInput(tuple(ids), tokens, (), len(ids), False), causal)

    def generate(self, model: Model, prompt: str, settings, *, max_tokens: int) -> AttentionTrace:
        """Write up to ``settings.max_new_tokens`` words after ``prompt``; the trace of prompt + words.

        The model has no key/value cache and at most a few hundred positions, so each step re-runs the
        whole sequence (``sdpa``, no capture); one traced pass at the end captures Q, K, V. Each step and
        the traced pass take the model's lock on their own (a page tracing this model waits for one of
        them, not for the whole continuation). ``<eos>`` ends the loop early and is kept as the last token.
        """
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
