"""A class in one room: the pages' way to the class store, the browser's anonymous id, and the questions whose
answer is read from a real model (through the same cached trace the other pages draw), never typed by the teacher.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

import numpy as np
import streamlit as st

from app.runtime.heads import attention_block
from app.runtime.models import list_models, session_id
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.state import default_from
from app.store import RoomError, Store, get_store
from app.store.lessons import LessonStore
from app.store.rooms import MAX_OPTIONS
from app.views.classroom.keys import ROOM

PREDICT_READ_TOKENS = 128  # tokens traced (as the Lessons page), so a longer sentence is noticed, not cut silently
PREDICT_MAX_TOKENS = MAX_OPTIONS["predict"]  # each token of the sentence is one option
HEAD_CHOICES = 4  # options of a "which head is this?" question: the head that made the map and three others
BROWSER_COOKIE = "ap_browser"  # the anonymous browser id, kept by the browser across reloads (no name)
BROWSER_ID_RE = re.compile(r"[0-9a-f]{32}")  # what runtime.models.session_id makes: uuid4().hex
BROWSER_COOKIE_S = 24 * 3600  # a day: longer than a class (4 h), short enough not to follow a laptop for weeks


def class_store() -> Store:
    """This process's class store (``AP_DATABASE_URL`` or the SQLite file in ``AP_DATA_DIR``)."""
    return get_store()


def lesson_store() -> LessonStore:
    """Saved lessons and the lessons rooms walk through (issue 21, 3), on the same class store."""
    return LessonStore(get_store())


def browser_id() -> str:
    """The anonymous id a room knows this browser by: read once per session from :data:`BROWSER_COOKIE` when it
    holds a well-formed id, else this session's own (the same after a reload once the cookie is written)."""

    def from_cookie() -> str:
        cookie = st.context.cookies.get(BROWSER_COOKIE)
        return cookie if isinstance(cookie, str) and BROWSER_ID_RE.fullmatch(cookie) else session_id()

    return default_from(ROOM.browser, from_cookie)


def browser_cookie_missing() -> bool:
    """True while the browser's cookie does not hold :func:`browser_id` yet (so the panel writes it)."""
    return st.context.cookies.get(BROWSER_COOKIE) != browser_id()


@dataclass(frozen=True)
class PredictQuestion:
    """A question read from a model, with the model's own answer and ``detail``, the plain data the reveal draws
    (model, text, layer, head, and the query's row of weights or the head's map)."""

    prompt: str
    options: tuple[str, ...]
    answer: int
    detail: dict


def token_options(strings) -> tuple[str, ...]:
    """One distinct label per token: the token itself, ``word (k)`` for its k-th appearance (k ≥ 2)."""
    seen: dict[str, int] = {}
    labels = []
    for raw in strings:
        word = " ".join(str(raw).split()) or "·"
        seen[word] = seen.get(word, 0) + 1
        labels.append(word if seen[word] == 1 else f"{word} ({seen[word]})")
    return tuple(labels)


def _read(model_id: str, text: str, layer: int, head: int):
    """``text``'s attention as ``model_id`` reads it; :class:`RoomError` for no sentence or a head it lacks."""
    if not isinstance(text, str) or not text.strip():
        raise RoomError("Write the sentence the model should read.")
    attention = attention_block(get_trace(TraceRequest(model_id, text, None, PREDICT_READ_TOKENS)))
    if not (0 <= layer < attention.n_layers and 0 <= head < attention.n_heads):
        raise RoomError(f"This model has layers 0–{attention.n_layers - 1} and heads 0–{attention.n_heads - 1}.")
    return attention


def predict_question(model_id: str, text: str, layer: int, head: int, word: str) -> PredictQuestion:
    """ "Which token does head L.H look at from ``word``?": ``word``'s row of ``pattern(layer, head)``, one option
    per key token; :class:`RoomError` (for the teacher) for a bad sentence, head or word."""
    if isinstance(text, str) and text.strip() and (not isinstance(word, str) or not word.strip()):
        raise RoomError("Write the word whose attention students predict (one of the sentence's tokens).")
    attention = _read(model_id, text, layer, head)
    keys = tuple(attention.key_tokens.strings)
    if len(keys) > PREDICT_MAX_TOKENS:
        raise RoomError(
            f"The model reads this sentence as {len(keys)} or more tokens; a class question offers each "
            f"token as an answer, so use a sentence of at most {PREDICT_MAX_TOKENS} tokens."
        )
    queries = tuple(attention.tokens.strings)
    target = " ".join(word.split()).casefold()
    hits = [i for i, s in enumerate(queries) if s.strip().casefold() == target]
    if not hits:
        raise RoomError(
            "That word is not one of the sentence's tokens as the model reads it: " + ", ".join(token_options(queries))
        )
    query = hits[0]
    weights = np.asarray(attention.pattern(layer, head)[query], dtype=float)
    options = token_options(keys)
    prompt = (
        f"{model_name(model_id)}, layer {layer} head {head}: which token does “{queries[query].strip()}” look at most?"
    )
    detail = {"model": model_id, "text": text, "layer": layer, "head": head, "query": query}
    detail["weights"] = [round(float(w), 4) for w in weights]
    return PredictQuestion(prompt, options, int(np.argmax(weights)), detail)


def model_name(model_id: str) -> str:
    """The catalog label without its note in brackets ("all-MiniLM-L6-v2", not "minilm"); a typed id as it is."""
    label = next((s.label for s in list_models() if s.id == model_id), model_id)
    return label.split(" (")[0].strip() or model_id


def head_question(model_id: str, text: str, layer: int, head: int) -> PredictQuestion:
    """ "Which head made this map?": ``pattern(layer, head)`` among :data:`HEAD_CHOICES` heads, drawn from a seed of
    the question itself (the same heads in the same order each time)."""
    attention = _read(model_id, text, layer, head)
    if attention.n_queries > PREDICT_MAX_TOKENS or attention.n_keys > PREDICT_MAX_TOKENS:
        raise RoomError(
            f"The model reads this sentence as {max(attention.n_queries, attention.n_keys)} or more tokens; "
            f"a map students read on a phone needs at most {PREDICT_MAX_TOKENS}: use a shorter sentence."
        )
    every = [(ly, h) for ly in range(attention.n_layers) for h in range(attention.n_heads) if (ly, h) != (layer, head)]
    if not every:
        raise RoomError("This model has one head only: there is nothing to choose from.")
    rng = np.random.default_rng(zlib.crc32(f"{model_id}|{text}|{layer}|{head}".encode()))
    others = [every[i] for i in rng.choice(len(every), size=min(HEAD_CHOICES - 1, len(every)), replace=False)]
    heads = [(layer, head), *others]
    order = rng.permutation(len(heads))
    heads = [heads[i] for i in order]
    weights = np.asarray(attention.pattern(layer, head), dtype=float)
    detail = {"model": model_id, "text": text, "layer": layer, "head": head}
    detail["queries"] = list(token_options(attention.tokens.strings))
    detail["keys"] = list(token_options(attention.key_tokens.strings))
    detail["map"] = [[round(float(w), 4) for w in row] for row in weights]
    prompt = f"{model_name(model_id)} read “{' '.join(text.split())[:80]}”: which head made this map?"
    return PredictQuestion(prompt, tuple(f"layer {ly} head {h}" for ly, h in heads), heads.index((layer, head)), detail)
