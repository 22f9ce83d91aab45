"""Decoder families read through ``transformers.AttentionInterface`` equal their own eager attention.

Each family (Llama, Mistral, Qwen2, Qwen3, GPT-NeoX, Phi-3) is built as a tiny random model with a
byte-level BPE tokenizer trained offline, saved with ``save_pretrained``, loaded through
``engine.load(folder)`` (``attn_implementation="ap_capture"``: SDPA that records Q, K, V after RoPE)
and compared with a separate copy loaded with ``attn_implementation="eager"`` and
``output_attentions=True``. Configs cover grouped-query attention (fewer key/value heads) and
sliding windows shorter than the input.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.analysis.stepwise import query_steps
from engine.records import ModelUnavailableError
from tests.hf_helpers import TINY_TEXT

ATOL = 1e-5
CUDA_VS_CPU_ATOL = 5e-6  # a CUDA trace against a CPU one: float32 GPU kernels sum in a different order
MAX_POS = 128
WINDOW = 3
SENTENCES = {
    "short": "The cat sat on the mat, and the dog watched it.",
    "odd": "Héllo, wörld!! — naïve café… 東京 🙂 (x+y)² = z; «quotes»",
}

_COMMON = dict(**TINY_TEXT, max_position_embeddings=MAX_POS, initializer_range=0.25)


def _config(kind: str, vocab: int, eos: int):
    import transformers as tf

    ids = dict(vocab_size=vocab, bos_token_id=eos, eos_token_id=eos, pad_token_id=eos)
    if kind == "llama":  # grouped-query attention: 2 key/value heads for 4 query heads
        return tf.LlamaConfig(num_key_value_heads=2, **_COMMON, **ids)
    if kind == "mistral":
        return tf.MistralConfig(num_key_value_heads=2, sliding_window=WINDOW, **_COMMON, **ids)
    if kind == "qwen2":  # sliding window on the layers from max_window_layers on
        return tf.Qwen2Config(
            num_key_value_heads=2, use_sliding_window=True, sliding_window=WINDOW, max_window_layers=1, **_COMMON, **ids
        )
    if kind == "qwen3":
        return tf.Qwen3Config(num_key_value_heads=1, head_dim=8, **_COMMON, **ids)
    if kind == "gpt_neox":
        common = {k: v for k, v in _COMMON.items() if k != "initializer_range"}
        return tf.GPTNeoXConfig(initializer_range=0.25, **common, **ids)
    if kind == "phi3":
        return tf.Phi3Config(num_key_value_heads=4, sliding_window=WINDOW, **_COMMON, **ids)
    if kind == "gemma":
        return tf.GemmaConfig(num_key_value_heads=1, head_dim=8, **_COMMON, **ids)
    if kind == "gemma2":  # a small logit cap so that it changes the patterns; local and global layers
        return tf.Gemma2Config(
            num_key_value_heads=2,
            head_dim=8,
            query_pre_attn_scalar=12,
            attn_logit_softcapping=2.0,
            sliding_window=WINDOW,
            layer_types=["full_attention", "sliding_attention"],
            **_COMMON,
            **ids,
        )
    if kind == "gemma3_text":  # local (sliding) layers and global ones; scaling from query_pre_attn_scalar
        return tf.Gemma3TextConfig(
            num_key_value_heads=2,
            head_dim=8,
            query_pre_attn_scalar=12,
            sliding_window=WINDOW,
            layer_types=["sliding_attention", "full_attention"],
            **_COMMON,
            **ids,
        )
    if kind == "gpt_oss":  # learned sinks, a sliding layer then a full one, a mixture of 4 experts
        return tf.GptOssConfig(
            num_key_value_heads=2,
            head_dim=8,
            num_local_experts=4,
            num_experts_per_tok=2,
            sliding_window=WINDOW,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            **_COMMON,
            **ids,
        )
    raise ValueError(kind)


KINDS = ("llama", "mistral", "qwen2", "qwen3", "gpt_neox", "phi3", "gemma", "gemma2", "gemma3_text", "gpt_oss")


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    from transformers import AutoModelForCausalLM

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    root = tmp_path_factory.mktemp("tiny_interface")
    out = {}
    for kind in KINDS:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(_config(kind, len(tokenizer), tokenizer.eos_token_id)).eval()
        model.save_pretrained(root / kind)
        tokenizer.save_pretrained(root / kind)
        out[kind] = root / kind
    return out


_PAIRS: dict[str, tuple] = {}


def _pair(kind: str, folders: dict[str, Path]):
    if kind not in _PAIRS:
        from transformers import AutoModelForCausalLM

        ref = AutoModelForCausalLM.from_pretrained(folders[kind], attn_implementation="eager").eval()
        model = engine.load(str(folders[kind]))
        assert model.module.config is not ref.config
        _PAIRS[kind] = (model, ref)
    return _PAIRS[kind]


def reference(ref, ids) -> list[np.ndarray]:
    with torch.no_grad():
        out = ref(input_ids=torch.tensor([list(ids)]), output_attentions=True, use_cache=False)
    return [a[0].float().numpy() for a in out.attentions]


@pytest.mark.parametrize("sentence", sorted(SENTENCES))
@pytest.mark.parametrize("kind", KINDS)
def test_pattern_equals_eager_output_attentions(folders, kind: str, sentence: str) -> None:
    model, ref = _pair(kind, folders)
    tr = engine.trace(model, SENTENCES[sentence])
    atts = reference(ref, tr.tokens.ids)
    assert tr.n_layers == len(atts) == 2 and tr.n_heads == atts[0].shape[0] == 4
    assert tr.pos_encoding_kind == "rope" and tr.family == "decoder" and tr.causal
    spread = max(float(np.abs(a - a.mean(axis=-1, keepdims=True)).max()) for a in atts)
    assert spread > 0.05, "reference patterns are nearly uniform: the comparison would mean little"
    for layer, att in enumerate(atts):
        for head in range(tr.n_heads):
            np.testing.assert_allclose(
                tr.pattern(layer, head), att[head], atol=ATOL, rtol=0, err_msg=f"{kind} layer {layer} head {head}"
            )


@pytest.mark.parametrize("kind", ["llama", "gpt_neox"])
def test_causal_off_equals_eager_with_an_all_zero_mask(folders, kind: str) -> None:
    model, ref = _pair(kind, folders)
    tr = engine.trace(model, SENTENCES["short"], causal=False)
    assert not tr.causal
    n = len(tr.tokens)
    with torch.no_grad():
        out = ref(
            input_ids=torch.tensor([list(tr.tokens.ids)]),
            attention_mask=torch.zeros(1, 1, n, n),
            output_attentions=True,
            use_cache=False,
        )
    for layer, att in enumerate(out.attentions):
        np.testing.assert_allclose(tr.pattern(layer), att[0].numpy(), atol=ATOL, rtol=0)
    assert engine.trace(model, SENTENCES["short"]).causal  # the shared model is causal again


@pytest.mark.parametrize("kind", ["mistral", "qwen2", "phi3", "gemma2", "gemma3_text"])
def test_causal_off_with_a_sliding_window_equals_eager(folders, kind: str) -> None:
    """Without the causal mask transformers uses a two-sided window: key j seen when |i − j| <= w."""
    model, ref = _pair(kind, folders)
    tr = engine.trace(model, SENTENCES["short"], causal=False)
    assert not tr.causal and WINDOW in tr.window
    with torch.no_grad():
        out = ref(
            input_ids=torch.tensor([list(tr.tokens.ids)]), is_causal=False, output_attentions=True, use_cache=False
        )
    for layer, att in enumerate(out.attentions):
        np.testing.assert_allclose(tr.pattern(layer), att[0].numpy(), atol=ATOL, rtol=0, err_msg=f"layer {layer}")
    windowed = tr.window.index(WINDOW)
    n = len(tr.tokens)
    i, j = np.indices((n, n))
    assert np.all(tr.pattern(windowed)[:, np.abs(i - j) > WINDOW] == 0)
    np.testing.assert_allclose(tr.pattern_rows(windowed, 1, 0, n), tr.pattern(windowed, 1), atol=1e-6)
    np.testing.assert_allclose(tr.overview(windowed, 1, size=n), tr.pattern(windowed, 1), atol=1e-6)


def test_sliding_windows_are_shorter_than_the_input(folders) -> None:
    for kind, expected in (
        ("mistral", (WINDOW, WINDOW)),
        ("qwen2", (None, WINDOW)),
        ("gemma3_text", (WINDOW, None)),
        ("phi3", (WINDOW, WINDOW)),
        ("gemma2", (None, WINDOW)),
    ):
        model, _ = _pair(kind, folders)
        tr = engine.trace(model, SENTENCES["short"])
        assert tr.window == expected, kind
        assert len(tr.tokens) > 3 * WINDOW
        p = tr.pattern(expected.index(WINDOW), 0)
        n = len(tr.tokens)
        i, j = np.indices((n, n))
        assert np.all(p[(i - j >= WINDOW) | (j > i)] == 0)
        assert np.all(p[(i - j < WINDOW) & (j <= i)] > 0)


@pytest.mark.parametrize("kind", KINDS)
def test_layer_kinds_follow_the_config_and_the_windows_the_model_used(folders, kind: str) -> None:
    """Each layer's kind is what its config says (``layer_types`` where it has them, else a ``sliding_window`` on
    every layer) and what the model's own attention calls did (the window each call passed)."""
    model, ref = _pair(kind, folders)
    tr = engine.trace(model, SENTENCES["short"])
    window = getattr(ref.config, "sliding_window", None)
    types = getattr(ref.config, "layer_types", None) or ["sliding_attention" if window else "full_attention"] * 2
    assert tr.layer_kinds == tuple(f"sliding {window}" if t == "sliding_attention" else "full" for t in types)
    assert tr.layer_kinds == tuple("full" if w is None else f"sliding {w}" for w in (tr.window or (None, None)))


def test_gpt_oss_rows_keep_what_the_sinks_take(folders) -> None:
    """gpt-oss's rows sum to less than one, as its eager attention's do: ``sink_mass`` is the rest, and the long-input
    rows (``pattern_rows``, ``overview``) keep it too."""
    model, ref = _pair("gpt_oss", folders)
    tr = engine.trace(model, SENTENCES["short"])
    atts, n = reference(ref, tr.tokens.ids), len(tr.tokens)
    for layer, att in enumerate(atts):
        np.testing.assert_array_equal(tr.sinks[layer], ref.model.layers[layer].self_attn.sinks.detach().numpy())
        sums = att.sum(-1)
        assert sums.mean() < 0.95, "the sinks take a visible share of each row"
        np.testing.assert_allclose(tr.sink_mass(layer), 1 - sums, atol=ATOL, rtol=0)
        for head in range(tr.n_heads):
            np.testing.assert_allclose(tr.sink_mass(layer, head), 1 - sums[head], atol=ATOL, rtol=0)
            np.testing.assert_allclose(tr.pattern_rows(layer, head, 0, n), att[head], atol=ATOL, rtol=0)
            np.testing.assert_allclose(tr.overview(layer, head, size=n), att[head], atol=ATOL, rtol=0)
            steps = query_steps(tr, layer, head, n - 1)  # Step by step's numbers: the sink in the softmax too
            np.testing.assert_allclose(steps.weights[0], att[head][-1], atol=ATOL, rtol=0)
            np.testing.assert_allclose(steps.sink_weight, 1 - sums[head][-1:], atol=ATOL, rtol=0)
    llama, _ = _pair("llama", folders)  # no sink: rows sum to one, nothing missing
    np.testing.assert_array_equal(engine.trace(llama, SENTENCES["short"]).sink_mass(0), 0)


def test_gpt_oss_weights_written_out_keep_the_sink(folders) -> None:
    """An override (Jain & Wallace's test) receives gpt-oss's weights as its eager attention computes them, sinks
    included, and handing them back unchanged gives the model's own output."""
    from engine.capture.hf import overriding

    model, ref = _pair("gpt_oss", folders)
    ids = torch.tensor([list(engine.trace(model, SENTENCES["short"]).tokens.ids)])
    seen = []
    with model.lock, torch.no_grad():
        plain = model.module(input_ids=ids, use_cache=False).logits
        with overriding(lambda module, weights: seen.append(weights[0].numpy()) or weights):
            kept = model.module(input_ids=ids, use_cache=False).logits
    torch.testing.assert_close(kept, plain, atol=1e-5, rtol=0)
    for got, want in zip(seen, reference(ref, ids[0].tolist()), strict=True):
        np.testing.assert_allclose(got, want, atol=ATOL, rtol=0)


def test_gpt_oss_writes_what_its_own_generate_writes(folders) -> None:
    from engine.generation import DecodeSettings

    model, ref = _pair("gpt_oss", folders)
    tr = engine.generate(model, SENTENCES["short"], DecodeSettings(max_new_tokens=8))
    prompt = list(tr.tokens.ids[: tr.generated_from])
    with torch.no_grad():
        out = ref.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False)
    assert list(tr.tokens.ids) == out[0].tolist()
    assert tr.generated_from < len(tr.tokens)
    np.testing.assert_allclose(tr.pattern(1), reference(ref, tr.tokens.ids)[1], atol=ATOL, rtol=0)


def test_gqa_keys_are_repeated_per_query_head(folders) -> None:
    model, _ = _pair("qwen3", folders)  # 1 key/value head for 4 query heads
    tr = engine.trace(model, SENTENCES["short"])
    for layer in range(tr.n_layers):
        for h in range(1, tr.n_heads):
            np.testing.assert_array_equal(tr.k(layer)[h], tr.k(layer)[0])
            np.testing.assert_array_equal(tr.v(layer)[h], tr.v(layer)[0])
    model, _ = _pair("llama", folders)  # 2 key/value heads: heads 0, 1 share one, 2, 3 the other
    tr = engine.trace(model, SENTENCES["short"])
    np.testing.assert_array_equal(tr.k(0)[1], tr.k(0)[0])
    np.testing.assert_array_equal(tr.k(0)[3], tr.k(0)[2])
    assert not np.array_equal(tr.k(0)[0], tr.k(0)[2])


@pytest.mark.parametrize("reduce", ["max", "mean"])
def test_overview_with_a_window_equals_the_pattern_pooled_by_hand(folders, reduce: str) -> None:
    from engine.traces.overview import overview_edges

    model, _ = _pair("mistral", folders)
    tr = engine.trace(model, SENTENCES["odd"])
    n, size = len(tr.tokens), 5
    edges = overview_edges(n, size)
    for layer in range(tr.n_layers):
        p = tr.pattern(layer, 2)
        want = np.array(
            [[getattr(p[a:b, c:d], reduce)() for c, d in zip(edges, edges[1:])] for a, b in zip(edges, edges[1:])]
        )
        np.testing.assert_allclose(tr.overview(layer, 2, size=size, reduce=reduce), want, atol=1e-6)
        np.testing.assert_allclose(tr.pattern_rows(layer, 2, 0, n), p, atol=1e-6)


def test_the_shared_model_config_is_unchanged_by_a_trace(folders) -> None:
    model, _ = _pair("mistral", folders)
    before = copy.deepcopy(model.module.config.to_dict())
    impl = model.module.config._attn_implementation
    engine.trace(model, SENTENCES["short"])
    assert model.module.config.to_dict() == before
    assert model.module.config._attn_implementation == impl == "ap_capture"


def test_gemma2_softcap_is_in_the_trace_and_matters(folders) -> None:
    model, _ = _pair("gemma2", folders)
    tr = engine.trace(model, SENTENCES["short"])
    assert tr.softcap == (2.0, 2.0)
    masked = tr.scores(0, 0, "masked")
    assert np.abs(masked[np.isfinite(masked)]).max() <= 2.0
    assert np.abs(tr.scores(0, 0, "scaled")).max() > 2.0  # the cap changed some scores
    n, size = len(tr.tokens), 4
    from engine.traces.overview import overview_edges

    e = overview_edges(n, size)
    p = tr.pattern(1, 3)
    want = np.array([[p[a:b, c:d].max() for c, d in zip(e, e[1:])] for a, b in zip(e, e[1:])])
    np.testing.assert_allclose(tr.overview(1, 3, size=size), want, atol=1e-6)


@pytest.mark.parametrize("chunk", [None, 2 * 4 * 12])  # 2 rows × 4 heads × 12 keys: chunks of 2 query rows
@pytest.mark.parametrize("kind", ["llama", "mistral", "gemma2"])
def test_the_model_output_is_plain_sdpa(folders, kind: str, chunk, monkeypatch) -> None:
    from engine.capture import hf as interface

    if chunk is not None:
        if kind != "gemma2":
            pytest.skip("row chunks only exist on the softcapped path")
        monkeypatch.setattr(interface, "_SOFTCAP_CHUNK", chunk)
    from transformers import AutoModelForCausalLM

    model, _ = _pair(kind, folders)  # mistral: 12 tokens, window 3, so the window mask must reach SDPA
    impl = "eager" if kind == "gemma2" else "sdpa"  # SDPA cannot softcap: ours runs row chunks, compared with eager
    sdpa = AutoModelForCausalLM.from_pretrained(folders[kind], attn_implementation=impl).eval()
    ids = torch.tensor([[5, 9, 14, 3, 27, 8, 40, 41, 2, 77, 19, 60]])
    with torch.no_grad():
        np.testing.assert_allclose(
            model.module(input_ids=ids.to(model.device)).logits.cpu().numpy(),
            sdpa(input_ids=ids).logits.numpy(),
            atol=1e-5,
        )


def test_byte_level_tokens_are_displayed_decoded(folders) -> None:
    model, _ = _pair("llama", folders)
    from engine.text import byte_level_display

    assert model.adapter.byte_level  # read from the tokenizer (a ByteLevel decoder)
    tr = engine.trace(model, "The cat sat. naïve café")
    pieces = model.tokenizer.convert_ids_to_tokens(list(tr.tokens.ids))
    assert tr.tokens.strings == tuple(byte_level_display(p) for p in pieces)
    assert not any("Ġ" in s or "Ã" in s for s in tr.tokens.strings)


def test_unsupported_model_type_still_names_the_supported_ones(folders, tmp_path) -> None:
    folder = tmp_path / "gemma"
    folder.mkdir()
    config = json.loads((folders["llama"] / "config.json").read_text())
    config["model_type"] = "gemma9"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelUnavailableError, match=r"is a 'gemma9' model; supported here: .*llama.*qwen3"):
        engine.load(str(folder))


def test_a_recording_sees_only_its_own_thread(folders) -> None:
    import threading

    from engine.capture.hf import recording

    model, _ = _pair("llama", folders)
    ids = torch.tensor([[5, 9, 14, 3]], device=model.device)

    def other() -> None:
        with torch.no_grad():
            model.module(input_ids=ids)

    with recording() as mine:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert mine.layers == {}  # another session's forward pass is not recorded here
        with torch.no_grad():
            model.module(input_ids=ids)
    assert sorted(mine.layers) == [0, 1] and mine.layers[0].query.shape == (4, 4, 8)
    assert mine.layers[0].key.shape == (2, 4, 8)  # GQA: recorded as given, 2 key/value heads


@pytest.mark.parametrize("kind", ["llama", "gpt_neox", "gemma2"])
def test_head_ablation_equals_zeroed_output_projection_columns(folders, kind: str) -> None:
    from engine.analysis.ablation import ablate
    from engine.analysis.ablation_runs import runner_for

    model, _ = _pair(kind, folders)
    r = ablate(model, "The cat sat on the", [(0, 1), (1, 3)], top_k=12)
    ref = copy.deepcopy(model.module)
    projections = runner_for(model).projections(ref)
    for _block, layer, head in r.heads_off:
        weight = projections[(_block, layer)].weight  # Linear [out, H·d]
        d = weight.shape[1] // 4
        with torch.no_grad():
            weight[:, head * d : (head + 1) * d] = 0.0
    ids = torch.tensor([list(r.tokens.ids)], device=model.device)
    with torch.no_grad():
        after = torch.softmax(ref(input_ids=ids).logits[0, -1].double(), -1).cpu().numpy()
    np.testing.assert_allclose(r.top_after, after[list(r.top_ids)], atol=1e-6)
    assert r.kl > 1e-6


@pytest.mark.parametrize("kind", ["gemma2", "qwen2"])
def test_step_by_step_rows_equal_the_trace(folders, kind: str) -> None:
    from engine.analysis.stepwise import query_steps

    model, _ = _pair(kind, folders)
    tr = engine.trace(model, SENTENCES["short"])
    n = len(tr.tokens)
    for layer in range(tr.n_layers):
        for query in (0, n // 2, n - 1):
            steps = query_steps(tr, layer, 1, query)
            np.testing.assert_allclose(steps.masked[0], tr.scores(layer, 1, "masked")[query], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(steps.weights[0], tr.pattern(layer, 1)[query], atol=1e-6)
            assert steps.softcap == (2.0 if kind == "gemma2" else None)


def test_truncated_at_max_tokens_matches_eager(folders) -> None:
    model, ref = _pair("mistral", folders)
    tr = engine.trace(model, SENTENCES["odd"], max_tokens=8)
    assert len(tr.tokens) == 8 and tr.truncated and tr.n_input_tokens > 8
    for layer, att in enumerate(reference(ref, tr.tokens.ids)):
        np.testing.assert_allclose(tr.pattern(layer), att, atol=ATOL, rtol=0)


def test_gpu_out_of_memory_retries_on_a_cpu_copy(folders) -> None:
    """As tests/unit/test_device.py for the catalog: ``meta`` stands in for the GPU."""
    import dataclasses
    import threading

    model, _ = _pair("qwen2", folders)
    expected = engine.trace(model, SENTENCES["short"])
    failing = copy.deepcopy(model.module)

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    for sub in failing.modules():
        sub.forward = out_of_memory
    gpu = dataclasses.replace(
        model, module=failing, device=torch.device("meta"), lock=threading.Lock(), _cpu_module=None
    )
    tr = engine.trace(gpu, SENTENCES["short"])
    assert tr.device == "cpu" and any("ran on the CPU" in n for n in tr.notices)
    assert tr.window == expected.window
    atol = 1e-6 if expected.device == "cpu" else CUDA_VS_CPU_ATOL  # the retry ran on the CPU, expected may not
    for layer in range(tr.n_layers):
        np.testing.assert_allclose(tr.pattern(layer), expected.pattern(layer), atol=atol)
    assert gpu._cpu_module.config._attn_implementation == "ap_capture"


def test_positional_table_of_a_rope_model_explains_rope(folders) -> None:
    from engine.analysis.positional import position_table
    from engine.records import EngineError

    model, _ = _pair("llama", folders)
    with pytest.raises(EngineError, match="rotary position embeddings"):
        position_table(model)
