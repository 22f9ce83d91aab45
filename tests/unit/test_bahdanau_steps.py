"""engine.analysis.bahdanau_steps: one decoding step rebuilt in numpy equals what the model's hooks captured.

The references are the model's own hook outputs (``decoder.attn.hook_energies`` / ``hook_alignment`` /
``hook_context`` recorded during greedy decoding) and, for the pieces, a torch computation straight from
the module's ``nn.Linear`` layers — independent of the numpy code under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine
from engine.analysis.bahdanau_steps import (
    alignment_agreement,
    attention_parameters,
    find_disagreement,
    gold_alignment,
    step_breakdown,
    trace_agreement,
)
from engine.analysis.toy_grammar import EXAMPLES, reference, vocabulary_by_kind
from engine.corpora import translation as grammar

torch.set_num_threads(1)

SENTENCES = ["the red car is big", "she sees the small black dog .", "21 November 2026", "the blue cat sees a xyzzy"]


def _weight(linear: torch.nn.Linear) -> torch.Tensor:
    """A layer's weight in float64 on the CPU, next to the trace's numpy states (wherever the model runs)."""
    return linear.weight.detach().double().cpu()


@pytest.fixture(scope="module", params=["bahdanau-translator", "luong-translator"])
def model(request):
    return engine.load(request.param)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_every_step_equals_the_hooks(model, sentence):
    trace = engine.trace(model, sentence)
    params = attention_parameters(model)
    assert params.variant == trace.variant == model.module.cfg.variant
    for i in range(len(trace.target)):
        b = step_breakdown(params, trace, i)
        # energies recomputed from W s, U h, v (or W_h) equal the model's own hook_energies
        np.testing.assert_allclose(b.energies, trace.energies[i], rtol=1e-6, atol=1e-5)
        # softmax of the energies is the captured alignment, and the context is Σ_j α h(j)
        np.testing.assert_allclose(b.alignment, trace.alignment[i], atol=1e-6)
        np.testing.assert_allclose(b.context, trace.contexts[i], atol=1e-5)
        loop_context = sum(
            trace.alignment[i, j] * trace.encoder_states[j].astype(np.float64) for j in range(len(trace.source))
        )
        np.testing.assert_allclose(b.context, loop_context, atol=1e-5)
        assert b.target_word == trace.target.strings[i]
        assert b.probability == pytest.approx(float(trace.output_probs[i]))


def test_additive_pieces_match_the_modules():
    model = engine.load("bahdanau-translator")
    trace = engine.trace(model, "the red car is big")
    attn = model.module.decoder.attn
    b = step_breakdown(attention_parameters(model), trace, 2)
    s = torch.from_numpy(trace.decoder_states[2]).double()[None]
    h = torch.from_numpy(trace.encoder_states).double()
    with torch.no_grad():
        ws = s @ _weight(attn.w).T  # (1, d_attn)
        uh = h @ _weight(attn.u).T  # (S, d_attn)
        hidden = torch.tanh(ws + uh)
        e = (hidden @ _weight(attn.v).T)[:, 0]
    np.testing.assert_allclose(b.query, ws[0].numpy(), atol=1e-9)
    np.testing.assert_allclose(b.keys, uh.numpy(), atol=1e-9)
    np.testing.assert_allclose(b.hidden, hidden.numpy(), atol=1e-9)
    np.testing.assert_allclose(b.energies, e.numpy(), atol=1e-9)
    assert b.hidden.shape == (len(trace.source), model.module.cfg.d_attn)


def test_dot_pieces_match_the_module():
    model = engine.load("luong-translator")
    trace = engine.trace(model, "the red car is big")
    b = step_breakdown(attention_parameters(model), trace, 1)
    with torch.no_grad():
        keys = torch.from_numpy(trace.encoder_states).double() @ _weight(model.module.decoder.attn.w_h).T
    np.testing.assert_allclose(b.keys, keys.numpy(), atol=1e-9)
    np.testing.assert_allclose(b.hidden.sum(axis=1), b.energies, atol=1e-9)
    assert b.v is None


def test_step_out_of_range_and_wrong_variant():
    additive, dot = engine.load("bahdanau-translator"), engine.load("luong-translator")
    trace = engine.trace(additive, "the red car is big")
    with pytest.raises(IndexError):
        step_breakdown(attention_parameters(additive), trace, len(trace.target))
    assert step_breakdown(attention_parameters(additive), trace, -1).step == len(trace.target) - 1
    with pytest.raises(ValueError):
        step_breakdown(attention_parameters(dot), trace, 0)
    with pytest.raises(ValueError):
        attention_parameters(engine.load("tiny-translator"))


def test_agreement_on_a_hand_made_alignment():
    source, target = ["the", "red", "car"], ["la", "voiture", "rouge", "<eos>"]
    weights = np.array(
        [
            [0.2, 0.1, 0.7],  # la → car (gold: the)          disagrees
            [0.0, 0.1, 0.9],  # voiture → car (gold: car)     agrees
            [0.1, 0.8, 0.1],  # rouge → red (gold: red)       agrees
            [0.4, 0.3, 0.3],  # <eos>: no gold link, skipped
        ]
    )
    gold = [(0, 0), (1, 2), (2, 1)]  # (source, target)
    a = alignment_agreement(weights, gold, source, target)
    assert a.score == pytest.approx(2 / 3)
    assert len(a.rows) == 3
    (off,) = a.differing
    assert (off.target_word, off.argmax_word, off.gold_word) == ("la", "car", "the")
    assert off.weight_on_gold == pytest.approx(0.2)
    perfect = alignment_agreement(np.eye(3), [(0, 0), (1, 1), (2, 2)], source, target[:3])
    assert perfect.score == 1.0 and not perfect.differing
    with pytest.raises(IndexError):
        alignment_agreement(weights, [(5, 0)], source, target)


def test_agreement_of_a_real_trace_uses_the_grammar():
    trace = engine.trace(engine.load("bahdanau-translator"), "the red car is big")
    gold, why = gold_alignment(trace)
    assert gold == grammar.alignment("the red car is big") and why == ""
    a, _ = trace_agreement(trace)
    expected = np.mean([int(np.argmax(trace.alignment[t])) == s for s, t in gold])
    assert a.score == pytest.approx(expected)


def test_no_gold_alignment_outside_the_grammar():
    model = engine.load("bahdanau-translator")
    for text in ("21 November 2026", "the blue cat sees a xyzzy", "red the car is"):
        agreement, why = trace_agreement(engine.trace(model, text))
        assert agreement is None and why


@pytest.mark.parametrize("model_id", ["bahdanau-translator", "luong-translator"])
def test_the_differs_example_really_differs(model_id):
    model = engine.load(model_id)
    found = find_disagreement(model)
    assert found is not None, "the shipped model should disagree with the gold alignment somewhere"
    # recompute from scratch: the model translates it exactly, and some word's argmax is not its gold word
    trace = engine.trace(model, found.sentence)
    assert [t for t in trace.target.strings if t != "<eos>"] == grammar.tokenize(grammar.translate(found.sentence))
    gold = grammar.alignment(found.sentence)
    argmax = {t: int(np.argmax(trace.alignment[t])) for _, t in gold}
    wrong = [(s, t) for s, t in gold if argmax[t] != s]
    assert wrong, found
    assert found.agreement.score == pytest.approx(1 - len(wrong) / len(gold))
    assert {r.target_index for r in found.agreement.differing} == {t for _, t in wrong}
    assert find_disagreement(model).sentence == found.sentence  # deterministic


def test_references_and_vocabulary():
    assert reference("The red car is big.").text == "la voiture rouge est grande ."
    assert reference("21 November 2026").text == "2026-11-21"
    assert reference("the red car is big").matches("la voiture rouge est grande")
    assert not reference("the red car is big").matches("la voiture rouge est grand")
    bad = reference("the red cra is big")
    assert not bad.text and "cra" in bad.why
    assert "30 February" in reference("30 February 2023").why
    vocab = vocabulary_by_kind()
    words = {w for ws in vocab.values() for w in ws if not w[0].isupper()}
    src = engine.load("bahdanau-translator").tokenizer["source"]
    assert grammar.EN_VOCAB <= words, grammar.EN_VOCAB - words
    unknown = [w for w in words if w not in src.tokens]
    assert not unknown, f"vocabulary lists words the model never saw: {unknown}"
    for example in EXAMPLES:
        assert reference(example).text, example
