"""Choosing the next token: greedy, or sampled with temperature, top-k and top-p.

One rule for every model that writes text (decoders, encoder-decoders)::

    greedy:   w = argmax_w z_w
    sampled:  z / T; keep the k highest scores (top-k); p = softmax over what is kept; keep the
              fewest most likely tokens whose probabilities reach p (top-p, "nucleus"); renormalise;
              draw w with a seeded generator

This is the order of transformers' own samplers (``TemperatureLogitsWarper``, ``TopKLogitsWarper``,
``TopPLogitsWarper``): top-p reads the distribution that top-k left, so top-k 2 with top-p 0.5 on
probabilities (.4, .3, .2, .1) keeps one token (.4 / .7 ≥ .5), not two.

A model's config may count more token ids than its tokenizer can name (Qwen2.5 and T5 pad their
embedding tables to a round size). Their scores are set to −inf before any pick
(:func:`named_only`), so neither greedy nor sampled decoding ever writes an id without a token.

Sampling uses its own ``numpy`` generator seeded per call, so a run is repeatable and concurrent
sessions never share random state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.records import EngineError

#: most tokens one request may generate (each is a forward pass of the model)
MAX_NEW_TOKENS = 128
#: the longest output a plain ``engine.trace`` of an encoder-decoder writes (greedy)
SEQ2SEQ_NEW_TOKENS = 40


@dataclass(frozen=True)
class DecodeSettings:
    """How to pick each generated token.

    Attributes:
        max_new_tokens: stop after this many (1–:data:`MAX_NEW_TOKENS`); an end-of-text token stops earlier.
        sample: False for greedy decoding (the other settings are then ignored).
        temperature: divides the scores before the softmax (> 0; below 1 sharpens, above 1 flattens).
        top_k: keep only the k most likely tokens (0: all).
        top_p: keep the fewest most likely tokens whose probabilities add up to at least p (1: all).
        seed: the sampling generator's seed.
    """

    max_new_tokens: int = 20
    sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        def whole(name: str, value, low: int, high: int) -> None:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
                raise EngineError(f"{name} must be a whole number from {low} to {high}, got {value!r}.")

        whole("max_new_tokens", self.max_new_tokens, 1, MAX_NEW_TOKENS)
        whole("top_k", self.top_k, 0, 1_000_000)
        whole("seed", self.seed, 0, 2**32 - 1)
        if not isinstance(self.temperature, (int, float)) or not 0.01 <= float(self.temperature) <= 100:
            raise EngineError(f"temperature must be from 0.01 to 100, got {self.temperature!r}.")
        if not isinstance(self.top_p, (int, float)) or not 0.0 < float(self.top_p) <= 1.0:
            raise EngineError(f"top_p must be above 0 and at most 1, got {self.top_p!r}.")

    def describe(self) -> str:
        """A short phrase for captions: "greedy" or "sampled (T = 0.8, top-k 40, top-p 0.9, seed 0)"."""
        if not self.sample:
            return "greedy (the most likely token each step)"
        parts = [f"T = {self.temperature:g}"]
        if self.top_k:
            parts.append(f"top-k {self.top_k}")
        if self.top_p < 1:
            parts.append(f"top-p {self.top_p:g}")
        return f"sampled ({', '.join(parts)}, seed {self.seed})"


def named_only(logits: np.ndarray, n_named: int | None) -> np.ndarray:
    """``logits`` ``[vocab]`` as float64, with the scores of ids the tokenizer cannot name set to −inf.

    Args:
        logits: one position's scores over the model's output ids.
        n_named: how many ids the tokenizer names (:func:`engine.text.named_ids`; ids ``0 … n_named − 1``);
            None when every output id has a token (our own models).

    Returns:
        A new array; ids at and above ``n_named`` are −inf, so no pick and no softmax can choose them.

    Example:
        >>> named_only(np.array([1.0, 2.0, 9.0]), 2)
        array([  1.,   2., -inf])
    """
    z = np.array(logits, dtype=np.float64)
    if n_named is not None:
        z[max(int(n_named), 0) :] = -np.inf
    return z


def _softmax(z: np.ndarray) -> np.ndarray:
    """softmax of scores that may hold −inf (those get probability 0)."""
    e = np.exp(z - z.max())
    return e / e.sum()


def top_k_kept(z: np.ndarray, k: int) -> np.ndarray:
    """Which scores top-k keeps: those at least the k-th highest (ties with it kept, as transformers does)."""
    if not k or k >= len(z):
        return np.ones(z.shape, dtype=bool)
    kth = np.partition(z, len(z) - k)[len(z) - k]
    return z >= kth


def top_p_kept(p: np.ndarray, top_p: float) -> np.ndarray:
    """Which tokens top-p keeps: the fewest most likely whose probabilities add up to at least ``top_p``.

    A token is kept when the tokens ranked above it hold less than ``top_p`` of the mass (so the most
    likely token always is).
    """
    if top_p >= 1.0:
        return np.ones(p.shape, dtype=bool)
    order = np.argsort(-p, kind="stable")  # most likely first; ties by id
    above = np.cumsum(p[order]) - p[order]  # mass ranked above each token
    keep = np.zeros(p.shape, dtype=bool)
    keep[order[above < top_p - 1e-12]] = True
    return keep


def candidate_probs(logits: np.ndarray, settings: DecodeSettings) -> np.ndarray:
    """The distribution a sampled step draws from: ``[vocab]`` float64, zero outside top-k / top-p.

    Temperature, then top-k on the scores, then top-p on the distribution top-k left, as transformers'
    samplers (see the module docstring).
    """
    z = np.asarray(logits, dtype=np.float64) / float(settings.temperature)
    z = np.where(np.isfinite(z), z, -np.inf)
    z = np.where(top_k_kept(z, settings.top_k), z, -np.inf)
    p = _softmax(z)
    out = np.where(top_p_kept(p, float(settings.top_p)), p, 0.0)
    return out / out.sum()


class TokenPicker:
    """Picks generated tokens one at a time with one settings object and one seeded generator.

    Args:
        settings: greedy or sampled.
        n_named: how many ids the tokenizer names; higher ids are never picked (:func:`named_only`).
            None: every id of the scores has a token.
    """

    def __init__(self, settings: DecodeSettings, n_named: int | None = None) -> None:
        self.settings = settings
        self.n_named = n_named
        self._rng = np.random.default_rng(settings.seed)

    def __call__(self, logits: np.ndarray) -> int:
        """The next token id for the last position's ``logits`` ``[vocab]``."""
        z = named_only(logits, self.n_named)
        if not self.settings.sample:
            return int(np.argmax(z))
        p = candidate_probs(z, self.settings)
        return int(self._rng.choice(len(p), p=p))
