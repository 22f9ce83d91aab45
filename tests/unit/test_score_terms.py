"""``engine.analysis.score_terms``: one score split by sources, RoPE bands or ALiBi's two terms.

References: the trace's own raw and masked scores (the parts must add up to them), the model's weights and
activations captured by hand with forward hooks (a source's query part worked out in torch), RoPE's complex form
``Re[q_c e^{imθ} · conj(k_c e^{inθ})]`` from the *unrotated* q and k, and the ALiBi slopes' closed form.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import engine
from engine.analysis.score_terms import CONTENT, DISTANCE, rope_band_distances, rope_band_rows, score_terms
from engine.capture import capture
from engine.checkpoint import save_checkpoint
from engine.families.transformer.adapter import load_own
from engine.families.transformer.network import Transformer, TransformerConfig
from engine.model import Model
from engine.records import EngineError, ModelSpec
from engine.vocab import Vocab
from tests.hf_helpers import tiny_llama

RTOL = 1e-5
WORDS = "the cat sat on a mat and dog ran to big red ball".split()
SENTENCE = "the cat sat on the mat and the dog ran to the big red ball"


def cells(tr) -> list[tuple[int, int, int, int]]:
    """A few (layer, head, query, key) cells: first and last layer, first and last head, near and far keys."""
    n, last = len(tr.tokens), tr.n_layers - 1
    return [(0, 0, 3, 1), (last, 1, n - 1, 0), (last, tr.n_heads - 1, n - 2, n - 3), (last // 2, 2, 5, 5)]


def assert_adds_up(tr, model) -> None:
    for layer, head, q, k in cells(tr):
        terms = score_terms(tr, layer, head, q, k, model=model)
        raw = float(tr.scores(layer, head, stage="raw")[q, k])
        # float32 parts: a score that nearly cancels (−0.035 from parts of ~1) is held to the parts' own size
        size = max(abs(raw), sum(abs(v) for v in terms.values()))
        assert sum(terms.values()) == pytest.approx(raw, rel=RTOL, abs=RTOL * size), (layer, head, q, k)


def own_model(tmp_path, name: str, **settings) -> Model:
    """A random own transformer (weights far from GPT-2's small init) saved and loaded as a checkpoint."""
    vocab = Vocab.from_words(WORDS)
    cfg = TransformerConfig(vocab_size=len(vocab), d_model=32, n_layers=3, n_heads=4, d_mlp=64, max_len=32, **settings)
    torch.manual_seed(0)
    module = Transformer(cfg)
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, 0.3)
    card = {"title": name, "label": name, "family": "decoder", "description": "", "final_metrics": {}}
    save_checkpoint(tmp_path, name, module, kind="transformer", config=cfg.to_dict(), vocab=vocab, card=card)
    return load_own(ModelSpec(name, "decoder", name, offline=True), tmp_path)


@pytest.fixture(scope="module")
def stories():
    model = engine.load("tiny-gpt-stories")
    return model, engine.trace(model, "Lily found a red ball and she gave it to Tom .")


@pytest.fixture(scope="module")
def induction():
    model = engine.load("induction-2l-attn-only")
    return model, engine.trace(model, "abcdefgabcdefg")


# ---- sources ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model_id", "text", "causal"),
    [
        ("tiny-gpt-stories", "Lily found a red ball and she gave it to Tom .", None),
        ("tiny-gpt-stories", "Lily found a red ball and she gave it to Tom .", False),
        ("tiny-bert-stories", "the cat sat on the mat and the dog ran .", None),
        ("tiny-bert-stories", "the cat sat on the mat and the dog ran .", True),
        ("induction-2l-attn-only", "abcdefgabcdefg", None),
        ("minilm", "The cat sat on the mat because it was tired.", None),
        ("minilm", "The cat sat on the mat because it was tired.", True),
        ("tiny-random-gpt2", "The cat sat on the mat because it was tired.", None),
    ],
)
def test_sources_add_up_to_the_raw_score(model_id, text, causal) -> None:
    model = engine.load(model_id)
    tr = engine.trace(model, text, causal=causal)
    assert_adds_up(tr, model)


@pytest.mark.parametrize(
    "settings",
    [
        dict(norm="post", pos_encoding="sinusoidal"),
        dict(norm="post", pos_encoding="rope", attn_only=True),
        dict(norm="pre", pos_encoding="alibi"),
        dict(norm="pre", pos_encoding="none", causal=False),
    ],
    ids=["post-sinusoidal", "post-rope-attn-only", "pre-alibi", "pre-none-encoder"],
)
def test_sources_add_up_on_every_own_layout(tmp_path, settings) -> None:
    model = own_model(tmp_path, "layout", **settings)
    tr = engine.trace(model, SENTENCE)
    assert_adds_up(tr, model)


@pytest.mark.parametrize("kind", ["roberta", "distilbert", "gpt2-layerscale"])
def test_sources_add_up_on_tiny_hf_models(tiny_hf_folders, kind) -> None:
    model = engine.load(str(tiny_hf_folders[kind]))
    tr = engine.trace(model, "The quick brown fox jumps over the lazy dog, and the cat watches it.")
    assert_adds_up(tr, model)


def test_source_names_follow_the_model(stories, induction) -> None:
    model, tr = stories
    terms = score_terms(tr, 2, 0, 6, 2, model=model)
    layers = [[*(f"head {i}.{h}" for h in range(4)), f"MLP {i}"] for i in range(2)]
    sources = ["token", "position", *layers[0], *layers[1], "bias"]  # in the order the stream gets them
    assert list(terms) == [f"{a} · {b}" for a in sources for b in sources]
    model, tr = induction  # RoPE, attention-only: no position source, no MLP
    assert list(score_terms(tr, 0, 1, 4, 2, model=model)) == [
        "token · token",
        "token · bias",
        "bias · token",
        "bias · bias",
    ]


def frozen_part(part: torch.Tensor, resid: torch.Tensor, ln: torch.nn.LayerNorm) -> torch.Tensor:
    """LayerNorm ``ln``'s share of ``part`` when its input is ``resid`` (scale held at ``resid``'s)."""
    sigma = torch.sqrt(resid.var(-1, unbiased=False, keepdim=True) + ln.eps)
    return (part - part.mean(-1, keepdim=True)) / sigma * ln.weight


def test_a_head_source_equals_its_output_carried_by_hand(stories) -> None:
    """Layer 1 of the stories model reads head 0.2's output z W_O (captured with hooks, not from the trace)
    through ln1 with its scale at the captured residual stream: its query part dotted with the trace's key is the
    row sum of that head's terms; layer 0's token·position term is the embeddings' worked by hand."""
    model, tr = stories
    module, (q, k), d = model.module, (9, 4), tr.d_head
    ids = torch.tensor([list(tr.tokens.ids)])
    names = ["blocks.0.attn.hook_z", "blocks.1.hook_resid_pre", "blocks.0.hook_resid_pre"]
    with torch.no_grad(), capture(module, names=names) as acts:
        module(ids, attn_impl="sdpa")
        block, z = module.blocks[1], acts["blocks.0.attn.hook_z"][0, q, 2]  # [d_head]
        out = z @ module.blocks[0].attn.w_o.weight[:, 2 * d : 3 * d].T  # head 2's block of W_O: [D]
        part = frozen_part(out, acts["blocks.1.hook_resid_pre"][0, q], block.ln1)
        q_part = (part @ block.attn.w_q.weight[3 * d : 4 * d].T).double().numpy()  # head 3's query
        ln = module.blocks[0].ln1
        x = acts["blocks.0.hook_resid_pre"][0]
        tok = frozen_part(module.embed.weight[ids[0, q]], x[q], ln) @ module.blocks[0].attn.w_q.weight[:d].T
        pos = frozen_part(module.pos_embed.weight[k], x[k], ln) @ module.blocks[0].attn.w_k.weight[:d].T
    terms = score_terms(tr, 1, 3, q, k, model=model)
    row = sum(v for name, v in terms.items() if name.startswith("head 0.2 · "))
    assert row == pytest.approx(float(q_part @ tr.k(1)[3, k].astype(np.float64)), rel=1e-4)
    assert abs(row) > 0.1  # a real share of the score (0.23 of 11.3 in absolute terms), far above the tolerance
    by_hand = float(tok.double() @ pos.double())
    assert score_terms(tr, 0, 0, q, k, model=model)["token · position"] == pytest.approx(by_hand, rel=1e-4)


# ---- RoPE bands ---------------------------------------------------------------------------------
def complex_bands(q: np.ndarray, k: np.ndarray, m: int, n: int, theta: np.ndarray, halves: bool) -> np.ndarray:
    """Each band's ``Re[q_c e^{imθ} conj(k_c e^{inθ})]`` from the unrotated ``q``, ``k`` ``[d_head]``."""
    half = len(q) // 2
    if halves:
        qc, kc = q[:half] + 1j * q[half:], k[:half] + 1j * k[half:]
    else:
        qc, kc = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    return np.real(qc * np.exp(1j * m * theta) * np.conj(kc * np.exp(1j * n * theta)))


def test_rope_bands_equal_the_rotation_of_the_unrotated_q_and_k(induction) -> None:
    model, tr = induction
    d = tr.d_head
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    ids = torch.tensor([list(tr.tokens.ids)])
    with torch.no_grad(), capture(model.module, names=["blocks.1.attn.hook_q", "blocks.1.attn.hook_k"]) as acts:
        model.module(ids, attn_impl="sdpa")
    q_all, k_all = (acts[f"blocks.1.attn.hook_{s}"][0].double().numpy() for s in "qk")  # [pos, head, d_head]
    for head, q, k in [(0, 9, 2), (2, 13, 7), (1, 5, 5)]:
        terms = score_terms(tr, 1, head, q, k, by="rope_bands")
        assert list(terms) == [f"band {i}" for i in range(d // 2)]
        want = complex_bands(q_all[q, head], k_all[k, head], q, k, theta, halves=False)
        np.testing.assert_allclose(list(terms.values()), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        assert sum(terms.values()) == pytest.approx(float(tr.scores(1, head, stage="raw")[q, k]), rel=RTOL)
    rows = rope_band_rows(tr, 0, 3, 8)  # every key at once: the same terms
    assert all(
        rows[f"band {i}"][4] == pytest.approx(score_terms(tr, 0, 3, 8, 4, by="rope_bands")[f"band {i}"])
        for i in range(d // 2)
    )


def test_rope_band_distances_average_the_rotated_bands_by_distance(induction) -> None:
    """Each band's mean over the pairs (i, j ≤ i) at distance i − j, from RoPE's complex form of the unrotated q
    and k captured by hand; summed over the bands, the mean raw score at that distance."""
    model, tr = induction
    d, n, (layer, head) = tr.d_head, len(tr.tokens), (1, 2)
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    ids = torch.tensor([list(tr.tokens.ids)])
    names = [f"blocks.{layer}.attn.hook_q", f"blocks.{layer}.attn.hook_k"]
    with torch.no_grad(), capture(model.module, names=names) as acts:
        model.module(ids, attn_impl="sdpa")
    q_all, k_all = (acts[name][0, :, head].double().numpy() for name in names)  # [pos, d_head], unrotated
    distances, bands = rope_band_distances(tr, layer, head)
    assert list(distances) == list(range(n)) and list(bands) == [f"band {i}" for i in range(d // 2)]
    raw = tr.scores(layer, head, stage="raw").astype(np.float64)
    for gap in (0, 1, 7, n - 1):
        pairs = [(i, i - gap) for i in range(gap, n)]
        want = np.mean([complex_bands(q_all[i], k_all[j], i, j, theta, halves=False) for i, j in pairs], axis=0)
        got = np.array([bands[f"band {b}"][gap] for b in range(d // 2)])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        assert got.sum() == pytest.approx(np.mean([raw[i, j] for i, j in pairs]), rel=RTOL)
    both = engine.trace(model, "abcdefgabcdefg", causal=False)  # no mask: keys ahead too, distances below 0
    assert list(rope_band_distances(both, 0, 0)[0]) == list(range(1 - n, n))
    with pytest.raises(EngineError, match="RoPE"):
        rope_band_distances(engine.trace(engine.load("tiny-gpt-stories"), "Lily found a ball ."), 0, 0)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A tiny random Llama (grouped-query attention, biases on q, k, v, o) loaded through the engine, its trace and
    the transformers module it was saved from."""
    import transformers as tf

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    torch.manual_seed(0)
    config = tiny_llama(len(tokenizer), tokenizer.eos_token_id, attention_bias=True)
    ref = tf.AutoModelForCausalLM.from_config(config).eval()
    folder = tmp_path_factory.mktemp("score_llama")
    ref.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    model = engine.load(str(folder))
    return model, engine.trace(model, "The cat sat on the mat because it was tired."), ref


def test_sources_add_up_on_a_llama(llama) -> None:
    model, tr, _ = llama
    assert tr.kv_heads == 2
    assert_adds_up(tr, model)
    assert "head 0.3 · MLP 0" in score_terms(tr, 1, 2, 9, 4, model=model)


def test_rope_bands_of_a_llama_pair_halves(llama) -> None:
    model, tr, ref = llama
    attn, d = ref.model.layers[1].self_attn, tr.d_head
    ids = torch.tensor([list(tr.tokens.ids)])
    with torch.no_grad(), capture({"q": attn.q_proj, "k": attn.k_proj}) as acts:
        ref(input_ids=ids, use_cache=False)
    q_all = acts["q"][0].double().numpy().reshape(len(ids[0]), -1, d)  # unrotated, [pos, head, d_head]
    k_all = acts["k"][0].double().numpy().reshape(len(ids[0]), -1, d)  # 2 key heads for 4 query heads
    theta = ref.config.rope_parameters["rope_theta"] ** (-np.arange(0, d, 2) / d)
    for head, q, k in [(0, 8, 3), (3, 10, 10)]:
        terms = score_terms(tr, 1, head, q, k, by="rope_bands", model=model)
        want = complex_bands(q_all[q, head], k_all[k, head // 2], q, k, theta, halves=True)
        np.testing.assert_allclose(list(terms.values()), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        assert sum(terms.values()) == pytest.approx(float(tr.scores(1, head, stage="raw")[q, k]), rel=RTOL)


# ---- ALiBi --------------------------------------------------------------------------------------
def test_alibi_terms_are_the_content_and_the_slope_times_distance(tmp_path) -> None:
    model = own_model(tmp_path, "alibi", pos_encoding="alibi")
    tr = engine.trace(model, SENTENCE)
    for layer, head, q, k in [(0, 0, 9, 2), (2, 3, 14, 0), (1, 1, 6, 6)]:
        terms = score_terms(tr, layer, head, q, k, by="alibi")
        assert list(terms) == [CONTENT, DISTANCE]
        assert terms[DISTANCE] == pytest.approx(-(2.0 ** (-8 * (head + 1) / 4)) * abs(q - k), rel=1e-6)
        raw = float(tr.scores(layer, head, stage="raw")[q, k])
        assert terms[CONTENT] == pytest.approx(raw / math.sqrt(tr.d_head), rel=RTOL)
        masked = float(tr.scores(layer, head, stage="masked")[q, k])  # what the softmax reads
        assert sum(terms.values()) == pytest.approx(masked, rel=RTOL)


# ---- where a split does not apply ---------------------------------------------------------------
def test_a_split_that_does_not_apply_says_so(stories, induction) -> None:
    model, tr = stories
    with pytest.raises(EngineError, match="RoPE"):
        score_terms(tr, 0, 0, 3, 1, by="rope_bands")
    with pytest.raises(EngineError, match="ALiBi"):
        score_terms(tr, 0, 0, 3, 1, by="alibi")
    with pytest.raises(EngineError, match="needs the model"):
        score_terms(tr, 0, 0, 3, 1)
    with pytest.raises(EngineError, match="tiny-gpt-stories"):
        score_terms(induction[1], 0, 0, 3, 1, model=model)  # another model's trace
    with pytest.raises(EngineError, match="ALiBi"):
        score_terms(induction[1], 0, 0, 3, 1, by="alibi")
    translator = engine.load("tiny-translator")
    encoder = engine.trace(translator, "the cat sees the dog").attention_blocks()["encoder"]
    with pytest.raises(EngineError, match="not for tiny-translator"):
        score_terms(encoder, 1, 0, 2, 1, model=translator)
    with pytest.raises(ValueError, match="by must be"):
        score_terms(tr, 0, 0, 3, 1, by="heads")
    with pytest.raises(IndexError, match="query"):
        score_terms(tr, 0, 0, len(tr.tokens), 1, by="sources", model=model)
