"""``AttentionTrace.layer_kinds``: what kind of attention each layer computes (issue 43, items 1 and 2).

Configs of the families transformers 5.23 builds are read against their own fields; a layer with no softmax
refuses to give a pattern. Traced families (every decoder of the table) are checked in test_hf_interface_parity.py.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import engine
from engine.analysis.stepwise import query_steps
from engine.traces.kinds import config_kinds
from tests.trace_helpers import random_trace


def _config(name: str, **fields):
    import transformers

    return getattr(transformers, name)(num_hidden_layers=4, **fields)


def test_sliding_and_full_layers_follow_layer_types() -> None:
    for name in ("Cohere2Config", "GptOssConfig", "Gemma2Config"):
        config = _config(name, sliding_window=64)
        want = ["sliding 64" if t == "sliding_attention" else "full" for t in config.layer_types]
        assert set(config.layer_types) == {"sliding_attention", "full_attention"}, name
        assert list(config_kinds(config, 4)) == want, name


def test_a_window_without_layer_types_is_on_every_layer() -> None:
    assert config_kinds(_config("MistralConfig", sliding_window=5), 4) == ("sliding 5",) * 4
    assert config_kinds(_config("MistralConfig", sliding_window=None), 4) == ("full",) * 4
    assert config_kinds(_config("LlamaConfig"), 4) == ("full",) * 4


def test_layers_without_rope_say_so() -> None:
    smol = _config("SmolLM3Config", no_rope_layers=[1, 0, 1, 0])
    assert config_kinds(smol, 4) == ("full", "no positions", "full", "no positions")
    llama4 = _config("Llama4TextConfig", attention_chunk_size=16)  # chunked layers with RoPE, a global one without
    assert llama4.layer_types == ["chunked_attention"] * 3 + ["full_attention"] and llama4.no_rope_layers == [
        1,
        1,
        1,
        0,
    ]
    assert config_kinds(llama4, 4) == ("chunked 16",) * 3 + ("no positions",)


def test_linear_attention_layers_and_hybrid_mixers() -> None:
    for name in ("Qwen3NextConfig", "Qwen3_5TextConfig"):
        config = _config(name)
        assert list(config_kinds(config, 4)) == [
            "linear" if t == "linear_attention" else "full" for t in config.layer_types
        ]
        assert "linear" in config_kinds(config, 4) and "full" in config_kinds(config, 4)
    # Falcon-H1: a Mamba mixer beside the attention in every layer: the attention itself is a full softmax
    assert config_kinds(_config("FalconH1Config"), 4) == ("full",) * 4


def test_a_linear_layer_has_no_pattern() -> None:
    one = random_trace(6, causal=True)
    two = replace(
        one,
        queries=one.queries * 2,
        keys=one.keys * 2,
        values=one.values * 2,
        scales=one.scales * 2,
        layer_kinds=("full", "linear"),
    )
    np.testing.assert_array_equal(two.pattern(0), one.pattern(0))
    for read in (
        lambda: two.pattern(1, 0),
        lambda: two.pattern(-1),
        lambda: two.scores(1, 0, "raw"),
        lambda: two.z(1, 0),
        lambda: two.overview(1, 0),
        lambda: two.pattern_rows(1, 0, 0, 2),
    ):
        with pytest.raises(ValueError, match="Layer 1 is a linear layer: .* no attention pattern"):
            read()
    with pytest.raises(ValueError, match="Layer 1 is a linear layer"):
        query_steps(two, 1, 0, 3)  # Step by step's numbers
    with pytest.raises(ValueError, match="one entry per layer"):
        replace(one, layer_kinds=("full", "full"))


def test_own_traces_read_their_kinds_from_the_window(tiny_stories) -> None:
    tr = engine.trace(tiny_stories, "the cat sees the dog")
    assert tr.layer_kinds == ("full",) * tr.n_layers and not tr.window
    assert random_trace(5, causal=True, window=(2,)).layer_kinds == ("sliding 2",)
