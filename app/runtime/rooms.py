"""A class in one room: the pages' way to the class store, and the questions whose answer is read from a real model
(through the same cached trace the other pages draw), never typed by the teacher.
"""

from __future__ import annotations

import zlib

import numpy as np

from app.runtime.heads import attention_block
from app.runtime.models import list_models
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from app.store import Ask, RoomError, Store, get_store
from app.store.lessons import LessonStore
from app.store.rooms import MAX_OPTIONS

PREDICT_READ_TOKENS = 128  # tokens traced (as the Lessons page), so a longer sentence is noticed, not cut silently
PREDICT_MAX_TOKENS = MAX_OPTIONS["predict"]  # each token of the sentence is one option
HEAD_CHOICES = 4  # options of a "which head is this?" question: the head that made the map and three others


def class_store() -> Store:
    """This process's class store (``AP_DATABASE_URL`` or the SQLite file in ``AP_DATA_DIR``)."""
    return get_store()


def lesson_store() -> LessonStore:
    """Saved lessons and the lessons rooms walk through, on the same class store."""
    return LessonStore(get_store())


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


def predict_question(model_id: str, text: str, layer: int, head: int, word: str) -> Ask:
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
    return Ask("predict", prompt, options, int(np.argmax(weights)), detail)


def model_name(model_id: str) -> str:
    """The catalog label without its note in brackets ("all-MiniLM-L6-v2", not "minilm"); a typed id as it is."""
    label = next((s.label for s in list_models() if s.id == model_id), model_id)
    return label.split(" (")[0].strip() or model_id


def head_question(model_id: str, text: str, layer: int, head: int) -> Ask:
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
    options = tuple(f"layer {ly} head {h}" for ly, h in heads)
    return Ask("head", prompt, options, heads.index((layer, head)), detail)
