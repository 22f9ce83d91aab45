"""Generation for Hugging Face decoders (GPT-2 family, Llama, Qwen, Mistral, Gemma, …; all read through ``ap_capture``).

The loop runs the causal-LM module with transformers' key/value cache: the prompt once, then one new
token per step (the last position's logits only), no capture; each step takes the model's lock on its
own, so a page tracing the same model waits for one token, not for the whole continuation. Then prompt +
generated ids are traced once through the adapter's own trace path, so the patterns are exactly those
of ``engine.trace`` on the same ids (the parity tests of each adapter cover them).

The trace is the adapter's ``trace_ids`` of prompt + generated ids (no re-tokenization of the text).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from engine.decoding import NEEDS_DECODER, decode_loop, generation_notice, room_for
from engine.generation import DecodeSettings
from engine.model import Model
from engine.records import EngineError
from engine.text import display_tokens, named_ids
from engine.traces.attention import AttentionTrace


def stop_ids(model: Model) -> set[int]:
    """End-of-text ids: the tokenizer's ``eos_token_id`` and the config's (an int or a list, as Llama 3's)."""
    out: set[int] = set()
    for value in (getattr(model.tokenizer, "eos_token_id", None), getattr(model.module.config, "eos_token_id", None)):
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, int) and not isinstance(v, bool):
                out.add(v)
    return out


def generate(adapter, model: Model, prompt: str, settings: DecodeSettings, *, max_tokens: int) -> AttentionTrace:
    """``engine.generate`` for a Hugging Face decoder: see :func:`engine.generate`.

    Raises:
        EngineError: an encoder family (or a BERT configured as a decoder: it has no language-model
            head here), or a prompt that fills the model's positions.
    """
    if adapter.family != "decoder" or model.spec.family != "decoder" or not model.default_causal:
        raise EngineError(NEEDS_DECODER)
    ids, _tokens, n_total, notices = adapter.prepare(model, prompt, max_tokens)
    n_new = room_for(len(ids), settings, model.max_positions)
    stops = stop_ids(model)

    cache: dict = {"past": None, "fed": 0, "device": None}
    fallbacks: list[str] = []

    def step(so_far: list[int]) -> np.ndarray:
        def next_scores(module, device: torch.device) -> np.ndarray:
            if device != cache["device"]:  # the first step, or a fall-back to the CPU: feed everything again
                cache.update(past=None, fed=0, device=device)
            fresh = torch.tensor([so_far[cache["fed"] :]], device=device)  # (1, new)
            out = module(input_ids=fresh, past_key_values=cache["past"], use_cache=True, logits_to_keep=1)
            cache["past"], cache["fed"] = out.past_key_values, len(so_far)
            return out.logits[0, -1].float().cpu().numpy()  # (V,)

        scores, _device, fell_back = model.run(next_scores)
        if fell_back and not fallbacks:
            fallbacks.append(fell_back)
        return scores

    new, stopped = decode_loop(step, ids, settings, stops, n_new, named_ids(model.tokenizer))
    all_ids = [*ids, *new]
    capped = len(new) < settings.max_new_tokens and not stopped
    said = generation_notice(settings, len(new), stopped, capped, model.max_positions)
    tr = adapter.trace_ids(
        model,
        all_ids,
        display_tokens(model.tokenizer, all_ids, adapter.byte_level),
        causal=True,
        notices=(*notices, said, *fallbacks),
    )
    return dataclasses.replace(tr, generated_from=len(ids), truncated=n_total > len(ids), n_input_tokens=n_total)
