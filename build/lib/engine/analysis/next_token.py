"""What a decoder predicts next, and how temperature reshapes that prediction.

    p_T(w) = softmax(z / T)_w        z: the last position's scores over the vocabulary

The forward pass is the ablation runner's, with no head switched off, so at T = 1 the probabilities
equal the ablation panel's "before" column. The runner returns log-probabilities, log p = z − logsumexp(z);
softmax is unchanged by adding a constant to every score, so they serve as ``z`` for every T. Temperature
is applied in numpy (:func:`probabilities`): changing it needs no new forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.records import EngineError, Tokens

TOP_K = 10


@dataclass(frozen=True, eq=False)
class NextTokenLogits:
    """The last position's scores of one input, and the tokens that score highest.

    The order of softmax(z / T) is the order of z for every T > 0, so the top candidates are fixed.
    """

    model_id: str
    tokens: Tokens  # the (possibly cut) input
    logits: np.ndarray  # [vocab] float32, log-probabilities at T = 1 (scores up to a constant)
    top_ids: tuple[int, ...]  # highest first; ties by id
    top_tokens: tuple[str, ...]  # display text of top_ids
    notices: tuple[str, ...] = ()


def next_token_logits(
    model, text: str, *, causal: bool | None = None, max_tokens: int = 512, top_k: int = TOP_K
) -> NextTokenLogits:
    """One forward pass of a decoder on ``text``; the scores of the token after it.

    Args:
        model: from :func:`engine.load`, a decoder (own ``tiny-gpt-stories``, GPT-2 family). Shared and
            read-only: the run happens under ``model.lock`` through ``model.run``.
        text: the input; longer than ``max_tokens`` is cut (a notice says so).
        causal: force the causal mask on/off; None keeps the model's default.
        top_k: how many candidates to name (1–1000).

    Returns:
        A :class:`NextTokenLogits`.

    Raises:
        EngineError: the model does not predict a next token (encoders, the translator, ViT).

    Example:
        >>> nt = next_token_logits(engine.load("tiny-gpt-stories"), "the girl saw a")
        >>> probabilities(nt.logits, 0.5)[list(nt.top_ids)]
    """
    from engine.analysis.ablation_runs import runner_for

    runner = runner_for(model)
    if runner.output != "next-token":
        raise EngineError("Next-token prediction needs a decoder (a GPT-style model).")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
        raise EngineError(f"top_k must be a whole number from 1 to 1000, got {top_k!r}.")
    prepared = runner.prepare(model, text, causal=causal, max_tokens=max_tokens)
    log_p, _device, notice = model.run(lambda module, device: runner.run(module, device, prepared, (), None))
    fields = runner.summarise(prepared, log_p, log_p, top_k)  # the ablation panel's top-k and labels
    return NextTokenLogits(
        model_id=model.spec.id,
        tokens=prepared.tokens,
        logits=np.asarray(log_p, dtype=np.float32),
        top_ids=fields["top_ids"],
        top_tokens=fields["top_tokens"],
        notices=prepared.notices + ((notice,) if notice else ()),
    )


def probabilities(logits: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(logits / T) over the whole vocabulary, float64 (numerically stable).

    Raises:
        EngineError: T is not a finite number > 0.
    """
    t = float(temperature)
    if not np.isfinite(t) or t <= 0:
        raise EngineError(f"Temperature must be a number above 0, got {temperature!r}.")
    z = np.asarray(logits, dtype=np.float64) / t
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()
