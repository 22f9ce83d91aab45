"""The families added for issue 43 equal their own eager attention and their own ``generate``.

Each is a tiny random model (two layers, four heads) with the offline byte-level tokenizer, saved with
``save_pretrained``, loaded through ``engine.load(folder)`` (``ap_capture``) and compared with a separate copy
loaded with ``attn_implementation="eager"``: every softmax layer's pattern to 1e-5, the layers' kinds as the
config and the modelling code say, and greedy ids equal to the model's own ``generate``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.generation import DecodeSettings
from tests.hf_helpers import TINY_TEXT
from tests.unit.test_hf_interface_parity import SENTENCES, reference

ATOL = 1e-5
WINDOW = 3
HYBRID = ["linear_attention", "full_attention"]
_COMMON = dict(**TINY_TEXT, max_position_embeddings=128, initializer_range=0.25)


def _config(kind: str, ids: dict):
    import transformers as tf

    if kind == "smollm3":  # the second layer has no rotary positions (NoPE)
        return tf.SmolLM3Config(num_key_value_heads=2, no_rope_layers=[1, 0], **_COMMON, **ids)
    if kind == "cohere2":  # a windowed layer with RoPE, then a global one without
        layers = ["sliding_attention", "full_attention"]
        return tf.Cohere2Config(num_key_value_heads=2, sliding_window=WINDOW, layer_types=layers, **_COMMON, **ids)
    if kind == "olmo2":  # Q and K normalised over all heads before RoPE
        return tf.Olmo2Config(num_key_value_heads=2, **_COMMON, **ids)
    if kind == "granite":  # its own factor on QKᵀ (attention_multiplier), not 1/√d
        return tf.GraniteConfig(num_key_value_heads=2, attention_multiplier=0.3, **_COMMON, **ids)
    if kind == "deepseek_v3":  # multi-head latent attention: q and k of 8 non-rotary + 4 rotary dims, values of 6
        mla = dict(kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=4, qk_nope_head_dim=8, v_head_dim=6)
        moe = dict(n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1, moe_intermediate_size=16)
        return tf.DeepseekV3Config(num_key_value_heads=4, first_k_dense_replace=1, **mla, **moe, **_COMMON, **ids)
    if kind == "falcon_h1":  # each layer: attention beside a Mamba-2 mixer (layer_types "hybrid"); the attention traced
        mamba = dict(mamba_d_ssm=32, mamba_n_heads=4, mamba_d_head=8, mamba_d_state=8, mamba_chunk_size=4)
        return tf.FalconH1Config(num_key_value_heads=2, head_dim=8, **mamba, **_COMMON, **ids)
    if kind == "llama4_text":  # chunks of 4 keys with RoPE, then a global layer without; a mixture of 2 experts
        moe = dict(num_local_experts=2, intermediate_size_mlp=64)
        return tf.Llama4TextConfig(
            num_key_value_heads=2, head_dim=8, attention_chunk_size=4, no_rope_layers=[1, 0], **moe, **_COMMON, **ids
        )
    if kind == "qwen3_next":  # a gated delta-rule (linear attention) layer, then a gated full-attention one
        linear = dict(linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=8, linear_value_head_dim=8)
        moe = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=16)
        return tf.Qwen3NextConfig(
            num_key_value_heads=2, head_dim=8, layer_types=HYBRID, **linear, **moe, **_COMMON, **ids
        )
    if kind == "qwen3_5_text":  # as Qwen3-Next without the experts
        linear = dict(linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=8, linear_value_head_dim=8)
        return tf.Qwen3_5TextConfig(num_key_value_heads=2, head_dim=8, layer_types=HYBRID, **linear, **_COMMON, **ids)
    raise ValueError(kind)


#: kind → each layer's kind as the trace names it
KINDS = {
    "smollm3": ("full", "no positions"),
    "cohere2": (f"sliding {WINDOW}", "no positions"),
    "olmo2": ("full", "full"),
    "granite": ("full", "full"),
    "deepseek_v3": ("full", "full"),
    "falcon_h1": ("full", "full"),
    "llama4_text": ("chunked 4", "no positions"),
    "qwen3_next": ("linear", "full"),
    "qwen3_5_text": ("linear", "full"),
}


@pytest.fixture(scope="module")
def tokenizer():
    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    return build_tokenizer()


_PAIRS: dict[str, tuple] = {}


def pair(kind: str, tokenizer, root: Path):
    """``(engine model, eager reference)`` of a tiny ``kind`` saved under ``root`` (built once per session)."""
    if kind not in _PAIRS:
        from transformers import AutoModelForCausalLM

        eos = tokenizer.eos_token_id
        config = _config(kind, dict(vocab_size=len(tokenizer), bos_token_id=eos, eos_token_id=eos, pad_token_id=eos))
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(config).eval().save_pretrained(root / kind)
        tokenizer.save_pretrained(root / kind)
        ref = AutoModelForCausalLM.from_pretrained(root / kind, attn_implementation="eager").eval()
        _PAIRS[kind] = (engine.load(str(root / kind)), ref)
    return _PAIRS[kind]


@pytest.fixture
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.getbasetemp() / "tiny_new_families"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_softmax_layer_equals_eager_output_attentions(kind: str, tokenizer, folder) -> None:
    model, ref = pair(kind, tokenizer, folder)
    assert model.spec.family == "decoder"
    for sentence in SENTENCES.values():
        tr = engine.trace(model, sentence)
        atts = reference(ref, tr.tokens.ids)
        assert tr.layer_kinds == KINDS[kind] and tr.causal and tr.n_heads == 4
        softmax = [layer for layer, k in enumerate(tr.layer_kinds) if k != "linear"]
        assert len(atts) == len(softmax) >= 1  # output_attentions holds the softmax layers only
        spread = max(float(np.abs(a - a.mean(axis=-1, keepdims=True)).max()) for a in atts)
        assert spread > 0.05, "reference patterns are nearly uniform: the comparison would mean little"
        for layer, att in zip(softmax, atts, strict=True):
            np.testing.assert_allclose(tr.pattern(layer), att, atol=ATOL, rtol=0, err_msg=f"{kind} layer {layer}")
            n = len(tr.tokens)
            np.testing.assert_allclose(tr.pattern_rows(layer, 1, 0, n), att[1], atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_greedy_ids_equal_the_models_own_generate(kind: str, tokenizer, folder) -> None:
    model, ref = pair(kind, tokenizer, folder)
    tr = engine.generate(model, SENTENCES["short"], DecodeSettings(max_new_tokens=8))
    prompt = list(tr.tokens.ids[: tr.generated_from])
    with torch.no_grad():
        out = ref.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False)
    assert list(tr.tokens.ids) == out[0].tolist() and tr.generated_from < len(tr.tokens)
    last = max(layer for layer, k in enumerate(tr.layer_kinds) if k != "linear")
    np.testing.assert_allclose(tr.pattern(last), reference(ref, tr.tokens.ids)[-1], atol=ATOL, rtol=0)


def test_deepseek_latent_attention_q_and_k_are_the_latents_projections(tokenizer, folder) -> None:
    """MLA: each head's key is ``[k_nope, k_rope]``: 8 dims read from the shared key/value latent by ``kv_b_proj``,
    then 4 rotary dims that every head shares; values are 6 wide. Layer 0's, from the weights by hand."""
    model, ref = pair("deepseek_v3", tokenizer, folder)
    tr = engine.trace(model, SENTENCES["short"])
    attn, n = ref.model.layers[0].self_attn, len(tr.tokens)
    assert tr.d_head == 12 and tr.v(0).shape == (4, n, 6)
    with torch.no_grad():
        x = ref.model.layers[0].input_layernorm(ref.model.embed_tokens(torch.tensor([list(tr.tokens.ids)])))
        latent = attn.kv_a_layernorm(attn.kv_a_proj_with_mqa(x)[..., :16])  # [1, n, kv_lora_rank]
        k_nope, v = attn.kv_b_proj(latent).view(n, 4, 14).transpose(0, 1).split([8, 6], dim=-1)
        q_nope = attn.q_b_proj(attn.q_a_layernorm(attn.q_a_proj(x))).view(n, 4, 12).transpose(0, 1)[..., :8]
    np.testing.assert_allclose(tr.k(0)[..., :8], k_nope.numpy(), atol=1e-6)
    np.testing.assert_allclose(tr.v(0), v.numpy(), atol=1e-6)
    np.testing.assert_allclose(tr.q(0)[..., :8], q_nope.numpy(), atol=1e-6)
    for h in range(1, 4):  # one rotary key for all heads
        np.testing.assert_array_equal(tr.k(0)[h, :, 8:], tr.k(0)[0, :, 8:])
    assert not np.allclose(tr.k(0)[1, :, :8], tr.k(0)[0, :, :8])


@pytest.mark.parametrize("causal", [True, False])
def test_llama4_chunks_hide_keys_outside_the_querys_block(causal: bool, tokenizer, folder) -> None:
    """Llama 4's chunked layer: query i sees keys j <= i of its own block of 4 (transformers keeps the chunks causal
    without the causal mask too; its global layer then sees every key), in the pattern, the long-input rows and
    Step by step's numbers."""
    from engine.analysis.stepwise import query_steps

    model, ref = pair("llama4_text", tokenizer, folder)
    tr = engine.trace(model, SENTENCES["odd"], causal=causal)
    n, chunk = len(tr.tokens), 4
    with torch.no_grad():
        out = ref(input_ids=torch.tensor([list(tr.tokens.ids)]), is_causal=causal, output_attentions=True)
    i, j = np.indices((n, n))
    for layer, att in enumerate(out.attentions):
        np.testing.assert_allclose(tr.pattern(layer), att[0].numpy(), atol=ATOL, rtol=0, err_msg=f"layer {layer}")
    assert tr.chunk_of(0) == chunk and tr.chunk_of(1) is None and n > 3 * chunk and tr.blocked_any()
    p = tr.pattern(0, 2)
    assert np.all(p[(j // chunk != i // chunk) | (j > i)] == 0) and np.all(p[(j // chunk == i // chunk) & (j <= i)] > 0)
    assert np.all(tr.pattern(1) > 0) != causal  # the global layer: every key without the causal mask
    np.testing.assert_allclose(tr.pattern_rows(0, 2, 0, n), p, atol=1e-6)
    np.testing.assert_allclose(tr.overview(0, 2, size=n), p, atol=1e-6)
    steps = query_steps(tr, 0, 2, n - 2)
    np.testing.assert_allclose(steps.weights[0], p[n - 2], atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", [k for k, kinds in KINDS.items() if "linear" in kinds])
def test_a_linear_attention_layer_has_no_pattern(kind: str, tokenizer, folder) -> None:
    """Qwen3-Next's gated delta-rule layer computes no softmax: every reading of its pattern raises the error that
    names its kind (also Step by step's and rollout's), while the full layer is traced (the parity test). Its gated
    heads keep no per-key ‖v·W_O‖: a key's share would depend on the query's gate."""
    from engine.analysis.attribution import importance, predict
    from engine.analysis.stepwise import query_steps
    from engine.records import EngineError

    model, _ = pair(kind, tokenizer, folder)
    tr = engine.trace(model, SENTENCES["short"])
    n = len(tr.tokens)
    for read in (
        lambda: tr.pattern(0),
        lambda: tr.scores(0, 1, "raw"),
        lambda: tr.pattern_rows(0, 1, 0, n),
        lambda: tr.overview(0, 1, size=4),
        lambda: query_steps(tr, 0, 1, n - 1),
    ):
        with pytest.raises(ValueError, match="Layer 0 is a linear layer") as err:
            read()
        assert isinstance(err.value, EngineError)  # shown calmly on a page
    assert tr.pattern(1).shape == (4, n, n) and not tr.has_contributions
    assert tr.q(0).shape == tr.q(1).shape and not tr.q(0).any()  # a placeholder: zeros, one element in memory
    pred = predict(model, SENTENCES["short"])
    with pytest.raises(ValueError, match="layer 0 of this model is a linear layer"):
        importance(model, pred, "rollout", trace=tr)
    np.testing.assert_allclose(importance(model, pred, "attention", trace=tr).scores, tr.pattern(1)[:, -1].mean(0))


@pytest.mark.parametrize("kind", [k for k, kinds in KINDS.items() if "linear" in kinds])
def test_the_head_finder_ranks_only_the_softmax_layers(kind: str, tokenizer, folder) -> None:
    """The head finder's metrics are the full layer's, read from its pattern; the linear layer's heads have none."""
    from engine.analysis import metrics as M
    from engine.analysis.head_finder import head_table

    model, ref = pair(kind, tokenizer, folder)
    rows = head_table(model, [SENTENCES["short"]], sequences=1, period=5)
    assert [(r["layer"], r["head"]) for r in rows] == [(layer, h) for layer in range(2) for h in range(4)]
    assert all(r["previous_token"] is None and r["induction"] is None for r in rows[:4])
    ids = engine.trace(model, SENTENCES["short"]).tokens.ids
    want = M.head_metrics(reference(ref, ids)[0], [], square=True)["previous"]
    np.testing.assert_allclose([r["previous_token"] for r in rows[4:]], want, atol=1e-5)


def test_ablation_and_patching_reach_only_the_heads_a_hybrid_has(tokenizer, folder) -> None:
    """Qwen3-Next: switching off a full layer's head equals zeroing its columns of ``o_proj`` by hand; a linear layer
    has no heads to switch off (a clear error) and its row of head patching is NaN, the full layer's row equals
    patching the clean run's head output into the corrupted run by hand."""
    import copy

    from engine.analysis.ablation import ablate
    from engine.analysis.patching import patch_heads
    from engine.records import EngineError

    model, ref = pair("qwen3_next", tokenizer, folder)
    r = ablate(model, "The cat sat on the", [(1, 2)], top_k=12)
    hand = copy.deepcopy(ref)
    with torch.no_grad():
        hand.model.layers[1].self_attn.o_proj.weight[:, 16:24] = 0.0  # head 2 of 4, 8 dims each
        after = torch.softmax(hand(input_ids=torch.tensor([list(r.tokens.ids)])).logits[0, -1].double(), -1)
    np.testing.assert_allclose(r.top_after, after.numpy()[list(r.top_ids)], atol=1e-6)
    with pytest.raises(EngineError, match="Layer 0 has no attention heads to switch off"):
        ablate(model, "The cat sat on the", [(0, 1)])

    clean, corrupt = "The cat sat on the mat because it was", "The dog sat on the mat because it was"
    got = patch_heads(model, clean, corrupt, "cat", "dog")
    proj = ref.model.layers[1].self_attn.o_proj
    ids = [torch.tensor([tokenizer(t)["input_ids"]]) for t in (clean, corrupt)]
    a, w = (tokenizer(" " + t)["input_ids"][0] for t in ("cat", "dog"))
    saved = {}
    with torch.no_grad():
        hook = proj.register_forward_pre_hook(lambda m, args: saved.setdefault("z", args[0].clone()))
        d_clean = (lambda lg: lg[0, -1, a] - lg[0, -1, w])(ref(input_ids=ids[0]).logits).item()
        hook.remove()
        d_corrupt = (lambda lg: lg[0, -1, a] - lg[0, -1, w])(ref(input_ids=ids[1]).logits).item()
        want = []
        for h in range(4):

            def put(m, args, h=h):
                z = args[0].clone()
                z[..., 8 * h : 8 * h + 8] = saved["z"][..., 8 * h : 8 * h + 8]
                return (z,)

            hook = proj.register_forward_pre_hook(put)
            lg = ref(input_ids=ids[1]).logits
            hook.remove()
            want.append(((lg[0, -1, a] - lg[0, -1, w]).item() - d_corrupt) / (d_clean - d_corrupt))
    assert np.isnan(got[0]).all()
    np.testing.assert_allclose(got[1], want, atol=1e-4)
