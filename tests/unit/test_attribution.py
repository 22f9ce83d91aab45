"""Token importances (``engine.analysis.attribution``) against independent references.

- gradient×input and integrated gradients against central finite differences of f in float64 (float64 copies
  of our GPT and BERT and of MiniLM), and IG's completeness (Σ IG = f(input) − f(baseline)) within tolerance;
- leave-one-out against a direct re-run of the model from token ids (no embedding hook);
- the three attention readings against the trace (rows that sum to 1, the embedding's mean of rows).
"""

from __future__ import annotations

import copy
import dataclasses
import threading

import numpy as np
import pytest
import torch

import engine
from engine.analysis.attribution import (
    attention_scores,
    contribution_scores,
    embed,
    gradient_x_input,
    importance,
    integrated_gradients,
    leave_one_out,
    outputs,
    predict,
    rollout_scores,
    trapezoid_weights,
    value_of,
)
from engine.records import EngineError

GPT_TEXT = "lily found a red ball . she gave the red"
BERT_TEXT = "lily found a red ball . she gave [MASK] to tom ."
MINILM_TEXT = "The cat sat on the mat."
REFERENCE = "A dog slept on the rug."
H = 1e-6  # finite-difference step (float64)


def float64(model):
    """A private float64 copy of a loaded model (the shared one is not touched)."""
    return dataclasses.replace(
        model, module=copy.deepcopy(model.module).double(), lock=threading.Lock(), _cpu_module=None
    )


@pytest.fixture(scope="module")
def bert():
    return engine.load("tiny-bert-stories")


@pytest.fixture(scope="module")
def cases(tiny_stories, bert, minilm):
    """(float64 model, its prediction) for the three tasks."""
    out = {}
    for name, model, text, ref in (
        ("gpt", tiny_stories, GPT_TEXT, ""),
        ("bert", bert, BERT_TEXT, ""),
        ("minilm", minilm, MINILM_TEXT, REFERENCE),
    ):
        m64 = float64(model)
        out[name] = (m64, predict(m64, text, reference=ref))
    return out


def f_at(model, pred, points: np.ndarray) -> np.ndarray:
    """f at input embeddings ``points`` ``[B, T, D]`` (float64, no gradients)."""

    def run(module, device):
        e = torch.as_tensor(points, dtype=torch.float64, device=device)
        out = outputs(model, module, pred.task, pred.causal, pred.ids, e, pred.position)
        return value_of(pred, out).double().cpu().numpy()

    return model.run(run)[0]


def word_embeddings(model, pred) -> np.ndarray:
    return model.run(lambda module, device: embed(model, module, pred.ids, device).double().cpu().numpy())[0]


def test_predictions_name_the_task_and_target(cases):
    gpt_pred, bert_pred, minilm_pred = cases["gpt"][1], cases["bert"][1], cases["minilm"][1]
    assert gpt_pred.task == "next-token" and gpt_pred.position == len(gpt_pred.tokens) - 1
    assert bert_pred.task == "masked-word" and bert_pred.tokens.strings[bert_pred.position] == "<mask>"
    assert bert_pred.excluded == (bert_pred.position,)
    assert minilm_pred.task == "embedding" and minilm_pred.position is None
    assert -1 <= minilm_pred.value <= 1 and np.isclose(np.linalg.norm(minilm_pred.reference_embedding), 1)
    for pred in (gpt_pred, bert_pred):  # f is the log-probability of the most likely token
        assert np.isclose(np.exp(pred.value), pred.probability) and 0 < pred.probability <= 1


@pytest.mark.parametrize("name", ["gpt", "bert", "minilm"])
def test_gradient_x_input_equals_finite_differences(cases, name):
    model, pred = cases[name]
    e = word_embeddings(model, pred)  # [T, D]
    n = len(e)
    points = []
    for i in range(n):  # ∂/∂t f(e with e_i scaled by 1 + t) at t = 0 is ∇_i f · e_i
        for sign in (1, -1):
            p = e.copy()
            p[i] *= 1 + sign * H
            points.append(p)
    f = f_at(model, pred, np.stack(points)).reshape(n, 2)
    reference = (f[:, 0] - f[:, 1]) / (2 * H)
    got = gradient_x_input(model, pred)
    np.testing.assert_allclose(got, reference, rtol=1e-5, atol=1e-7 * max(1.0, np.abs(reference).max()))


@pytest.mark.parametrize("name,baseline", [("gpt", "zero"), ("bert", "pad"), ("minilm", "zero")])
def test_integrated_gradients_equal_a_finite_difference_trapezoid(cases, name, baseline):
    """The same trapezoid rule over the path, with each gradient·(e_i − b_i) taken by central differences."""
    model, pred = cases[name]
    steps = 6
    e = word_embeddings(model, pred)
    base = (
        np.zeros_like(e)
        if baseline == "zero"
        else np.broadcast_to(
            model.run(lambda module, device: embed(model, module, [0], device).double().cpu().numpy())[0], e.shape
        )
    )
    alphas, weights = trapezoid_weights(steps)
    n = len(e)
    points = []
    for a in alphas:
        at = base + a * (e - base)
        for i in range(n):
            for sign in (1, -1):
                p = at.copy()
                p[i] += sign * H * (e[i] - base[i])
                points.append(p)
    f = f_at(model, pred, np.stack(points)).reshape(len(alphas), n, 2)
    reference = (weights[:, None] * (f[..., 0] - f[..., 1]) / (2 * H)).sum(axis=0)
    got = integrated_gradients(model, pred, steps=steps, baseline=baseline)
    np.testing.assert_allclose(got.scores, reference, rtol=1e-5, atol=1e-7 * max(1.0, np.abs(reference).max()))
    f_ends = f_at(model, pred, np.stack([np.asarray(base), e]))
    assert got.f_baseline == pytest.approx(f_ends[0], abs=1e-9) and got.f_input == pytest.approx(f_ends[1], abs=1e-9)
    assert got.f_input == pytest.approx(pred.value, abs=1e-9)


@pytest.mark.parametrize("name", ["gpt", "minilm"])
def test_integrated_gradients_are_complete(cases, name):
    """Σ IG → f(input) − f(baseline) as the steps grow; at 128 steps the gap is under 1% of the difference."""
    model, pred = cases[name]
    coarse = integrated_gradients(model, pred, steps=4)
    fine = integrated_gradients(model, pred, steps=128)
    total = fine.f_input - fine.f_baseline
    assert abs(fine.gap) < 0.01 * abs(total)
    assert abs(fine.gap) < abs(coarse.gap)
    assert fine.gap == pytest.approx(total - fine.scores.sum(), abs=1e-12)


def test_progress_is_reported_up_to_one(cases):
    model, pred = cases["gpt"]
    seen = []
    integrated_gradients(model, pred, steps=40, chunk=8, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) == 6  # 41 points in batches of 8


def test_leave_one_out_removal_equals_a_direct_rerun(tiny_stories, bert):
    for model, text in ((tiny_stories, GPT_TEXT), (bert, BERT_TEXT)):
        pred = predict(model, text)
        got = leave_one_out(model, pred, "remove")
        for i in range(len(pred.ids)):
            if i in pred.excluded:
                assert np.isnan(got[i])
                continue
            ids = [t for j, t in enumerate(pred.ids) if j != i]
            position = len(ids) - 1 if pred.task == "next-token" else pred.position - (i < pred.position)
            with torch.no_grad():
                logits = model.module(torch.tensor([ids], device=model.device), causal=pred.causal)[
                    0, position
                ].double()
            direct = pred.value - float(torch.log_softmax(logits, -1)[pred.target_id])
            assert got[i] == pytest.approx(direct, abs=1e-4), (text, i)


def test_leave_one_out_replacement_equals_a_direct_rerun(minilm):
    pred = predict(minilm, MINILM_TEXT, reference=REFERENCE)
    got = leave_one_out(minilm, pred, "replace")
    mask = minilm.tokenizer.mask_token_id
    base = minilm.adapter.base(minilm.module)
    for i in range(len(pred.ids)):
        ids = list(pred.ids)
        ids[i] = mask
        with torch.no_grad():
            hidden = base(input_ids=torch.tensor([ids], device=minilm.device)).last_hidden_state[0].double()
        e = torch.nn.functional.normalize(hidden.mean(0), dim=0).cpu().numpy()
        assert got[i] == pytest.approx(pred.value - float(e @ pred.reference_embedding), abs=1e-5)


def test_attention_readings_come_from_the_trace(tiny_stories, minilm):
    pred = predict(tiny_stories, GPT_TEXT)
    trace = engine.trace(tiny_stories, GPT_TEXT)
    last = trace.n_layers - 1
    np.testing.assert_allclose(attention_scores(trace, pred), trace.pattern(last).mean(0)[-1], atol=1e-7)
    assert attention_scores(trace, pred).sum() == pytest.approx(1.0, abs=1e-5)
    assert rollout_scores(trace, pred).sum() == pytest.approx(1.0, abs=1e-5)
    heads = [trace.contributions(last, h)[-1] for h in range(trace.n_heads)]
    np.testing.assert_allclose(contribution_scores(trace, pred), np.mean(heads, axis=0), rtol=1e-6)
    emb = predict(minilm, MINILM_TEXT, reference=REFERENCE)
    mtrace = engine.trace(minilm, MINILM_TEXT)
    np.testing.assert_allclose(
        attention_scores(mtrace, emb), mtrace.pattern(mtrace.n_layers - 1).mean(0).mean(0), atol=1e-7
    )
    with pytest.raises(EngineError):
        attention_scores(engine.trace(tiny_stories, "the cat"), pred)  # another input's trace


def test_importance_leaves_the_blank_out(bert):
    pred = predict(bert, BERT_TEXT)
    for method in ("attention", "grad_input"):
        scores = importance(bert, pred, method).scores
        assert np.isnan(scores[pred.position]) and np.isfinite(np.delete(scores, pred.position)).all()


def test_bad_inputs_say_what_to_do(tiny_stories, bert, minilm):
    with pytest.raises(EngineError, match=r"\[MASK\]"):
        predict(bert, "lily found a red ball .")
    with pytest.raises(EngineError, match="reference"):
        predict(minilm, MINILM_TEXT, reference="  ")
    pred = predict(tiny_stories, GPT_TEXT)
    with pytest.raises(EngineError, match="steps"):
        integrated_gradients(tiny_stories, pred, steps=0)
    with pytest.raises(EngineError, match="baseline"):
        integrated_gradients(tiny_stories, pred, baseline="noise")
    with pytest.raises(EngineError, match="Unknown method"):
        importance(tiny_stories, pred, "saliency")
