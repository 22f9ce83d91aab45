"""Explore's "Write more" tab: a decoder writes after the user's text, and its attention over the result.

Writing is long work (up to 128 forward passes): :func:`request_generation` runs the trace of a request with
decoding settings (``traces.trace_loader``, the one path that writes a generated trace) on the long-work lane,
never in the page's script thread. The trace lands in the trace cache, so :func:`get_generation` is then a cache
hit and one head of it is drawn by ``maps.head_view`` like any other.
"""

from __future__ import annotations

import engine
from app.runtime.heads import attention_block
from app.runtime.long_work import WRITE, long_status, submit_long
from app.runtime.maps import prefetch_head_view
from app.runtime.models import get_model
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace, has_trace, request_key, trace_loader
from app.ui.map_data import MapView
from engine.decoding import generated_text
from engine.jobs import JobStatus

#: expected seconds of a generation: a start, then per token (learned per server by the long-work lane)
WRITE_START_S, WRITE_TOKEN_S = 0.2, 0.03


def request_generation(request: TraceRequest, pressed: bool, view: MapView | None = None) -> JobStatus | None:
    """Make sure the generation ``request`` asks for (``request.decode``) is, or will be, in the trace cache. None
    when it is there (:func:`get_generation` reads it); else this session's "write" job for it: submitted when the
    button was ``pressed`` or this session has none for this request. ``view``: the head the page will draw; the job
    also computes its map (an overview of a long prompt costs more than a forward pass) on the lane's low priority."""
    if has_trace(request):
        return None
    key = request_key(request.with_block("self"))  # the trace cache's key, read here: the job's thread has no session
    status = long_status(WRITE)
    if status is not None and status.key == key and not pressed:
        return status
    load, view_key = trace_loader(request, long_work=True), request_key(request)

    def work() -> None:  # the trace goes to the shared cache only: a finished job holds no copy
        trace = load()
        if view is not None:
            prefetch_head_view(view_key, attention_block(trace, request.block), view)

    estimate_s = WRITE_START_S + WRITE_TOKEN_S * request.decode.max_new_tokens
    return submit_long(WRITE, work, key=key, estimate_s=estimate_s)


def get_generation(request: TraceRequest) -> tuple[engine.AttentionTrace, str, str]:
    """``(trace of prompt + generated tokens, prompt text, generated text)``; the trace shared, read-only.
    Call it once :func:`request_generation` says the trace is ready (then it is a cache hit).

    Raises:
        EngineError: not a decoder, empty text.
    """
    trace = get_trace(request)
    return (trace, *generated_text(get_model(request.model_id), trace))
