"""The small records and errors every part of the engine shares: the catalog entry, tokens, a page's model card.

Plain data (no torch), like the traces (:mod:`engine.traces`): what a page receives from the engine pickles
cheaply and can be used from a notebook without the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Family = Literal["encoder", "decoder", "encoder-decoder", "vit", "rnn-attention", "captioner"]


class EngineError(Exception):
    """Base class of every error the engine raises on purpose; ``str(err)`` is for end users."""


class EmptyInputError(EngineError, ValueError):
    """The text to trace is empty (or only whitespace / invisible characters)."""


class ModelUnavailableError(EngineError):
    """A model cannot be loaded: unknown id, no network for a hub id, unsupported architecture."""


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the model catalog.

    Attributes:
        id: what ``engine.load`` takes, e.g. ``"minilm"``.
        family: encoder, decoder, encoder-decoder, vit, rnn-attention or captioner.
        label: a short human-readable name for pickers.
        offline: True when the model loads on a machine with no network.
        description: one sentence for the UI.
    """

    id: str
    family: Family
    label: str
    offline: bool
    description: str = ""


@dataclass(frozen=True)
class Tokens:
    """Tokens of one side of an attention matrix, ready for display.

    Attributes:
        strings: display strings, with tokenizer markers (``Ġ``, ``▁``, ``##``) cleaned.
        ids: vocabulary ids.
        special: True for marker tokens the tokenizer adds or reserves, such as ``[CLS]``, ``[SEP]``,
            ``<bos>``, ``<|endoftext|>``. An unknown-word token (``[UNK]``, ``<unk>``) stands for a word
            of the user's text and is not special (it still shows as ``[UNK]``).
    """

    strings: tuple[str, ...]
    ids: tuple[int, ...]
    special: tuple[bool, ...]

    def __post_init__(self) -> None:
        if not (len(self.strings) == len(self.ids) == len(self.special)):
            raise ValueError(
                f"Tokens: {len(self.strings)} strings, {len(self.ids)} ids and "
                f"{len(self.special)} special flags must have one length"
            )

    def __len__(self) -> int:
        return len(self.strings)

    def labels(self) -> list[str]:
        """Unique axis labels ``"3 cat"`` (position first, so repeated words stay distinct)."""
        return [f"{i} {s}" for i, s in enumerate(self.strings)]


class CheckpointError(EngineError):
    """A checkpoint cannot be saved or loaded: a missing, truncated, corrupt or mismatched file.

    The message names the file and the problem, e.g. ``"tiny.safetensors: blocks.0.attn.w_q.weight:
    file has (64, 32), config expects (64, 64)"``.
    """


@dataclass(frozen=True)
class ModelCard:
    """What a page may know about a loaded model: plain, read-only data, never the torch-backed
    :class:`engine.model.Model` (pages must not hold modules shared by every session).

    Attributes:
        spec: the catalog entry (id, family, label).
        default_causal: whether the model masks future tokens by itself (where a causal toggle starts).
        max_positions: the longest input the model accepts, in tokens.
    """

    spec: ModelSpec
    default_causal: bool
    max_positions: int

    @property
    def family(self) -> Family:
        return self.spec.family
