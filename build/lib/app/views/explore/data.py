"""Explore's "Write more": a decoder writes after the user's text on the long-work lane (up to 128 forward passes,
never in the page's thread); the trace lands in the trace cache, where :func:`get_generation` reads it."""

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


def request_generation(request: TraceRequest, pressed: bool, view: MapView) -> JobStatus | None:
    """None when the generation ``request`` asks for is in the trace cache, else this session's "write" job for it
    (submitted when ``pressed`` or none is there for it). The job also computes ``view``'s map, the head drawn."""
    if has_trace(request):
        return None
    key = request_key(request.with_block("self"))  # the trace cache's key, read here: the job's thread has no session
    status = long_status(WRITE)
    if status is not None and status.key == key and not pressed:
        return status
    load, view_key = trace_loader(request, long_work=True), request_key(request)

    def work() -> None:  # the trace goes to the shared cache only: a finished job holds no copy
        prefetch_head_view(view_key, attention_block(load(), request.block), view)

    estimate_s = WRITE_START_S + WRITE_TOKEN_S * request.decode.max_new_tokens
    return submit_long(WRITE, work, key=key, estimate_s=estimate_s)


def get_generation(request: TraceRequest) -> tuple[engine.AttentionTrace, str, str]:
    """``(trace of prompt + generated tokens, prompt text, generated text)``, once :func:`request_generation` says
    the trace is ready (EngineError: not a decoder, empty text)."""
    trace = get_trace(request)
    return (trace, *generated_text(get_model(request.model_id), trace))
