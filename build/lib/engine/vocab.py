r"""A word-level vocabulary for the toy tasks and generated corpora.

Ids ``0 … 4`` are always the special tokens, in this order::

    0 <pad>   filler after the end of a shorter sequence
    1 <bos>   beginning of sequence
    2 <eos>   end of sequence
    3 <sep>   separates a question from its answer ("a b c <sep> c b a")
    4 <unk>   any word the vocabulary does not know

then the task's own tokens. Text is split by :func:`tokenize`: lowercase, then one token per run of
word characters (letters, digits, ``_``) and one token per other visible character (punctuation,
apostrophes): the regular expression ``\w+|[^\w\s]``, as in :mod:`engine.corpora.stories`.
Whitespace only separates. :func:`decoder_input` turns a text into the ids our decoders and encoders
read (``<bos> w1 w2 …``), with the notices the page shows: unknown words (``<unk>``) and cuts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.records import EmptyInputError, Tokens
from engine.text import check_max_tokens, clean_input, length_notices, unknown_words_notice

PAD, BOS, EOS, SEP, UNK = "<pad>", "<bos>", "<eos>", "<sep>", "<unk>"
SPECIALS: tuple[str, ...] = (PAD, BOS, EOS, SEP, UNK)
PAD_ID, BOS_ID, EOS_ID, SEP_ID, UNK_ID = range(len(SPECIALS))
#: the masked-LM models' blank (an ordinary word of their vocabulary, the last one); typed as [MASK] or <mask>
MASK = "<mask>"
_MASK_TYPED = re.compile(r"\[mask\]|<mask>", re.IGNORECASE)

_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Split text into lowercase words and punctuation marks.

    Args:
        text: any text.

    Returns:
        The tokens, e.g. ``tokenize("The cat sat, didn't it?") == ["the", "cat", "sat", ",", "didn", "'", "t", "it", "?"]``.
    """
    return _TOKEN.findall(text.lower())


def tokenize_with_masks(text: str) -> list[str]:
    """:func:`tokenize`, with each ``[MASK]`` / ``<mask>`` kept as one :data:`MASK` token.

    Example:
        >>> tokenize_with_masks("Lily found a [MASK] ball.")
        ['lily', 'found', 'a', '<mask>', 'ball', '.']
    """
    pieces = _MASK_TYPED.split(text)
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i:
            out.append(MASK)
        out += tokenize(piece)
    return out


@dataclass(frozen=True)
class Vocab:
    """An immutable token ↔ id table whose first five entries are :data:`SPECIALS`.

    Attributes:
        tokens: every token, the index is the id.

    Example:
        >>> v = Vocab.from_words(["a", "b", "c"])
        >>> v.encode(["c", "a", "zebra"])
        [7, 5, 4]
        >>> v.decode([7, 5])
        ['c', 'a']
    """

    tokens: tuple[str, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tokens = tuple(self.tokens)
        if tokens[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"Vocab: the first tokens must be {list(SPECIALS)}, got {list(tokens[:5])}")
        if not all(isinstance(t, str) and t for t in tokens):
            raise ValueError("Vocab: every token must be a non-empty string")
        index: dict[str, int] = {}
        for i, token in enumerate(tokens):
            if token in index:
                raise ValueError(f"Vocab: token {token!r} appears twice (ids {index[token]} and {i})")
            index[token] = i
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "_index", index)

    @classmethod
    def from_words(cls, words: Iterable[str]) -> Vocab:
        """The specials followed by ``words`` in first-seen order (duplicates and specials skipped)."""
        seen = dict.fromkeys(SPECIALS)
        for w in words:
            seen.setdefault(w)
        return cls(tuple(seen))

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._index

    def id(self, token: str) -> int:
        """The id of ``token`` (``<unk>``'s id when unknown)."""
        return self._index.get(token, UNK_ID)

    def encode(self, words: Iterable[str]) -> list[int]:
        """Ids of ``words``; unknown words become ``<unk>``."""
        return [self._index.get(w, UNK_ID) for w in words]

    def encode_text(self, text: str) -> list[int]:
        """``encode(tokenize(text))``."""
        return self.encode(tokenize(text))

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of ``ids``.

        Raises:
            ValueError: an id outside ``0 … len(self) − 1``.
        """
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.tokens):
                raise ValueError(f"id {i} is outside this vocabulary (0–{len(self.tokens) - 1})")
            out.append(self.tokens[i])
        return out

    def is_special(self, token_id: int) -> bool:
        """True for the ids of :data:`SPECIALS`."""
        return 0 <= int(token_id) < len(SPECIALS)

    def tokens_for_display(self, ids: Sequence[int]) -> Tokens:
        """Display tokens for ``ids``, with the markers flagged as special: ``<unk>`` is not one, since it
        stands for a word of the text (``Tokens.special``)."""
        ids = tuple(int(i) for i in ids)
        special = tuple(self.is_special(i) and i != UNK_ID for i in ids)
        return Tokens(strings=tuple(self.decode(ids)), ids=ids, special=special)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``{"tokens": [...]}``."""
        return {"tokens": list(self.tokens)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Vocab:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: ``data`` has no list of strings under ``"tokens"``, or the list is invalid.
        """
        tokens = data.get("tokens") if isinstance(data, Mapping) else None
        if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
            raise ValueError('Vocab: expected {"tokens": [list of strings]}')
        return cls(tuple(tokens))


def known_words(tokenizer) -> tuple[str, ...] | None:
    """The words a closed-vocabulary model reads (:data:`SPECIALS` left out), or None for an open tokenizer.

    ``tokenizer``: a model's (``Model.tokenizer``): a :class:`Vocab` for our own word-level models, a translator's
    ``{"source": Vocab, "target": Vocab}`` (the source side is what a student types), a Hugging Face tokenizer
    otherwise (open: any text)."""
    if isinstance(tokenizer, dict):
        tokenizer = tokenizer.get("source")
    if not isinstance(tokenizer, Vocab):
        return None
    return tuple(t for t in tokenizer.tokens if t not in SPECIALS)


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


def checked_words(text: str, max_tokens: int, split: Callable[[str], Sequence[str]]) -> tuple[list[str], int, int]:
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
    words, cut_chars, max_tokens = checked_words(text, max_tokens, split)
    ids_all = [BOS_ID, *vocab.encode(words)]
    limit = min(max_tokens, max_positions)
    ids = ids_all[:limit]
    unknown = list(dict.fromkeys(w for w, i in zip(words, ids[1:]) if i == UNK_ID))
    notices = [n for n in [unknown_words_notice(unknown)] if n]
    notices += length_notices(
        len(ids_all), limit, max_tokens=max_tokens, max_positions=max_positions, cut_chars=cut_chars
    )
    return WordInput(tuple(ids), vocab.tokens_for_display(ids), tuple(notices), len(ids_all), len(ids_all) > limit)
