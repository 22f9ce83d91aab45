"""Turning text into ids for our own word-level models: one place for splitting, limits and notices.

Decoders/encoders read ``<bos> w1 w2 …`` (:func:`decoder_input`); the translators' encoders read
``w1 w2 … <eos>`` (:func:`source_input`). Words the vocabulary lacks become ``<unk>`` and are listed
in a notice; input beyond the token limit (or the model's positions) is cut, and the notices say so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.records import EmptyInputError, Tokens
from engine.text import check_max_tokens, clean_input, length_notices, unknown_words_notice
from engine.vocab import BOS_ID, EOS_ID, UNK_ID, Vocab, tokenize


@dataclass(frozen=True)
class WordInput:
    """Ids ready for a model, with what the UI needs to say about them.

    Attributes:
        ids: the ids the model reads (after any cut).
        tokens: the same, for display.
        notices: unknown words, truncation, characters removed.
        n_input: how many tokens the whole text would have been.
        truncated: True when ids were cut.
    """

    ids: tuple[int, ...]
    tokens: Tokens
    notices: tuple[str, ...]
    n_input: int
    truncated: bool


def _words(text: str, max_tokens: int, split: Callable[[str], Sequence[str]]) -> tuple[list[str], int, int]:
    """Cleaned, checked and split: (words, characters removed, the checked token limit)."""
    text, cut_chars = clean_input(text)
    max_tokens = check_max_tokens(max_tokens, 2)
    words = list(split(text))
    if not words:
        raise EmptyInputError("The text has no words this model can read.")
    return words, cut_chars, max_tokens


def decoder_input(
    text: str, vocab: Vocab, max_tokens: int, max_positions: int, split: Callable[[str], Sequence[str]] = tokenize
) -> WordInput:
    """``<bos>`` + the words of ``text``, cut to ``min(max_tokens, max_positions)``."""
    words, cut_chars, max_tokens = _words(text, max_tokens, split)
    ids_all = [BOS_ID, *vocab.encode(words)]
    limit = min(max_tokens, max_positions)
    ids = ids_all[:limit]
    unknown = list(dict.fromkeys(w for w, i in zip(words, ids[1:]) if i == UNK_ID))
    notices = [n for n in [unknown_words_notice(unknown)] if n]
    notices += length_notices(
        len(ids_all), limit, max_tokens=max_tokens, max_positions=max_positions, cut_chars=cut_chars
    )
    return WordInput(tuple(ids), vocab.tokens_for_display(ids), tuple(notices), len(ids_all), len(ids_all) > limit)


def source_input(text: str, vocab: Vocab, max_tokens: int, max_positions: int) -> WordInput:
    """A translator's source: the words of ``text`` + ``<eos>``, unknown words with spelling suggestions."""
    from engine.corpora.translation import suggest
    from engine.models.seq2seq_adapter import source_tokens

    words, cut_chars, max_tokens = _words(text, max_tokens, source_tokens)
    limit = min(max_tokens, max_positions)
    kept = words[: limit - 1]
    ids = [*vocab.encode(kept), EOS_ID]
    unknown = list(dict.fromkeys(w for w, i in zip(kept, ids) if i == UNK_ID))
    notices = [n for n in [unknown_words_notice(unknown, lambda w: suggest(w, k=2))] if n]
    notices += length_notices(
        len(words) + 1,
        limit,
        max_tokens=max_tokens,
        max_positions=max_positions,
        cut_chars=cut_chars,
        verb="translated",
    )
    return WordInput(tuple(ids), vocab.tokens_for_display(ids), tuple(notices), len(words) + 1, len(kept) < len(words))
