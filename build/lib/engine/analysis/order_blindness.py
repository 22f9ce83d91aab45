"""Order blindness: without positional information, attention cannot tell word order.

Self-attention with no position encoding and no mask is *permutation equivariant*: shuffle the
input tokens with a permutation ``π`` (token ``i`` of the shuffled input is token ``π(i)`` of the
original) and every layer's pattern is the same matrix with rows and columns shuffled::

    P_shuffled = Π P Πᵀ,   i.e.  P_shuffled[i, j] = P[π(i), π(j)]

because each token's query, key and value depend on its own embedding only, and softmax over a
row does not care about the order of the keys. Two things break this symmetry: position
vectors (the embedding of "cat" at position 2 differs from "cat" at position 5) and the causal
mask (token ``i`` sees keys ``j ≤ i``: which keys those are depends on the order).

The demo runs *fresh copies* of one of our checkpoints (never the shared cached model): one with its
learned position table, one with the same weights but ``pos_encoding="none"``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from engine.builds import BUILD_LOCK
from engine.checkpoint import load_checkpoint
from engine.families.transformer.adapter import trace_own
from engine.families.transformer.network import Transformer
from engine.records import EmptyInputError, EngineError
from engine.registry import CHECKPOINTS
from engine.text import check_max_tokens, clean_input, unknown_words_notice
from engine.vocab import BOS_ID, UNK_ID, tokenize

#: the settings compared: (name, position vectors on, causal mask on)
SETTINGS: tuple[tuple[str, bool, bool], ...] = (
    ("no positions, no mask", False, False),
    ("learned positions, no mask", True, False),
    ("no positions, causal mask", False, True),
)


@dataclass(frozen=True, eq=False)
class PermutationRun:
    """One setting, traced on the original and on the shuffled tokens.

    Attributes:
        name: the setting, e.g. ``"no positions, no mask"``.
        positions: True when the position table is added.
        causal: True when the causal mask is on.
        original: ``[layer, head, n, n]`` patterns on the original order.
        shuffled: ``[layer, head, n, n]`` patterns on the shuffled order.
        error: ``max |P_shuffled − Π P Πᵀ|`` over every layer and head.
    """

    name: str
    positions: bool
    causal: bool
    original: np.ndarray
    shuffled: np.ndarray
    error: float

    def permuted(self, perm: np.ndarray) -> np.ndarray:
        """``Π P Πᵀ`` for every layer and head: ``original[..., perm][..., perm, :]``."""
        return self.original[:, :, perm][:, :, :, perm]

    def errors_by_head(self, perm: np.ndarray) -> np.ndarray:
        """``[layer, head]`` max |P_shuffled − Π P Πᵀ| per head."""
        return np.abs(self.shuffled - self.permuted(perm)).max(axis=(2, 3))


@dataclass(frozen=True, eq=False)
class OrderBlindness:
    """The whole demo.

    Attributes:
        model_id: the checkpoint whose weights were copied.
        tokens: display tokens of the original order.
        shuffled_tokens: display tokens of the shuffled order.
        perm: ``π``: shuffled position ``i`` holds original token ``perm[i]`` (``<bos>`` stays first).
        runs: one :class:`PermutationRun` per setting in :data:`SETTINGS`.
        notices: sentences for the UI (unknown words, a cut text, nothing to shuffle).
    """

    model_id: str
    tokens: tuple[str, ...]
    shuffled_tokens: tuple[str, ...]
    perm: np.ndarray
    runs: tuple[PermutationRun, ...]
    notices: tuple[str, ...] = ()


def shuffle_order(n: int, seed: int) -> np.ndarray:
    """A permutation of ``0 … n − 1`` that keeps 0 (``<bos>``) first and, when it can, moves something."""
    rng = np.random.default_rng(seed)
    rest = np.arange(1, n)
    perm = np.concatenate([[0], rng.permutation(rest)]).astype(np.int64)
    if n > 2 and np.array_equal(perm, np.arange(n)):
        perm = np.concatenate([[0], np.roll(rest, 1)]).astype(np.int64)
    return perm


def fresh_copies(model_id: str) -> tuple[Transformer, Transformer, object]:
    """Two new modules from the checkpoint's file: with its learned positions, and without any.

    Returns:
        ``(with_positions, without_positions, vocab)``, both in eval mode, gradients off.

    Raises:
        EngineError: the checkpoint is not one of our transformers with a learned position table.
    """

    module, vocab, _doc = load_checkpoint(CHECKPOINTS, model_id, device="cpu")
    if not isinstance(module, Transformer) or module.cfg.pos_encoding != "learned":
        raise EngineError(f"{model_id} is not one of our transformers with learned positions.")
    with BUILD_LOCK:  # not while another thread's from_pretrained patches the process (engine.builds)
        blind = Transformer(dataclasses.replace(module.cfg, pos_encoding="none"))
    weights = {k: v for k, v in module.state_dict().items() if not k.startswith("pos_embed.")}
    blind.load_state_dict(weights, strict=True)
    for m in (module, blind):
        m.eval()
        m.requires_grad_(False)
    return module, blind, vocab


def order_blindness(
    text: str, *, seed: int = 0, model_id: str = "tiny-gpt-stories", max_tokens: int = 32
) -> OrderBlindness:
    """Shuffle the tokens of ``text`` and compare attention patterns with and without positions.

    Args:
        text: the sentence (word-level vocabulary of the checkpoint; unknown words become ``<unk>``).
        seed: picks the shuffle.
        model_id: one of our transformer checkpoints with learned positions.
        max_tokens: at most this many tokens (``<bos>`` included; also capped by the model's max_len).

    Returns:
        An :class:`OrderBlindness`; ``runs[0].error`` is ~1e-7 (float rounding), ``runs[1].error`` and
        ``runs[2].error`` are not small.

    Raises:
        EmptyInputError: no words.
        EngineError: a bad setting or checkpoint.
    """
    text, _cut = clean_input(text)
    max_tokens = check_max_tokens(max_tokens, 3)
    with_pos, blind, vocab = fresh_copies(model_id)
    words = tokenize(text)
    if not words:
        raise EmptyInputError("The text has no words this model can read.")
    ids = [BOS_ID, *vocab.encode(words)][: min(max_tokens, with_pos.cfg.max_len)]
    notices = []
    unknown = list(dict.fromkeys(w for w, i in zip(words, ids[1:]) if i == UNK_ID))
    if (note := unknown_words_notice(unknown)) is not None:
        notices.append(note)
    if len(words) + 1 > len(ids):
        notices.append(f"Only the first {len(ids)} tokens are used in this demo.")
    if len(ids) < 3:
        notices.append("With one word there is nothing to shuffle: type a few more words.")
    perm = shuffle_order(len(ids), seed)
    shuffled_ids = [ids[i] for i in perm]
    tokens = vocab.tokens_for_display(ids)
    shuffled_tokens = vocab.tokens_for_display(shuffled_ids)
    runs = []
    with torch.inference_mode():
        for name, positions, causal in SETTINGS:
            module = with_pos if positions else blind
            patterns = []
            for seq, toks in ((ids, tokens), (shuffled_ids, shuffled_tokens)):
                tr = trace_own(module, seq, toks, model_id=model_id, causal=causal)
                patterns.append(np.stack([tr.pattern(layer) for layer in range(tr.n_layers)]))  # (L, H, n, n)
            original, shuffled = patterns
            expected = original[:, :, perm][:, :, :, perm]
            runs.append(
                PermutationRun(
                    name=name,
                    positions=positions,
                    causal=causal,
                    original=original,
                    shuffled=shuffled,
                    error=float(np.abs(shuffled - expected).max()),
                )
            )
    return OrderBlindness(
        model_id=model_id,
        tokens=tokens.strings,
        shuffled_tokens=shuffled_tokens.strings,
        perm=perm,
        runs=tuple(runs),
        notices=tuple(notices),
    )
