"""An encoder-decoder's trace: the encoder's, the decoder's and the cross-attention's blocks of heads."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from engine.records import Family, Tokens
from engine.traces.attention import AttentionTrace


@dataclass(frozen=True, eq=False)
class Seq2SeqTrace:
    """An encoder-decoder transformer translating one source sentence by greedy decoding.

    Attributes:
        model_id: the id the model was loaded with.
        source: source tokens (the key side of cross-attention).
        target: generated target tokens, starting with ``<bos>`` (the query side).
        output_text: the decoded translation, for display.
        encoder: self-attention of the encoder over ``source`` (not causal).
        decoder: causal self-attention of the decoder over ``target``.
        cross: cross-attention, queries = ``target``, keys = ``source``
            (``decoder.blocks.{L}.cross_attn.*``).
        notices: sentences for the UI (unknown words, truncation).
        family: always ``"encoder-decoder"`` (the :class:`Trace` protocol).
        device: where the forward pass ran ("cpu", "cuda").
        written: one token per row of ``decoder`` and ``cross``: the output token that step wrote
            (``target[1:]``, then the end token; :data:`CUT_TOKEN` where decoding was cut before the last
            row wrote anything). None: not recorded (then :meth:`rows_written` falls back to ``target``).
    """

    model_id: str
    source: Tokens
    target: Tokens
    output_text: str
    encoder: AttentionTrace
    decoder: AttentionTrace
    cross: AttentionTrace
    notices: tuple[str, ...] = field(default_factory=tuple)
    family: Family = "encoder-decoder"
    device: str = "cpu"
    written: Tokens | None = None

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """The :class:`Trace` protocol: encoder self-, decoder self- and cross-attention."""
        return {"encoder": self.encoder, "decoder": self.decoder, "cross": self.cross}

    def rows_written(self) -> Tokens:
        """What each decoder step wrote (:attr:`written`), or ``target`` when that was not recorded."""
        return self.target if self.written is None or len(self.written) != len(self.target) else self.written

    @cached_property
    def cross_by_output(self) -> AttentionTrace:
        """``cross`` with each row named by the token that step wrote (:meth:`rows_written`) instead of the
        token it read in: the labels a reader of a translation map expects ("rouge" reads "red"). Same
        arrays, no copy; made once per trace."""
        return replace(self.cross, tokens=self.rows_written())


#: the display token of a decoder step whose output was never written (decoding stopped at its token cap)
CUT_TOKEN = "(cut)"


def written_tokens(generated: Tokens, finished: bool) -> Tokens:
    """:attr:`Seq2SeqTrace.written` from the generated tokens (no start token; ending with the end token
    when ``finished``): unfinished output gets one :data:`CUT_TOKEN` row (id −1) for the last step."""
    if finished:
        return generated
    return Tokens(strings=(*generated.strings, CUT_TOKEN), ids=(*generated.ids, -1), special=(*generated.special, True))
