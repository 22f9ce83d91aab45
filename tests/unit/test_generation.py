"""engine.generation: greedy and sampled picks against the definitions and transformers' own samplers."""

import numpy as np
import pytest
import torch

from engine.generation import DecodeSettings, TokenPicker, candidate_probs
from engine.records import EngineError

LOGITS = np.log(np.array([0.5, 0.2, 0.15, 0.1, 0.05]))


def test_greedy_is_argmax():
    pick = TokenPicker(DecodeSettings())
    assert pick(np.array([0.1, 3.0, 2.9, -1.0])) == 1


def test_temperature_one_keeps_softmax():
    p = candidate_probs(LOGITS, DecodeSettings(sample=True))
    np.testing.assert_allclose(p, [0.5, 0.2, 0.15, 0.1, 0.05], rtol=1e-12)


def test_temperature_reshapes_by_formula():
    p = candidate_probs(LOGITS, DecodeSettings(sample=True, temperature=2.0))
    want = np.sqrt([0.5, 0.2, 0.15, 0.1, 0.05])
    np.testing.assert_allclose(p, want / want.sum(), rtol=1e-12)


def test_top_k_keeps_k_most_likely():
    p = candidate_probs(LOGITS, DecodeSettings(sample=True, top_k=2))
    np.testing.assert_allclose(p, [0.5 / 0.7, 0.2 / 0.7, 0, 0, 0], rtol=1e-12)


def test_top_p_keeps_smallest_prefix_reaching_p():
    # 0.5 + 0.2 = 0.7 < 0.8, + 0.15 = 0.85 >= 0.8: three tokens
    p = candidate_probs(LOGITS, DecodeSettings(sample=True, top_p=0.8))
    np.testing.assert_allclose(p, np.array([0.5, 0.2, 0.15, 0, 0]) / 0.85, rtol=1e-12)
    exact = candidate_probs(LOGITS, DecodeSettings(sample=True, top_p=0.7))  # reached exactly: two
    assert np.count_nonzero(exact) == 2


def test_top_p_reads_what_top_k_left():
    """Top-k first, renormalised, then top-p: .4 / (.4 + .3) = .57 reaches .5 alone (on the full
    distribution .4 would not, and two tokens would be kept)."""
    p = candidate_probs(np.log([0.4, 0.3, 0.2, 0.1]), DecodeSettings(sample=True, top_k=2, top_p=0.5))
    np.testing.assert_array_equal(p, [1.0, 0.0, 0.0, 0.0])


def _kept_by_transformers(logits: np.ndarray, settings: DecodeSettings) -> set[int]:
    """The ids transformers' samplers keep: temperature, then top-k, then top-p, as ``generate`` orders them."""
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    scores = torch.tensor(logits, dtype=torch.float32)[None]  # (1, V), as generate's float32 scores
    ids = torch.zeros((1, 1), dtype=torch.long)
    warpers = [TemperatureLogitsWarper(float(settings.temperature))]
    if settings.top_k:
        warpers.append(TopKLogitsWarper(settings.top_k))
    if settings.top_p < 1:
        warpers.append(TopPLogitsWarper(float(settings.top_p)))
    for warp in warpers:
        scores = warp(ids, scores)
    return set(torch.isfinite(scores[0]).nonzero().flatten().tolist())


@pytest.mark.parametrize("vocab", [8, 50, 1000])
@pytest.mark.parametrize(
    ("temperature", "top_k", "top_p"),
    [
        (1.0, 2, 0.5),
        (1.0, 5, 0.9),
        (0.7, 10, 0.3),
        (1.5, 3, 0.95),
        (2.0, 40, 0.6),
        (0.5, 0, 0.8),
        (1.0, 7, 1.0),
        (3.0, 20, 0.99),
        (0.3, 100, 0.5),
        (1.0, 1, 0.2),
    ],
)
def test_kept_tokens_equal_transformers_samplers(vocab, temperature, top_k, top_p):
    rng = np.random.default_rng(vocab)
    for draw in range(5):
        logits = (rng.normal(0.0, 2.5, vocab) * rng.uniform(0.3, 2.0)).astype(np.float32)
        settings = DecodeSettings(sample=True, temperature=temperature, top_k=top_k, top_p=top_p)
        mine = set(np.flatnonzero(candidate_probs(logits, settings)).tolist())
        assert mine == _kept_by_transformers(logits, settings), f"draw {draw}"


def test_sampling_is_seeded_and_follows_the_distribution():
    settings = DecodeSettings(sample=True, top_k=3, seed=7)
    a = [TokenPicker(settings)(LOGITS) for _ in range(3)]
    picker, again = TokenPicker(settings), TokenPicker(settings)
    draws = np.array([picker(LOGITS) for _ in range(4000)])
    assert [again(LOGITS) for _ in range(3)] == list(draws[:3]) and a[0] == draws[0]
    assert set(np.unique(draws)) <= {0, 1, 2}
    freq = np.bincount(draws, minlength=5) / len(draws)
    np.testing.assert_allclose(freq[:3], np.array([0.5, 0.2, 0.15]) / 0.85, atol=0.03)


@pytest.mark.parametrize(
    "bad",
    [
        dict(max_new_tokens=0),
        dict(max_new_tokens=10_000),
        dict(temperature=0),
        dict(top_p=0),
        dict(top_p=1.5),
        dict(top_k=-1),
        dict(seed=-1),
        dict(max_new_tokens=True),
        dict(temperature="hot"),
    ],
)
def test_out_of_range_settings_are_refused(bad):
    with pytest.raises(EngineError):
        DecodeSettings(**bad)
