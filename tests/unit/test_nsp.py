"""Next-sentence prediction: the pairs it makes, the [CLS] classifier's arithmetic, and that fine-tuning learns."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine
from engine.capture import capture
from engine.corpora import story_corpus
from engine.records import EngineError
from engine.training.finetune import train_classifier, trainable_copy
from engine.training.nsp import NspTask, encode_pair, finetune_nsp, nsp_pairs
from engine.vocab import BOS_ID, PAD_ID, SEP_ID


@pytest.fixture(scope="module")
def model():
    return engine.load("tiny-bert-stories")


@pytest.fixture(scope="module")
def stories():
    return story_corpus(300, 3)


def sentences_of(story: list[str]) -> list[list[str]]:
    """The test's own split: a sentence ends after each full stop."""
    out, current = [], []
    for word in story:
        current.append(word)
        if word == ".":
            out.append(current)
            current = []
    return out + ([current] if current else [])


def test_half_of_the_pairs_are_real(stories):
    pairs = nsp_pairs(stories, 2000, seed=0)
    share = np.mean([p.is_next for p in pairs])
    assert abs(share - 0.5) < 0.035  # 3 standard errors of a fair coin over 2000 pairs
    assert nsp_pairs(stories, 50, seed=0) == pairs[:50]  # seeded
    assert nsp_pairs(stories, 50, seed=1) != pairs[:50]


def test_real_pairs_are_consecutive_and_random_ones_come_from_other_stories(stories):
    split = [sentences_of(s) for s in stories]
    pairs = nsp_pairs(stories, 500, seed=4)
    for p in pairs:
        own = split[p.story]
        assert list(p.a) == sum(own[: p.sentence + 1], [])  # A: the story from its start up to a sentence
        assert list(p.b) == split[p.b_story][p.b_sentence]
        if p.is_next:
            assert p.b_story == p.story and p.b_sentence == p.sentence + 1
        else:
            assert p.b_story != p.story and p.b_sentence >= 1  # another story, never its opening
    assert {p.is_next for p in pairs} == {True, False}


def test_pairs_fit_the_model_and_are_encoded_with_sep(stories):
    pairs = nsp_pairs(stories, 300, seed=2, max_tokens=30)
    assert all(len(p.a) + len(p.b) + 3 <= 30 for p in pairs)
    vocab = engine.load("tiny-bert-stories").tokenizer
    p = pairs[0]
    ids, segments = encode_pair(vocab, p.a, p.b)
    assert ids == [BOS_ID, *vocab.encode(p.a), SEP_ID, *vocab.encode(p.b), SEP_ID]
    assert segments == [0] * (len(p.a) + 2) + [1] * (len(p.b) + 1)
    with pytest.raises(EngineError):
        nsp_pairs(stories, 5, seed=0, max_tokens=4)
    with pytest.raises(EngineError):
        nsp_pairs([["one", "."]], 5, seed=0)


def test_cls_classifier_logits_equal_a_float64_recomputation(model):
    task = NspTask.build(model.tokenizer, model.max_positions, n_train=4, n_test=4, n_stories=200)
    clf = trainable_copy(model.module, 2, seed=3)
    with torch.no_grad():
        clf.head.weight.normal_(0, 0.5)  # a head far from zero, so the check sees it
        clf.head.bias.uniform_(-1, 1)
        logits = clf(task.ids).double().numpy()  # padded batch, fused attention
    enc, last = clf.encoder, f"blocks.{model.module.cfg.n_layers - 1}.hook_resid_post"
    ln = {k: v.double().numpy() for k, v in enc.ln_final.state_dict().items()}
    w, b = clf.head.weight.detach().double().numpy(), clf.head.bias.detach().double().numpy()
    for row, n, got in zip(task.ids, task.lengths.tolist(), logits):
        assert (row[n:] == PAD_ID).all()
        with torch.no_grad(), capture(enc, names=[last]) as acts:
            enc(row[None, :n], causal=False, attn_impl="explicit")  # one pair alone, no padding
        x = acts[last][0, 0].double().numpy()  # the final residual state at [CLS]
        normed = (x - x.mean()) / np.sqrt(x.var() + enc.ln_final.eps) * ln["weight"] + ln["bias"]
        np.testing.assert_allclose(got, w @ normed + b, atol=1e-5)


def test_a_few_steps_raise_training_accuracy(model):
    task = NspTask.build(model.tokenizer, model.max_positions, n_train=32, n_test=4, n_stories=200)
    train = task.ids[:32], task.labels[:32]
    clf = trainable_copy(model.module, 2, seed=0)

    def accuracy() -> float:
        with torch.no_grad():
            return float((clf(train[0]).argmax(-1) == train[1]).float().mean())

    before = accuracy()
    progress = list(train_classifier(clf, train, train, steps=40, lr=1e-3, every=20))
    after = accuracy()
    assert [p.step for p in progress] == [20, 40] and progress[-1].accuracy == pytest.approx(after)
    assert after >= 0.85 and after >= before + 0.25, (before, after)


def test_finetune_nsp_reports_what_changed(model):
    task = NspTask.build(model.tokenizer, model.max_positions, n_train=64, n_test=24, n_stories=300)
    before_weights = {k: v.clone() for k, v in model.module.state_dict().items()}
    out = list(finetune_nsp(model.module, model.tokenizer, steps=10, every=5, task=task))
    progress, result = out[:-1], out[-1]
    assert [p.step for p in progress] == [5, 10]
    assert result.curve.eval_steps.tolist() == [0, 5, 10] and len(result.curve.train_loss) == 10
    fresh = trainable_copy(model.module, 2, seed=0)  # the same untrained head: the "before" accuracy
    test_ids, test_y = task.ids[64:], task.labels[64:]
    with torch.no_grad():
        probs = torch.softmax(fresh(test_ids), -1).numpy()
    assert result.accuracy_before == pytest.approx(float((probs.argmax(-1) == test_y.numpy()).mean()))
    assert result.change.shape == result.cls_change.shape == (3, 4)
    assert np.all((result.change >= 0) & (result.change <= 1)) and np.all(result.cls_change <= 1)
    np.testing.assert_allclose(result.shares_before.sum(-1), 1.0, atol=1e-5)
    real = [p for p in result.probes if p.is_next]
    assert 0 < len(real) < len(result.probes)
    for probe in result.probes:
        np.testing.assert_allclose(probe.cls_before.sum(-1), 1.0, atol=1e-5)
        assert len(probe.tokens) == len(probe.segments) == probe.cls_before.shape[-1]
        pair = task.pairs[probe.index]
        assert probe.index >= 64 and probe.is_next == pair.is_next
        assert probe.tokens == ("[CLS]", *pair.a, "[SEP]", *pair.b, "[SEP]")
        assert probe.p_before == pytest.approx(float(probs[probe.index - 64, 1]), abs=1e-5)
    assert all(
        torch.equal(v, model.module.state_dict()[k]) for k, v in before_weights.items()
    )  # shared model untouched


@pytest.mark.parametrize("bad", [dict(steps=0), dict(steps=10_000), dict(lr=0.0), dict(lr=1.0)])
def test_bad_settings_are_refused(model, bad):
    with pytest.raises(EngineError):
        next(finetune_nsp(model.module, model.tokenizer, **bad))
