"""Explore's "Write more" tab: a decoder writes after the user's text, and its attention over the result.

Writing is long work (up to 128 forward passes): :func:`request_generation` runs ``engine.generate`` on
the long-work lane (``app.runtime.long_work``), never in the page's script thread, and puts the trace
in the per-process trace cache under the key ``traces.get_trace`` uses for the same request. Once it is
there, :func:`get_generation` (``traces.get_trace`` with the decoding settings) is a cache hit, so a rerun
of the tab (a new layer or head) runs no model and one head of it is drawn by ``maps.head_view`` like
any other. This module adds the text of the two parts.
"""

from __future__ import annotations

import engine
from app.runtime.caches import TRACES
from app.runtime.heads import attention_block
from app.runtime.long_work import WRITE, long_status, submit_long
from app.runtime.maps import prefetch_head_view
from app.runtime.models import get_model, policy, trained_model
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace, has_trace, request_key
from engine.decoding import generated_text
from engine.generation import DecodeSettings
from engine.jobs import JobStatus

#: DecodeSettings as plain values, in field order: (max_new_tokens, sample, temperature, top_k, top_p, seed)
SettingsTuple = tuple[int, bool, float, int, float, int]
#: expected seconds of a generation: a start, then per token (learned per server by the long-work lane)
WRITE_START_S, WRITE_TOKEN_S = 0.2, 0.03


def request_generation(request: TraceRequest, pressed: bool, view: tuple[int, int] | None = None) -> JobStatus | None:
    """Make sure the generation ``request`` asks for (``request.decode``: its settings) is, or will be, in
    the trace cache. None when it is there (:func:`get_generation` reads it); else this session's "write"
    job for it: submitted when the button was ``pressed`` or this session has none for this request.
    ``view``: the ``(layer, head)`` the page will draw; the job also computes that head's map (an overview of
    a long prompt costs more than a forward pass), on the lane's low priority instead of the page's.

    Raises:
        EngineError: a setting out of range (checked here, before anything is queued).
    """
    if has_trace(request):
        return None
    settings = DecodeSettings(*request.decode)
    trained, rules = trained_model(request.model_id), policy()
    key = (request.trace_key, trained, rules)  # traces.get_trace's key for this request
    status = long_status(WRITE)
    if status is not None and status.key == key and not pressed:
        return status
    model = get_model(request.model_id)  # the session's own trained model where it has one, as get_trace
    view_key = request_key(request)  # read here: the job's thread has no session

    def work() -> None:  # the trace goes to the shared cache only: a finished job holds no copy
        trace = TRACES.get(key, lambda: engine.generate(model, request.text, settings, max_tokens=request.max_tokens))
        if view is not None:
            prefetch_head_view(view_key, attention_block(trace, request.block), *view)

    return submit_long(WRITE, work, key=key, estimate_s=WRITE_START_S + WRITE_TOKEN_S * settings.max_new_tokens)


def get_generation(
    model_id: str, text: str, max_tokens: int, settings: SettingsTuple
) -> tuple[engine.AttentionTrace, str, str]:
    """``(trace of prompt + generated tokens, prompt text, generated text)``; the trace shared, read-only.
    Call it once :func:`request_generation` says the trace is ready (then it is a cache hit).

    Raises:
        EngineError: a setting out of range (checked by ``DecodeSettings``), not a decoder, empty text.
    """
    trace = get_trace(TraceRequest(model_id, text, None, max_tokens, tuple(settings)))
    return (trace, *generated_text(get_model(model_id), trace))
