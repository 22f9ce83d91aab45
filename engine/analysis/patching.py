"""Activation patching: which heads, and which positions of the residual stream, carry the answer.

Two prompts of the same token length, a clean one and a corrupted one (a name swapped), and two next
tokens, the answer (right after the clean prompt) and a wrong one (right after the corrupted prompt).
The measure is the logit difference at the last position, ``d = logit(answer) − logit(wrong)``. One
activation of the corrupted run is replaced by the clean run's (everything else is recomputed from
it), and the share of the gap it restores is

    restored = (d_patched − d_corrupt) / (d_clean − d_corrupt)        0: as corrupted, 1: as clean

- a head: its output ``z_h`` (``pattern · V``, before the output projection sums the heads), with the
  hook head ablation uses (:func:`~engine.analysis.ablation_heads.replace_hook`) given the clean ``z``
  in place of 0: :func:`patch_heads`, ``[layer, head]``;
- the residual stream at one position, at each layer's input and after the last layer:
  :func:`patch_residual`, ``[layer + 1, position]``. After the last layer, the last position alone
  makes the logits, so it restores exactly 1; at layer 0 a position where the prompts have the same
  token restores 0.

Every patch of one call runs in batches of corrupted copies, one patch per row. Decoders only: our own
(``tiny-gpt-stories``, ``induction-2l-attn-only``) and Hugging Face's (GPT-2, Llama-likes).

Example:
    >>> model = engine.load("tiny-gpt-stories")
    >>> ex = EXAMPLES["tiny-gpt-stories"]
    >>> patch_heads(model, ex.clean, ex.corrupt, ex.answer, ex.wrong)   # (3, 4)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from engine.analysis.ablation_heads import SELF, hooked, replace_hook
from engine.analysis.ablation_runs import OwnDecoderRunner, Prepared, runner_for
from engine.capture import capture
from engine.families.transformer.adapter import words_of
from engine.records import EngineError
from engine.text import display_tokens, quote_input

MAX_TOKENS = 256  # longest prompt (tokens)
ROWS = 32  # patched copies per forward pass

NOT_A_DECODER = (
    "Activation patching compares next-token logits, so it needs a decoder (a GPT-style model such as "
    "tiny-gpt-stories, induction-2l-attn-only, GPT-2 or Llama); {model} does not predict the next token."
)


@dataclass(frozen=True)
class Example:
    """A built-in experiment for one model: the prompts, the two next tokens, the heads that carry most of the
    answer (largest restored share first) and what to notice."""

    clean: str
    corrupt: str
    answer: str
    wrong: str
    heads: tuple[tuple[int, int], ...]
    notice: str


#: one experiment per decoder we ship, chosen so that a few heads carry most of the answer
EXAMPLES: dict[str, Example] = {
    "tiny-gpt-stories": Example(
        clean="Omar found an orange ring. He saw Ruby in the shop. He gave it to",
        corrupt="Omar found an orange ring. He saw Lily in the shop. He gave it to",
        answer="Ruby",
        wrong="Lily",
        heads=((0, 3), (1, 2), (1, 1), (0, 0)),
        notice=(
            "The name is written once, eight words before the end. Heads 0.3, 1.2 and 1.1 each restore about "
            "half of the gap on their own, 0.0 a quarter, the other eight almost nothing. The residual grid shows "
            "the route: layer 0 copies the name onto the full stop after 'shop', layer 1 carries it on to the last word."
        ),
    ),
    "induction-2l-attn-only": Example(
        clean="qwhkzpmtrvqwhkz",
        corrupt="qwhkzjmtrvqwhkz",
        answer="p",
        wrong="j",
        heads=((1, 2), (1, 0), (0, 3)),
        notice=(
            "Only the letter after the first 'qwhkz' differs, and the model predicts it again after the repeat: "
            "induction. The induction head 1.2 restores most of the gap; in the residual grid the difference stays "
            "at that letter's position until layer 1 copies it to the last position."
        ),
    ),
}


@dataclass(frozen=True)
class Experiment:
    """Checked inputs of one patching call."""

    runner: object
    clean: Prepared
    corrupt: Prepared
    answer: int
    wrong: int


def _token_id(model, runner, word: str, what: str) -> int:
    """The one token id of ``word`` as it follows a prompt after a space (byte-level BPE: ``" Mary"``)."""
    if not isinstance(word, str) or not word.strip():
        raise EngineError(f"The {what} must be a word (one token), got {word!r}.")
    if isinstance(runner, OwnDecoderRunner):
        ids = model.tokenizer.encode(words_of(model)(word))
        pieces = model.tokenizer.decode(ids)
        if len(ids) == 1 and model.tokenizer.is_special(ids[0]):
            raise EngineError(f"The {what} {quote_input(word)} is not in {model.spec.id}'s vocabulary.")
    else:
        text = " " + word if runner.adapter.byte_level and not word[0].isspace() else word
        ids = list(model.tokenizer(text, add_special_tokens=False)["input_ids"])
        pieces = display_tokens(model.tokenizer, ids, runner.adapter.byte_level).strings
    if len(ids) != 1:
        raise EngineError(
            f"The {what} must be one token; {quote_input(word)} is {len(ids)} for {model.spec.id}: "
            f"{' | '.join(pieces)}. Pick a word the model reads as one token."
        )
    return int(ids[0])


def experiment(model, clean: str, corrupt: str, answer: str, wrong: str) -> Experiment:
    """Tokenize and check the inputs of :func:`patch_heads` / :func:`patch_residual`.

    Raises:
        EngineError: a model that is not a decoder, prompts of different token lengths or the same tokens, an
            answer or wrong word that is not one token (or the same token).
    """
    runner = runner_for(model) if model.spec.family == "decoder" else None
    if runner is None or runner.output != "next-token" or not model.default_causal:
        raise EngineError(NOT_A_DECODER.format(model=model.spec.id))
    a, b = (runner.prepare(model, text, causal=None, max_tokens=MAX_TOKENS) for text in (clean, corrupt))
    if len(a.ids) != len(b.ids):
        raise EngineError(
            f"The clean and corrupted prompts must have the same number of tokens, so that each position can be "
            f"patched: the clean one has {len(a.ids)} ({' | '.join(a.tokens.strings)}), the corrupted one "
            f"{len(b.ids)} ({' | '.join(b.tokens.strings)})."
        )
    if a.ids == b.ids:
        raise EngineError("The clean and corrupted prompts are the same tokens: change a word (e.g. swap a name).")
    right, other = _token_id(model, runner, answer, "answer"), _token_id(model, runner, wrong, "wrong word")
    if right == other:
        raise EngineError(f"The answer and the wrong word are the same token ({quote_input(answer)}).")
    return Experiment(runner, a, b, right, other)


#: a patch site: a module and whether its output (True) or its first input (False) is replaced
Site = tuple[nn.Module, bool]


def _on_output(hook):
    """A forward hook that applies the pre-hook ``hook`` to the module's output (a tensor or a tuple led by one)."""
    return lambda module, _args, out: hook(module, out) if isinstance(out, tuple) else hook(module, (out,))[0]


def _restored(
    model,
    ex: Experiment,
    sites: Callable[[nn.Module], list[Site]],
    rows: list[tuple[int, torch.Tensor]],
    n_heads: int | None = None,
) -> np.ndarray:
    """The restored share of each row ``(site, chosen)``: the corrupted run with ``site``'s activation taken from the
    clean run where ``chosen`` is True (:func:`~engine.analysis.ablation_heads.replace_hook`; per head with
    ``n_heads``). Float64 ``[rows]``."""

    def diff(logits: torch.Tensor) -> torch.Tensor:  # (B, T, V) -> (B,)
        last = logits[:, -1].double()
        return last[:, ex.answer] - last[:, ex.wrong]

    def work(module: nn.Module, device: torch.device) -> np.ndarray:
        here = sites(module)
        clean = torch.tensor([list(ex.clean.ids)], device=device)  # (1, T)
        corrupt = torch.tensor([list(ex.corrupt.ids)], device=device)  # (1, T)
        inputs = {str(i): m for i, (m, out) in enumerate(here) if not out}
        outputs = {str(i): m for i, (m, out) in enumerate(here) if out}
        with capture(inputs, inputs=True) as acts_in, capture(outputs) as acts_out:
            d_clean = diff(ex.runner.logits(module, clean, None))[0]
        acts = {**acts_in, **acts_out}
        d_corrupt = diff(ex.runner.logits(module, corrupt, None))[0]
        gap = float(d_clean - d_corrupt)
        if abs(gap) <= 1e-6 * max(1.0, abs(float(d_clean))):
            raise EngineError(
                f"Both prompts give the same logit difference ({float(d_clean):.4g}): there is nothing for a patch "
                "to restore. Change the corrupted prompt or the answer and wrong words."
            )
        out = []
        for start in range(0, len(rows), ROWS):
            chunk = rows[start : start + ROWS]
            pre, post = [], []
            for i, (m, is_out) in enumerate(here):
                chosen = torch.stack([c if site == i else torch.zeros_like(c) for site, c in chunk])  # (B, ...)
                if chosen.any():
                    hook = replace_hook(chosen, acts[str(i)], n_heads)
                    (post if is_out else pre).append((m, _on_output(hook) if is_out else hook))
            with hooked(pre, post):
                out.append(diff(ex.runner.logits(module, corrupt.repeat(len(chunk), 1), None)))
        return ((torch.cat(out) - d_corrupt) / gap).cpu().numpy()

    restored, _device, _notice = model.run(work)
    return restored


def patch_heads(model, clean: str, corrupt: str, answer: str, wrong: str) -> np.ndarray:
    """The share of the logit difference each head restores when its output ``z_h`` comes from the clean run.

    Args:
        model: a decoder from :func:`engine.load` (shared, read-only: hooks are removed before this returns).
        clean, corrupt: prompts of the same token length (e.g. a name swapped).
        answer, wrong: one token each: the next token after ``clean`` and after ``corrupt`` (a word follows the
            prompt after a space).

    Returns:
        Float64 ``[layer, head]``: 0 = as the corrupted run, 1 = as the clean run (it can be below 0 or above 1);
        NaN on a linear-attention layer (no heads).

    Raises:
        EngineError: see :func:`experiment`; also when both prompts give the same logit difference.
    """
    ex = experiment(model, clean, corrupt, answer, wrong)
    n_layers, n_heads = ex.runner.layout[SELF]
    layers = sorted(layer for _, layer in ex.runner.projections(model.module))  # a linear-attention layer has none

    def sites(module: nn.Module) -> list[Site]:
        projections = ex.runner.projections(module)
        return [(projections[(SELF, layer)], False) for layer in layers]

    eye = torch.eye(n_heads, dtype=torch.bool)[:, None, :]  # (H, 1, H): row h chooses head h
    rows = [(site, eye[h]) for site in range(len(layers)) for h in range(n_heads)]
    out = np.full((n_layers, n_heads), np.nan)
    out[layers] = _restored(model, ex, sites, rows, n_heads).reshape(len(layers), n_heads)
    return out


def patch_residual(model, clean: str, corrupt: str, answer: str, wrong: str) -> np.ndarray:
    """The share of the logit difference restored by the clean run's residual stream at one layer and position.

    Row ``l < layers`` patches layer ``l``'s input (row 0: the embeddings), row ``layers`` the stream after the
    last layer (before the final LayerNorm). Arguments as :func:`patch_heads`.

    Returns:
        Float64 ``[layer + 1, position]`` (positions of the tokenized prompt, ``<bos>`` included where the model
        adds one); the last row's last position is 1.
    """
    ex = experiment(model, clean, corrupt, answer, wrong)
    n = len(ex.clean.ids)

    def sites(module: nn.Module) -> list[Site]:
        layers = ex.runner.layers(module)
        return [(layer, False) for layer in layers] + [(layers[-1], True)]

    n_rows = ex.runner.layout[SELF][0] + 1
    eye = torch.eye(n, dtype=torch.bool)[:, :, None]  # (T, T, 1): row p chooses position p
    rows = [(site, eye[p]) for site in range(n_rows) for p in range(n)]
    return _restored(model, ex, sites, rows).reshape(n_rows, n)
