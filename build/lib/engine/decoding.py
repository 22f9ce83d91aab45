"""The generation loop every decoder shares, and how its result is described and read back as text.

An adapter's ``generate`` turns the prompt into ids, hands :func:`decode_loop` a ``step`` function
(ids so far → the last position's scores; our own models recompute the whole sequence, Hugging Face
models feed one new token with their key/value cache) and then traces prompt + generated ids once,
so the returned :class:`~engine.traces.attention.AttentionTrace` is an ordinary trace with ``generated_from``
set. Keeping the loop here means greedy/sampled picking, the end-of-text stop and the position limit
behave the same for every family. Adapters take the model's lock for each step, not for the whole
loop, so a page tracing the same model waits for one token, not for a whole continuation; inside a
long-work job each token is a yield point (:func:`engine.jobs.checkpoint`: progress, cancellation,
the time budget).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from engine.generation import DecodeSettings, TokenPicker
from engine.job_records import Step
from engine.jobs import checkpoint
from engine.records import EngineError
from engine.traces.attention import AttentionTrace
from engine.vocab import UNK_ID, Vocab

NEEDS_DECODER = (
    "Generating text needs a decoder (a GPT-style model such as tiny-gpt-stories, GPT-2, Llama or Qwen); "
    "this model does not write text one token at a time."
)


def room_for(n_prompt: int, settings: DecodeSettings, max_positions: int) -> int:
    """How many tokens may be generated after ``n_prompt`` prompt tokens.

    Raises:
        EngineError: the prompt already fills the model's positions.
    """
    room = max_positions - n_prompt
    if room < 1:
        raise EngineError(
            f"The prompt already fills this model's {max_positions} positions: shorten it to leave room for new tokens."
        )
    return min(settings.max_new_tokens, room)


def decode_loop(
    step: Callable[[list[int]], np.ndarray],
    prompt_ids: Sequence[int],
    settings: DecodeSettings,
    stop_ids: Collection[int],
    n_new: int,
    n_named: int | None = None,
) -> tuple[list[int], bool]:
    """Pick up to ``n_new`` tokens after ``prompt_ids``.

    Args:
        step: ``ids so far → [vocab]`` scores of the next token (called once per generated token).
        prompt_ids: the prompt.
        settings: greedy or sampled (a fresh seeded picker per call, so a retry repeats the same draw).
        stop_ids: end-of-text ids; picking one ends the loop (it is kept as the last generated token).
        n_new: the most tokens to generate.
        n_named: how many ids the tokenizer names (:func:`engine.text.named_ids`); ids above are never
            picked. None: every scored id has a token (our own models).

    Returns:
        ``(generated ids, True when an end-of-text token stopped the loop)``.

    Raises:
        JobStopped: run as a long-work job that must stop (:func:`engine.jobs.checkpoint`, after each token).
    """
    pick = TokenPicker(settings, n_named)
    ids = list(prompt_ids)
    new: list[int] = []
    for _ in range(n_new):
        token = pick(np.asarray(step(ids), dtype=np.float64))
        ids.append(token)
        new.append(token)
        if token in stop_ids:
            return new, True
        checkpoint(Step(len(new), n_new, f"token {len(new)} of {n_new}"))
    return new, False


def generation_notice(settings: DecodeSettings, n_new: int, stopped: bool, capped: bool, max_positions: int) -> str:
    """One sentence for the UI: how many tokens, how they were picked, and why the loop ended."""
    why = (
        " It stopped at the end-of-text token."
        if stopped
        else f" It stopped at this model's limit of {max_positions} positions."
        if capped
        else ""
    )
    plural = "" if n_new == 1 else "s"
    return f"The model wrote {n_new} token{plural}, {settings.describe()}.{why}"


def generated_text(model, trace: AttentionTrace) -> tuple[str, str]:
    """The prompt and the generated continuation of ``trace`` as text: ``(prompt, continuation)``.

    Display tokens lose spaces (``Ġcat`` shows as ``cat``), so the text is decoded from the ids:
    our word-level models join their words with spaces; a Hugging Face tokenizer decodes the whole
    sequence and the continuation is what follows the decoded prompt (so a leading space survives).
    Marker tokens (``<bos>``, ``<eos>``, ``<|endoftext|>``) are left out.
    """

    cut = len(trace.tokens) if trace.generated_from is None else trace.generated_from
    ids = list(trace.tokens.ids)
    tok = model.tokenizer
    if isinstance(tok, Vocab):

        def words(part: list[int]) -> str:
            return " ".join(w for i, w in zip(part, tok.decode(part)) if not tok.is_special(i) or i == UNK_ID)

        prompt, rest = words(ids[:cut]), words(ids[cut:])
        return prompt, (" " + rest if prompt and rest else rest)
    prompt = tok.decode(ids[:cut], skip_special_tokens=True)
    whole = tok.decode(ids, skip_special_tokens=True)
    rest = whole[len(prompt) :] if whole.startswith(prompt) else tok.decode(ids[cut:], skip_special_tokens=True)
    return prompt, rest
