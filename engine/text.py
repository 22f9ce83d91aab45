"""Text helpers: input cleaning, and the one place that turns tokenizer pieces into ids and display strings.

Tokenizers mark word boundaries in different ways: byte-level BPE (GPT-2) prefixes ``Ġ`` for a
leading space and ``Ċ`` for a newline, SentencePiece prefixes ``▁``, WordPiece (BERT) prefixes
continuation pieces with ``##``. The UI shows the piece without the marker.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from engine.records import EmptyInputError, EngineError, Tokens

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from engine.model import Model

MAX_CHARS = 100_000  # text beyond this is cut before tokenizing (a 512-token window is ~3 kB)
MAX_UNKNOWN_LISTED = 8  # unknown words named in one notice
QUOTE_LIMIT = 80  # characters of user input a message repeats (the rest is cut with "…")
WORD_LIMIT = 24  # characters of one unknown word a notice repeats

_INVISIBLE = re.compile(r"[\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\u00ad]")
_CONTROL = {"Cc", "Cs", "Co", "Cn"}


def clean_input(text: object) -> tuple[str, bool]:
    """Validate and normalise user text before tokenization.

    Args:
        text: what the user typed (anything; non-strings are rejected).

    Returns:
        ``(text, was_cut)``: NFC-normalised text with control characters (other than tab/newline)
        removed, and whether it was cut at ``MAX_CHARS``.

    Raises:
        EmptyInputError: when nothing visible is left.
    """
    if not isinstance(text, str):
        raise EmptyInputError(f"Expected text, got {type(text).__name__}.")
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch for ch in text if ch in "\t\n" or unicodedata.category(ch) not in _CONTROL)
    cut = len(text) > MAX_CHARS
    if cut:
        text = text[:MAX_CHARS]
    if not _INVISIBLE.sub("", text).strip():
        raise EmptyInputError("Type a sentence first: the text is empty.")
    return text, cut


def shorten(text: object, limit: int = QUOTE_LIMIT) -> str:
    """``text`` on one line (control characters and line breaks as spaces), cut to ``limit`` characters with "…".

    Example:
        >>> shorten("a" * 100, 10)
        'aaaaaaaaa…'
    """
    text = text if isinstance(text, str) else str(text)
    if len(text) > 4 * limit:  # never walk a huge input character by character
        text = text[: 4 * limit]
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def quote_input(text: object, limit: int = QUOTE_LIMIT) -> str:
    """User input as a message repeats it: in quotes, on one line, at most ``limit`` characters of it.

    Messages built from what a user typed go through this, so a 10,000-character paste comes back as
    80 characters and "…", never whole.

    Example:
        >>> quote_input("gpt2"), quote_input("x" * 500, limit=5)
        ("'gpt2'", "'xxxx…'")
    """
    return f"'{shorten(text, limit)}'"


_ABS_PATH = re.compile(r"(?<![\w/.~-])(?:/[^\s'\"`/,;:()\[\]{}<>|]+)+/?")


def hide_paths(message: str) -> str:
    """``message`` with every absolute POSIX path cut to its last part (``/srv/app/x/model.json`` →
    ``…/model.json``), so a message for end users names files but not the server's folders.

    URLs and relative paths are left alone.

    Example:
        >>> hide_paths("[Errno 13] Permission denied: '/home/ann/models/config.json'")
        "[Errno 13] Permission denied: '…/config.json'"
    """

    def last_part(match: re.Match[str]) -> str:
        name = match.group(0).rstrip("/").rsplit("/", 1)[-1]
        return f"…/{name}"

    return _ABS_PATH.sub(last_part, message)


MESSAGE_LIMIT = 300  # characters of an error message a page shows


def error_message(err: BaseException) -> str:
    """An error as plain text for a page: an engine error as written, anything else as one calm sentence (and a
    log line with its traceback). Absolute paths are cut to file names and the text to :data:`MESSAGE_LIMIT`
    characters; it may quote what the user typed, so a page escapes it before showing it as markdown."""
    if isinstance(err, EngineError):
        return shorten(hide_paths(str(err)), MESSAGE_LIMIT)
    log.exception("unexpected error", exc_info=err)
    return f"Something went wrong while computing this ({type(err).__name__}). Try a shorter text or another model."


def error_reason(err: BaseException, limit: int = 160) -> str:
    """Why something failed, for end users: an OS error's reason without its file name, else the
    error's first line with absolute paths cut to file names (:func:`hide_paths`), at most ``limit`` characters."""
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    text = str(err).strip()
    return shorten(hide_paths(text.splitlines()[0]), limit) if text else type(err).__name__


def special_flags(tokenizer, ids) -> tuple[bool, ...]:
    """Which token ids are markers (``[CLS]``, ``[SEP]``, ``<s>``, ``<|endoftext|>``, ``[PAD]``, ``[MASK]``).

    Markers are what the tokenizer adds or reserves around the user's text; they are what
    ``Tokens.special`` flags, and with the first token they are the "sink" positions of the head
    metrics. The unknown-word token (``[UNK]``, ``<unk>``) is in the tokenizer's ``all_special_ids`` but
    stands for a word of the user's text that the vocabulary lacks, so it is *not* a marker, unless
    the same id also serves as another special token (GPT-2's ``<|endoftext|>`` is its unk, bos and
    eos token at once).

    Args:
        tokenizer: a Hugging Face tokenizer.
        ids: token ids.

    Returns:
        One flag per id.
    """
    markers = set(tokenizer.all_special_ids)
    unk = tokenizer.unk_token_id
    if unk is not None:
        named: set[int] = set()
        for name, value in tokenizer.special_tokens_map.items():
            if name == "unk_token":
                continue
            for token in value if isinstance(value, (list, tuple)) else [value]:
                named.add(tokenizer.convert_tokens_to_ids(str(token)))
        if unk not in named:
            markers.discard(unk)
    return tuple(int(i) in markers for i in ids)


def named_ids(tokenizer) -> int:
    """How many token ids a Hugging Face tokenizer can name: ids ``0 … len(tokenizer) − 1``.

    A model's config may count more (Qwen2.5, T5 and many Hub checkpoints pad their embedding tables
    to a round size); the ids above have no token. Generation never picks them and the next-token
    candidates leave them out (:func:`engine.generation.named_only`); if one is shown anyway it reads
    as :func:`unnamed_token`.
    """
    return len(tokenizer)


def unnamed_token(token_id: int) -> str:
    """The display string of an id the tokenizer cannot name: ``<id 1234>``.

    Example:
        >>> unnamed_token(151900)
        '<id 151900>'
    """
    return f"<id {int(token_id)}>"


def token_pieces(tokenizer, ids) -> list[str | None]:
    """The tokenizer's pieces of ``ids`` (``"Ġcat"``, ``"▁the"``), None for an id it cannot name.

    Ids at or above :func:`named_ids` are never handed to the tokenizer (some raise on them, fast
    tokenizers return None).
    """
    ids = [int(i) for i in ids]
    n = named_ids(tokenizer)
    named = iter(tokenizer.convert_ids_to_tokens([i for i in ids if 0 <= i < n]))
    return [next(named) if 0 <= i < n else None for i in ids]


def _byte_level_table() -> dict[str, int]:
    """The inverse of byte-level BPE's byte→character table.

    Byte-level BPE writes every byte as one printable character: bytes that are printable
    Latin-1 stand for themselves, the other 68 byte values are shifted to code points 256 and up,
    in byte order.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {chr(b): b for b in printable}
    shifted = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + shifted)] = b
            shifted += 1
    return table


_BYTE_OF = _byte_level_table()


def byte_level_display(piece: str) -> str:
    """Display text of a byte-level BPE piece (``"Ġcat"`` → ``"cat"``).

    A piece that holds only part of a multi-byte character (``"Ã"`` of ``"é"``) cannot be shown
    as text on its own, so its bytes are shown in hex, e.g. ``⟨c3⟩``.
    """
    if any(ch not in _BYTE_OF for ch in piece):
        return clean_token(piece)
    raw = bytes(_BYTE_OF[ch] for ch in piece)
    try:
        return clean_token(raw.decode("utf-8"), byte_level=True)
    except UnicodeDecodeError:
        return "⟨" + " ".join(f"{b:02x}" for b in raw.strip(b" ")) + "⟩"


def clean_token(piece: str, *, byte_level: bool = False) -> str:
    """A tokenizer piece as a display string.

    Args:
        piece: the raw piece (``"Ġcat"``, ``"##ing"``, ``"▁the"``), or for byte-level tokenizers the
            piece already decoded to text.
        byte_level: True when ``piece`` is decoded byte-level text (leading space means a word start).

    Returns:
        The visible text; a piece that is only whitespace is shown as ``␣`` (space) or ``↵`` (newline).

    Example:
        >>> clean_token("##ing"), clean_token("▁the"), clean_token(" cat", byte_level=True)
        ('ing', 'the', 'cat')
    """
    if not byte_level:
        if piece.startswith("##") and len(piece) > 2:
            piece = piece[2:]
        piece = piece.replace("▁", " ").replace("Ġ", " ").replace("Ċ", "\n")
    if piece.strip():
        return piece.strip()
    if "\n" in piece:
        return "↵"
    if "\t" in piece:
        return "⇥"
    return "␣"


def display_tokens(tokenizer, ids: Sequence[int], byte_level: bool) -> Tokens:
    """Display tokens of ``ids`` (typed or written by the model): byte-level pieces decoded, others cleaned;
    special tokens as they are, ``[UNK]`` not special (it stands for the user's text); an id the tokenizer
    cannot name (a config vocabulary larger than the tokenizer's) as :func:`~engine.text.unnamed_token`."""
    ids = [int(i) for i in ids]
    special = special_flags(tokenizer, ids)
    show = byte_level_display if byte_level else clean_token
    pieces = token_pieces(tokenizer, ids)
    strings = tuple(unnamed_token(i) if p is None else p if s else show(p) for i, p, s in zip(ids, pieces, special))
    return Tokens(strings=strings, ids=tuple(ids), special=special)


class Tokenized(NamedTuple):
    """A text as a Hugging Face model reads it: ids (special tokens added, cut to the limit), display tokens, the
    uncut count and the notices (what was cut, what became the unknown token)."""

    ids: list[int]
    tokens: Tokens
    n_total: int
    notices: list[str]


def prepare_text(model: Model, text: str, max_tokens: int, byte_level: bool, ceiling: int | None = None) -> Tokenized:
    """Clean, check and tokenize ``text`` for a Hugging Face ``model`` (decoder, encoder or an encoder-decoder's
    source), at most ``ceiling`` tokens (default the model's positions).

    Raises:
        EmptyInputError: only special tokens.
    """
    text, cut_chars = clean_input(text)
    tokenizer = model.tokenizer
    requested = check_max_tokens(max_tokens, tokenizer.num_special_tokens_to_add() + 1)
    ceiling = model.max_positions if ceiling is None else ceiling
    limit = min(requested, ceiling)
    full = tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    if len(full) > limit:
        ids = list(tokenizer(text, add_special_tokens=True, truncation=True, max_length=limit)["input_ids"])
    else:
        ids = list(full)
    tokens = display_tokens(tokenizer, ids, byte_level)
    if all(tokens.special):
        raise EmptyInputError("The text has no tokens this model can read (only special tokens).")
    notices = length_notices(len(full), len(ids), max_tokens=requested, max_positions=ceiling, cut_chars=cut_chars)
    unknown = unknown_pieces(tokenizer, text, ids)
    if unknown:
        lead = f"This model's vocabulary has no pieces for these, so they are shown as {tokenizer.unk_token}"
        notices.append(unknown_words_notice(unknown, lead=lead))
    return Tokenized(ids, tokens, len(full), notices)


def unknown_pieces(tokenizer, text: str, ids: list[int]) -> list[str]:
    """The pieces of ``text`` that became the tokenizer's unknown token among ``ids`` (in order, each once);
    empty when it has none or cannot say where its tokens came from (a slow tokenizer)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None or unk not in ids or not getattr(tokenizer, "is_fast", False):
        return []
    spans = tokenizer(text, add_special_tokens=True, truncation=True, max_length=len(ids), return_offsets_mapping=True)
    found = [text[a:b] for i, (a, b) in zip(spans["input_ids"], spans["offset_mapping"]) if i == unk and b > a]
    return list(dict.fromkeys(found))


def check_max_tokens(value: object, minimum: int) -> int:
    """``value`` as a token limit of at least ``minimum`` (numpy integers accepted, bools refused).

    Raises:
        EngineError: anything else, with a readable message.
    """
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise EngineError(f"max_tokens must be a whole number of at least {minimum}, got {value!r}.")
    return int(value)


#: how the unknown-words notice begins (the app recognises it to point to the Examples picker)
UNKNOWN_WORDS_LEAD = "Words this model never saw in training are shown as <unk>"


def unknown_words_notice(
    unknown: list[str], suggest: Callable[[str], list[str]] | None = None, lead: str = UNKNOWN_WORDS_LEAD
) -> str | None:
    """The notice naming words a vocabulary lacks (with close known words when ``suggest`` is given)."""
    if not unknown:
        return None
    shown = []
    for word in unknown[:MAX_UNKNOWN_LISTED]:
        close = suggest(word) if suggest else []
        word = shorten(word, WORD_LIMIT)
        shown.append(f"{word} (did you mean {' or '.join(close)}?)" if close else word)
    more = " …" if len(unknown) > MAX_UNKNOWN_LISTED else ""
    return f"{lead}: {', '.join(shown)}{more}."


def length_notices(
    n_total: int, limit: int, *, max_tokens: int, max_positions: int, cut_chars: bool, verb: str = "traced"
) -> list[str]:
    """Notices about cutting the input: a very long text, the model's own limit, the token limit."""
    notices = (
        [f"The text was longer than {MAX_CHARS:,} characters: only the first {MAX_CHARS:,} were read."]
        if cut_chars
        else []
    )
    if n_total > limit:
        if max_tokens > max_positions:
            notices.append(f"This model reads at most {max_positions} tokens; the limit was lowered to that.")
        read = "Those characters have" if cut_chars else "The text has"
        notices.append(f"{read} {n_total} tokens; only the first {limit} were {verb}.")
    return notices
