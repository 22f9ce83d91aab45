"""What kind of attention each layer computes: ``AttentionTrace.layer_kinds``, one string per layer.

- ``"full"``: every key the mask allows (all of them, or the earlier ones under a causal mask);
- ``"sliding W"``: only the last ``W`` keys (Mistral, Gemma 2/3's local layers, Cohere2, gpt-oss);
- ``"chunked C"``: only keys in the query's own block of ``C`` positions (Llama 4);
- ``"no positions"``: full attention with no rotary positions on Q and K (SmolLM3, Llama 4's global layers);
- ``"linear"``: no softmax over keys at all (linear attention, a state-space mixer: Qwen3-Next, Qwen3.5): there is
  no pattern to draw.

Read from a Hugging Face config's ``layer_types``, ``sliding_window``, ``attention_chunk_size`` and
``no_rope_layers`` (:func:`config_kinds`); our own models' from their windows (:func:`window_kinds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FULL, LINEAR, NO_POSITIONS = "full", "linear", "no positions"
#: ``layer_types`` entries whose layer mixes tokens without a softmax over keys
NO_SOFTMAX = frozenset({"linear_attention", "mamba", "conv", "recurrent"})


def window_kinds(window: Sequence[int | None], n_layers: int) -> tuple[str, ...]:
    """``"sliding W"`` for a layer with a window ``W``, else ``"full"`` (``window`` empty: every layer full)."""
    return tuple(FULL if not window or window[i] is None else f"sliding {window[i]}" for i in range(n_layers))


def config_kinds(config: Any, n_layers: int) -> tuple[str, ...]:
    """Each layer's kind read from a Hugging Face text config (transformers 5.23's field names).

    ``layer_types`` says it per layer where the config has it (``"hybrid"``: Falcon-H1's attention beside a Mamba
    mixer, whose attention is a full softmax); without it, a ``sliding_window`` applies to every layer (Mistral).
    ``no_rope_layers`` marks with 0 the layers whose Q and K get no rotary positions.
    """
    window, chunk = getattr(config, "sliding_window", None), getattr(config, "attention_chunk_size", None)
    default = "sliding_attention" if window and getattr(config, "use_sliding_window", True) else "full_attention"
    types = list(getattr(config, "layer_types", None) or [])
    rope = list(getattr(config, "no_rope_layers", None) or [])
    kinds = []
    for i in range(n_layers):  # past the end of a list (not seen in transformers' configs): the defaults
        kind, positions = types[i] if i < len(types) else default, rope[i] if i < len(rope) else 1
        if kind in NO_SOFTMAX:
            kinds.append(LINEAR)
            continue
        limited = {
            "sliding_attention": window and f"sliding {window}",
            "chunked_attention": chunk and f"chunked {chunk}",
        }
        name = limited.get(kind) or FULL  # never "sliding None" (a config no model runs)
        kinds.append(name if positions else NO_POSITIONS if name == FULL else f"{name}, {NO_POSITIONS}")
    return tuple(kinds)


def check_pattern(kinds: Sequence[str], layer: int) -> None:
    """Raise ValueError when layer ``layer`` (an index into ``kinds``) has no softmax pattern."""
    if kinds and kinds[layer] == LINEAR:
        raise ValueError(
            f"Layer {layer} is a {LINEAR} layer: it mixes tokens through a running state (linear attention or a "
            "state-space update), not a softmax over keys, so it has no attention pattern."
        )
