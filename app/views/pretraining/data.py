"""The Pretraining page's calls: fill-in-the-blank (kept in the shared trace cache), the objectives' examples (pure
numpy), and the long work: fine-tuning (``fine_tune_start``) and timing the three layers (``measure_start``, a
measurement shared by every session for the clock hour it was made in)."""

from __future__ import annotations

import copy
import functools
import time
from dataclasses import dataclass

import numpy as np

from app.runtime.caches import TRACES
from app.runtime.heads import attention_block
from app.runtime.long_work import FINETUNE, MEASURE, NSP, long_status, submit_long
from app.runtime.models import get_model, model_pass
from app.runtime.request import TraceRequest
from app.runtime.traces import get_trace
from engine.analysis import cost, objectives
from engine.cache import TraceCache
from engine.job_records import JobStatus

#: expected seconds of fine-tuning, setting up and per step (one thread), by kind; NSP's inputs are longer (bench_nsp.py)
SECONDS = {FINETUNE: (2.5, 0.02), NSP: (4.0, 0.07)}
#: layer timings measured on this server, shared by every session (small dicts: bounded by entries)
MEASURED = TraceCache(max_bytes=2**20, max_entries=128)

#: the own models each objective is shown with
MLM_MODEL = "tiny-bert-stories"
NEXT_TOKEN_MODEL = "tiny-gpt-stories"
SEQ2SEQ_MODEL = "tiny-translator"


def get_fill_mask(text: str, top_k: int = 10):
    """``engine.analysis.fill_mask`` of ``text`` on the masked-LM model (cached; shared, read-only)."""
    from engine.analysis.fill_mask import fill_mask

    model = get_model(MLM_MODEL)

    def compute():
        with model_pass():
            return fill_mask(model, text, top_k=top_k)

    return TRACES.get(("fill-mask", MLM_MODEL, text, int(top_k)), compute)


def blank_attention(text: str, position: int):
    """``[layer, head, key]`` attention of the blank at ``position`` (rows of the cached trace)."""
    from engine.analysis.fill_mask import attention_of

    return attention_of(get_fill_mask(text).trace, position)


def objective_examples(words: tuple[str, ...], seed: int = 0) -> dict:
    """The three objectives' training examples made from ``words``, and the encoder's and decoder's masks over
    them (see ``engine.analysis.objectives``)."""
    words = list(words)
    vocabulary = [t for t in get_model(MLM_MODEL).tokenizer.tokens if not (t.startswith("<") and t.endswith(">"))]
    return {
        "bidirectional": objectives.bidirectional_mask(len(words)),
        "causal": objectives.causal_mask(len(words)),
        "masked": objectives.masked_example(words, vocabulary, seed=seed),
        "next": objectives.next_token_examples(words),
        "span": objectives.span_example(words, seed=seed),
    }


@dataclass(frozen=True, eq=False)
class MeanAttention:
    """The mean of one layer's heads ``[query, key]`` on a sentence (the objectives tab's "Real" map), its tokens,
    where the causal mask blocks (None: no mask), the layer drawn and what was traced."""

    weights: np.ndarray
    queries: tuple[str, ...]
    keys: tuple[str, ...]
    blocked: np.ndarray | None
    layer: int
    model_id: str
    text: str


def objective_attention(model_id: str, text: str, causal: bool | None, layer: int, block: str) -> MeanAttention:
    """The mean of the heads of ``layer`` (at most the last) of ``model_id`` on ``text``, in attention ``block`` (an
    encoder-decoder's ``"cross"``), from the shared trace (64 tokens at most)."""
    trace = get_trace(TraceRequest(model_id, text, causal, 64))
    att = attention_block(trace, block)
    layer = min(int(layer), att.n_layers - 1)
    mean = np.mean([att.pattern_rows(layer, h, 0, att.n_queries) for h in range(att.n_heads)], axis=0)
    blocked = np.isneginf(att.mask(layer)) if att.causal else None
    return MeanAttention(mean, tuple(att.tokens.strings), tuple(att.key_tokens.strings), blocked, layer, model_id, text)


def layer_costs(n: int, d: int):
    """Self-attention, RNN and convolution counts at (n, d) (``engine.analysis.cost.counts``)."""
    return cost.counts(int(n), int(d))


def _measure_key(n: int, d: int) -> tuple:
    """A measurement's key in :data:`MEASURED`: its size and the clock hour (the server's load changes)."""
    return ("measure", int(n), int(d), int(time.time() // 3600))


def measured_costs(n: int, d: int) -> dict[str, float] | None:
    """Median seconds per call of the three layers at (n, d) measured on this server (this hour's measurement, or
    this session's last one of that size), or None before any."""
    key = _measure_key(n, d)
    if key in MEASURED:
        try:
            return MEASURED.get(key, _not_measured)
        except LookupError:  # evicted between the two lines
            pass
    status = long_status(MEASURE)
    done = status is not None and status.status == "done" and status.key == (int(n), int(d))
    return status.result if done else None


def _not_measured() -> dict[str, float]:
    raise LookupError("not measured")  # a peek: nothing is measured in the script thread


def measure_start(n: int, d: int) -> JobStatus | None:
    """Time attention, an RNN and a convolution at (n, d) on the long-work lane; None when this hour's
    measurement of that size is there already (:func:`measured_costs`)."""
    n, d, key = int(n), int(d), _measure_key(n, d)
    if key in MEASURED:
        return None
    # ~5 GMAC/s on one thread, and the RNN's Python loop (~0.1 ms a position over its 4 runs)
    estimate = 0.05 + sum(c.multiply_adds for c in cost.counts(n, d)) / 5e9 + 1e-4 * n

    def work() -> dict[str, float]:
        return MEASURED.get(key, lambda: cost.measure(n, d))

    return submit_long(MEASURE, work, key=(n, d), estimate_s=estimate)


def fine_tune_start(kind: str, steps: int, lr: float) -> JobStatus:
    """Fine-tune a copy of the masked-LM encoder as this session's long job of ``kind``: ``FINETUNE`` on the colour
    task (``engine.training.finetune``), ``NSP`` with a linear head on [CLS] (``engine.training.nsp``). The worker
    copies the shared model under its lock (no forward pass meanwhile) and trains the copy."""
    from engine.training.finetune import FinetuneResult, finetune
    from engine.training.nsp import NspResult, finetune_nsp

    fine_tune, result = {FINETUNE: (finetune, FinetuneResult), NSP: (finetune_nsp, NspResult)}[kind]
    (setup_s, step_s), model, steps, lr = SECONDS[kind], get_model(MLM_MODEL), int(steps), float(lr)

    def work():
        with model.lock:
            encoder, vocab = copy.deepcopy(model.module), model.tokenizer
        for item in fine_tune(encoder, vocab, steps=steps, lr=lr):
            if isinstance(item, result):
                return item
            yield item

    return submit_long(kind, work, key=(steps, lr), estimate_s=setup_s + step_s * steps)


@functools.lru_cache(maxsize=8)
def nsp_examples(n: int = 6, seed: int = 0) -> tuple:
    """``n`` next-sentence-prediction pairs (``engine.training.nsp.NspPair``) from 200 generated stories, to show
    the task before any training (pure Python, cached per process)."""
    from engine.corpora import story_corpus
    from engine.training.nsp import nsp_pairs

    max_len = get_model(MLM_MODEL).module.cfg.max_len
    return tuple(nsp_pairs(story_corpus(200, seed + 7), n, seed, max_tokens=max_len))
