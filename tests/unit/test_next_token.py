"""Next-token prediction with temperature (engine.analysis.next_token) against independent references.

The reference is softmax(lm(ids).logits[0, -1] / T) from the model's own module: our decoder's forward
for tiny-gpt-stories, and HF's GPT2LMHeadModel loaded separately from the same folder for a tiny GPT-2.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine
from engine import EngineError
from engine.analysis.ablation import ablate
from engine.analysis.ablation_runs import runner_for
from engine.analysis.next_token import next_token_logits, probabilities

STORY = "the little girl saw a big red ball and she"
TEMPERATURES = (0.1, 0.5, 1.0, 2.0)


@pytest.fixture(scope="module")
def tiny_gpt2(tiny_hf_folders):
    folder = tiny_hf_folders["gpt2"]  # the tiny random GPT-2 of the parity tests
    return folder, engine.load(str(folder))


def _reference(logits: torch.Tensor, t: float) -> np.ndarray:
    return torch.softmax(logits.double() / t, dim=-1).cpu().numpy()


@pytest.mark.parametrize("t", TEMPERATURES)
def test_own_decoder_equals_its_forward(tiny_stories, t):
    nt = next_token_logits(tiny_stories, STORY)
    assert nt.logits.dtype == np.float32 and nt.logits.shape == (len(tiny_stories.tokenizer),)
    ids = list(runner_for(tiny_stories).prepare(tiny_stories, STORY, causal=None, max_tokens=512).ids)
    ids = torch.tensor([ids], device=tiny_stories.device)
    with torch.no_grad():
        ref = _reference(tiny_stories.module(ids)[0, -1], t)  # (V,)
    p = probabilities(nt.logits, t)
    np.testing.assert_allclose(p, ref, atol=1e-5)
    assert list(nt.top_ids) == list(np.argsort(-ref, kind="stable")[:10])


@pytest.mark.parametrize("t", TEMPERATURES)
def test_gpt2_equals_hf_lm_head(tiny_gpt2, t):
    from transformers import GPT2LMHeadModel

    folder, model = tiny_gpt2
    nt = next_token_logits(model, "The cat sat on the")
    lm = GPT2LMHeadModel.from_pretrained(str(folder)).eval()  # same weights, loaded apart from the engine
    with torch.no_grad():
        ref = _reference(lm(input_ids=torch.tensor([list(nt.tokens.ids)])).logits[0, -1], t)
    np.testing.assert_allclose(probabilities(nt.logits, t), ref, atol=1e-5)
    assert list(nt.top_ids) == list(np.argsort(-ref, kind="stable")[:10])


def test_t1_equals_the_ablation_panel(tiny_stories):
    nt = next_token_logits(tiny_stories, STORY)
    r = ablate(tiny_stories, STORY, [], top_k=10)
    assert nt.top_ids == r.top_ids and nt.top_tokens == r.top_tokens
    np.testing.assert_allclose(probabilities(nt.logits, 1.0)[list(nt.top_ids)], r.top_before, rtol=1e-5)


def test_low_temperature_is_the_argmax_high_is_flatter(tiny_stories):
    nt = next_token_logits(tiny_stories, STORY)
    top = nt.top_ids[0]
    assert probabilities(nt.logits, 0.01)[top] >= 0.99
    p1, p2 = probabilities(nt.logits, 1.0), probabilities(nt.logits, 2.0)
    assert p2[top] < p1[top]
    assert -(p2 * np.log(p2 + 1e-300)).sum() > -(p1 * np.log(p1 + 1e-300)).sum()  # more entropy


def test_encoder_and_bad_temperature_refused(minilm, tiny_stories):
    with pytest.raises(EngineError, match="needs a decoder"):
        next_token_logits(minilm, "a sentence")
    nt = next_token_logits(tiny_stories, STORY)
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(EngineError, match="Temperature"):
            probabilities(nt.logits, bad)


def test_catalog_tiny_random_gpt2_equals_a_separate_hf_copy():
    from transformers import GPT2LMHeadModel

    model = engine.load("tiny-random-gpt2")
    nt = next_token_logits(model, "The cat sat on the", top_k=10)
    lm = GPT2LMHeadModel(model.module.config).eval()  # HF's own class, weights copied in
    lm.load_state_dict(model.module.state_dict())
    with torch.no_grad():
        ref = _reference(lm(input_ids=torch.tensor([list(nt.tokens.ids)])).logits[0, -1], 0.7)
    np.testing.assert_allclose(probabilities(nt.logits, 0.7), ref, atol=1e-5)
    assert list(nt.top_ids) == list(np.argsort(-ref, kind="stable")[:10])
    assert model.module.training is False  # the shared module is left as it was


def test_no_hooks_left_and_weights_untouched(tiny_stories):
    def hooks(module):
        return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in module.modules())

    state = {k: v.clone() for k, v in tiny_stories.module.state_dict().items()}
    before = hooks(tiny_stories.module)
    next_token_logits(tiny_stories, STORY)
    assert hooks(tiny_stories.module) == before
    assert all(torch.equal(v, state[k]) for k, v in tiny_stories.module.state_dict().items())
