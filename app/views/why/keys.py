"""The "Which heads carry the answer?" page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from app.url_params import Param, one_of, text

#: the decoders we ship with a built-in experiment (``engine.analysis.patching.EXAMPLES``), in the picker's order
MODELS = ("tiny-gpt-stories", "induction-2l-attn-only")
PROMPT_CHARS = 400


class Why:
    """The page's keys; the model, the two prompts and the two words are also its URL parameters."""

    model, clean, corrupt, answer, wrong = "why_model", "why_clean", "why_corrupt", "why_answer", "why_wrong"
    heads_chart, residual_chart = "why_heads", "why_residual"


PAGE = frozenset({"why"})
PARAMS = (
    Param(Why.model, one_of(MODELS), MODELS[0], PAGE),
    *(Param(key, text(PROMPT_CHARS), None, PAGE) for key in (Why.clean, Why.corrupt, Why.answer, Why.wrong)),
)
