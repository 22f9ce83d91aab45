"""``AttentionTrace.contributions`` is Kobayashi et al.'s ‖α_ij f_h(x_j)‖, f_h(x) = (x W_V^h + b_V^h) W_O^h.

Each reference is computed independently in float64 from the model's own modules: a float64 copy run
eagerly with ``output_attentions=True`` gives α; a forward hook on its value projection gives the
value vectors (bias included); each head's block of the output projection's weight is sliced by hand
and applied as a full ``[keys, d_model]`` product (the engine uses a Gram-matrix shortcut instead).
Families: MiniLM (offline package), a tiny random GPT-2 (Conv1D projections), a tiny random Llama with
grouped-query attention and biases, the cross-attention of tiny random T5 and BART, and our own
transformer. A last test shows that the measure differs from α·‖v‖ on MiniLM, so agreement with the
reference cannot come from the old measure.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.families.transformer.adapter import trace_own
from engine.families.transformer.network import Transformer, TransformerConfig
from engine.records import EngineError, Tokens
from engine.traces.attention import AttentionTrace
from tests.hf_helpers import build as build_text
from tests.hf_helpers import tiny_llama
from tests.seq2seq_models import save_tiny_seq2seq

RTOL = 1e-5  # relative to the head's largest contribution
SENTENCE = "The animal didn't cross the street because it was too tired, and the cat sat on the mat."


@contextmanager
def outputs_of(modules: list[torch.nn.Module]):
    """Collect each module's forward output (batch 0, float64 numpy) while the context is open."""
    got: list[np.ndarray | None] = [None] * len(modules)

    def keep(i):
        def hook(_module, _inputs, output):
            got[i] = output[0].detach().double().cpu().numpy()

        return hook

    handles = [m.register_forward_hook(keep(i)) for i, m in enumerate(modules)]
    try:
        yield got
    finally:
        for h in handles:
            h.remove()


def reference(alpha: np.ndarray, values: np.ndarray, w_o: np.ndarray, n_heads: int, *, conv1d: bool = False):
    """``[head, q, k]`` α^h_ij · ‖v^h_j W_O^h‖ by the definition, in float64.

    Args:
        alpha: ``[head, q, k]`` attention weights.
        values: ``[k, kv_heads · d_head]`` the value projection's output (bias included).
        w_o: the output projection's weight: ``[d_model, heads · d_head]`` (nn.Linear) or
            ``[heads · d_head, d_model]`` (GPT-2's Conv1D, ``conv1d=True``).
    """
    d_head = (w_o.shape[0] if conv1d else w_o.shape[1]) // n_heads
    kv_heads = values.shape[1] // d_head
    out = np.empty_like(alpha, dtype=np.float64)
    for h in range(n_heads):
        g = h // (n_heads // kv_heads)  # the key/value head query head h reads
        v = values[:, g * d_head : (g + 1) * d_head]  # [k, d_head]
        block = w_o[h * d_head : (h + 1) * d_head, :] if conv1d else w_o[:, h * d_head : (h + 1) * d_head].T
        f = v @ block  # [k, d_model]: f_h(x_j) for every key
        out[h] = alpha[h] * np.linalg.norm(f, axis=1)[None, :]
    return out


def assert_matches(tr: AttentionTrace, layer: int, ref: np.ndarray, what: str) -> float:
    """Compare every head of ``layer``; returns how uneven the reference's rows are (0: flat)."""
    assert ref.shape == (tr.n_heads, tr.n_queries, tr.n_keys)
    for head in range(tr.n_heads):
        ours = tr.contributions(layer, head)
        assert ours.dtype == np.float32
        err = float(np.abs(ours - ref[head]).max() / np.abs(ref[head]).max())
        assert err < RTOL, f"{what} layer {layer} head {head}: relative error {err:.2e}"
        # the rows through the long-input path are the same numbers
        np.testing.assert_allclose(
            tr.pattern_rows(layer, head, 0, tr.n_queries, "contribution"),
            ours,
            rtol=1e-5,
            atol=1e-6 * float(ours.max()),
        )
    return float(np.ptp(ref / ref.max(axis=-1, keepdims=True)))


def assert_uneven(spreads: list[float]) -> None:
    """Rows vary across keys by far more than the tolerance (tiny random BART's cross-attention: ~3%),
    so a wrong factor per key could not pass."""
    assert max(spreads) > 0.02, f"the references are flat ({spreads}): the comparison would mean little"


def weight(linear) -> np.ndarray:
    return linear.weight.detach().double().cpu().numpy()


# ---- MiniLM --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def minilm():
    from transformers import AutoModel

    from engine.registry import minilm_path

    model = engine.load("minilm")
    ref = AutoModel.from_pretrained(minilm_path(), attn_implementation="eager", dtype=torch.float64).eval()
    return model, ref


def test_minilm_contributions_equal_the_definition(minilm) -> None:
    model, ref = minilm
    tr = engine.trace(model, SENTENCE)
    layers = ref.encoder.layer
    with torch.no_grad(), outputs_of([layer.attention.self.value for layer in layers]) as values:
        out = ref(input_ids=torch.tensor([list(tr.tokens.ids)]), output_attentions=True)
    spreads = [
        assert_matches(
            tr,
            i,
            reference(out.attentions[i][0].numpy(), values[i], weight(layer.attention.output.dense), tr.n_heads),
            "minilm",
        )
        for i, layer in enumerate(layers)
    ]
    assert_uneven(spreads)


def test_minilm_contribution_ranks_keys_differently_from_value_length(minilm) -> None:
    """The issue's finding, measured: the output projection changes which key contributes most."""
    model, _ = minilm
    tr = engine.trace(model, SENTENCE)
    moved_rows, moved_totals = 0, 0
    for layer in range(tr.n_layers):
        for head in range(tr.n_heads):
            exact = tr.contributions(layer, head)
            by_length = tr.pattern(layer, head) * tr.value_norms(layer, head)[None, :]
            moved_rows += int((exact.argmax(axis=1) != by_length.argmax(axis=1)).sum())
            moved_totals += int(exact.sum(axis=0).argmax() != by_length.sum(axis=0).argmax())
    assert moved_rows > 0 and moved_totals > 0, (moved_rows, moved_totals)
    # and the two are not proportional in any sense a colour scale would hide: the ratio varies by key
    ratio = tr.output_norms(0, 0) / tr.value_norms(0, 0)
    assert float(ratio.max() / ratio.min()) > 1.05


# ---- GPT-2 (Conv1D) and Llama (grouped-query attention, biases) ----------------------------------------
@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("contrib_gpt2") / "gpt2"
    build_text("gpt2", folder)
    return folder


def test_gpt2_contributions_equal_the_definition(gpt2_folder) -> None:
    from transformers import AutoModelForCausalLM

    model = engine.load(str(gpt2_folder))
    ref = AutoModelForCausalLM.from_pretrained(gpt2_folder, attn_implementation="eager", dtype=torch.float64).eval()
    tr = engine.trace(model, SENTENCE)
    blocks = ref.transformer.h
    with torch.no_grad(), outputs_of([b.attn.c_attn for b in blocks]) as qkv:
        out = ref(input_ids=torch.tensor([list(tr.tokens.ids)]), output_attentions=True)
    d_model = ref.config.n_embd
    spreads = []
    for i, block in enumerate(blocks):
        values = qkv[i][:, 2 * d_model :]  # c_attn writes [q | k | v]
        ref_c = reference(out.attentions[i][0].numpy(), values, weight(block.attn.c_proj), tr.n_heads, conv1d=True)
        spreads.append(assert_matches(tr, i, ref_c, "gpt2"))
    assert_uneven(spreads)


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory) -> Path:
    import transformers as tf

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    eos = tokenizer.eos_token_id
    config = tiny_llama(len(tokenizer), eos, max_position_embeddings=128, attention_bias=True)
    torch.manual_seed(0)
    module = tf.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():  # value biases far from zero: f_h must include b_V
        for layer in module.model.layers:
            layer.self_attn.v_proj.bias.normal_(0.0, 0.5)
    folder = tmp_path_factory.mktemp("contrib_llama") / "llama"
    module.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_llama_gqa_contributions_equal_the_definition(llama_folder) -> None:
    from transformers import AutoModelForCausalLM

    model = engine.load(str(llama_folder))
    ref = AutoModelForCausalLM.from_pretrained(llama_folder, attn_implementation="eager", dtype=torch.float64).eval()
    tr = engine.trace(model, SENTENCE)
    assert tr.kv_heads == 2 and tr.n_heads == 4  # heads 0, 1 share a value head, 2, 3 the other
    layers = ref.model.layers
    with torch.no_grad(), outputs_of([layer.self_attn.v_proj for layer in layers]) as values:
        out = ref(input_ids=torch.tensor([list(tr.tokens.ids)]), output_attentions=True, use_cache=False)
    spreads = []
    for i, layer in enumerate(layers):
        assert values[i].shape[1] == 2 * 8  # two key/value heads of d_head 8
        ref_c = reference(out.attentions[i][0].numpy(), values[i], weight(layer.self_attn.o_proj), tr.n_heads)
        spreads.append(assert_matches(tr, i, ref_c, "llama"))
    assert_uneven(spreads)
    # same value vectors, different W_O^h: heads sharing a value head still weigh keys differently
    assert not np.allclose(tr.output_norms(0, 0), tr.output_norms(0, 1), rtol=1e-3)


# ---- encoder-decoders: cross-attention -----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["t5", "bart"])
def test_cross_attention_contributions_equal_the_definition(tmp_path, kind: str) -> None:
    from transformers import AutoModelForSeq2SeqLM

    folder = save_tiny_seq2seq(kind, tmp_path / kind)
    model = engine.load(str(folder))
    ref = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float64).eval()
    tr = engine.trace(model, "the cat sat on the mat")
    if kind == "t5":
        cross = [block.layer[1].EncDecAttention for block in ref.decoder.block]
        v_proj, o_proj = [a.v for a in cross], [a.o for a in cross]
    else:
        cross = [layer.encoder_attn for layer in ref.model.decoder.layers]
        v_proj, o_proj = [a.v_proj for a in cross], [a.out_proj for a in cross]
    with torch.no_grad(), outputs_of(v_proj) as values:
        out = ref(
            input_ids=torch.tensor([list(tr.source.ids)]),
            decoder_input_ids=torch.tensor([list(tr.target.ids)]),
            output_attentions=True,
        )
    att = tr.cross
    assert att.n_keys == len(tr.source) and att.n_queries == len(tr.target)
    spreads = []
    for i in range(len(cross)):
        ref_c = reference(out.cross_attentions[i][0].numpy(), values[i], weight(o_proj[i]), att.n_heads)
        spreads.append(assert_matches(att, i, ref_c, f"{kind} cross"))
    assert_uneven(spreads)
    assert tr.encoder.has_contributions and tr.decoder.has_contributions


# ---- our own transformer -------------------------------------------------------------------------------
def test_own_transformer_contributions_equal_the_definition() -> None:
    torch.manual_seed(0)
    cfg = TransformerConfig(
        vocab_size=23, d_model=16, n_layers=2, n_heads=2, d_mlp=32, max_len=12, pos_encoding="learned", causal=True
    )
    model = Transformer(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    tr = trace_own(model, ids, Tokens(tuple(f"w{i}" for i in ids), tuple(ids), (False,) * len(ids)), model_id="own")
    ref = copy.deepcopy(model).double()
    patterns = [b.attn.hook_pattern for b in ref.blocks]
    with torch.no_grad(), outputs_of([b.attn.w_v for b in ref.blocks]) as values, outputs_of(patterns) as alphas:
        ref(torch.tensor([ids]), causal=True, attn_impl="explicit")
    assert_uneven(
        [
            assert_matches(tr, i, reference(alphas[i], values[i], weight(block.attn.w_o), cfg.n_heads), "own")
            for i, block in enumerate(ref.blocks)
        ]
    )


# ---- the long-input path and a trace without norms -----------------------------------------------------
def test_overview_pools_contributions_and_a_trace_without_norms_says_why() -> None:
    rng = np.random.default_rng(0)
    n, h, d = 40, 2, 4
    tokens = Tokens(tuple(f"t{i}" for i in range(n)), tuple(range(n)), (False,) * n)
    q, k, v = (rng.normal(size=(h, n, d)).astype(np.float32) for _ in range(3))
    norms = rng.uniform(0.5, 2.0, size=(h, n)).astype(np.float32)
    tr = AttentionTrace("hand", "decoder", tokens, tokens, (q,), (k,), (v,), (0.5,), True, value_out_norms=(norms,))
    exact = tr.contributions(0, 1)
    np.testing.assert_allclose(exact, tr.pattern(0, 1) * norms[1][None, :], rtol=1e-6)
    np.testing.assert_allclose(tr.overview(0, 1, size=64, weighting="contribution"), exact, rtol=1e-5, atol=1e-7)
    pooled = tr.overview(0, 1, size=8, weighting="contribution")  # 5 × 5 blocks, their maxima
    np.testing.assert_allclose(pooled, exact.reshape(8, 5, 8, 5).max(axis=(1, 3)), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match=r"value_out_norms must be \[head, k_pos\]"):
        AttentionTrace(
            "hand", "decoder", tokens, tokens, (q,), (k,), (v,), (0.5,), True, value_out_norms=(norms[:, :3],)
        )
    bare = AttentionTrace("hand", "decoder", tokens, tokens, (q,), (k,), (v,), (0.5,), True)
    assert not bare.has_contributions
    with pytest.raises(EngineError, match="output-projection norms"):
        bare.contributions(0, 0)
    with pytest.raises(EngineError, match="output-projection norms"):
        bare.overview(0, 0, weighting="contribution")


def test_own_translator_and_vit_keep_norms_through_their_own_w_o() -> None:
    """Our encoder-decoder (all three blocks) and ViT: ‖v^h_j W_O^h‖ from each block's own w_o, by the definition."""
    from engine.families.vit.adapter import trace_vit

    model = engine.load("tiny-translator")
    tr = engine.trace(model, "the red car is fast")
    stacks = {"encoder": ("encoder", "attn"), "decoder": ("decoder", "attn"), "cross": ("decoder", "cross_attn")}
    for name, att in tr.attention_blocks().items():
        stack, attr = stacks[name]
        for layer, block in enumerate(getattr(model.module, stack).blocks):
            w_o = weight(getattr(block, attr).w_o)
            want = reference(
                np.ones((att.n_heads, 1, att.n_keys)),
                att.v(layer).transpose(1, 0, 2).reshape(att.n_keys, -1),
                w_o,
                att.n_heads,
            )[:, 0]
            np.testing.assert_allclose(att.value_out_norms[layer], want, rtol=1e-5, err_msg=f"{name} {layer}")
    vit = engine.load("tiny-vit-digits").module
    att = trace_vit(vit, np.zeros((8, 8), np.float32), model_id="vit").attention
    for layer, block in enumerate(vit.blocks):
        want = reference(
            np.ones((att.n_heads, 1, att.n_keys)),
            att.v(layer).transpose(1, 0, 2).reshape(att.n_keys, -1),
            weight(block.attn.w_o),
            att.n_heads,
        )[:, 0]
        np.testing.assert_allclose(att.value_out_norms[layer], want, rtol=1e-5)
