"""One locked place that imports transformers (torch-free itself: a server's warm-up imports it first and
calls :func:`hf` when it chooses to).

``transformers`` is a lazy module: two threads importing names from it at the same time (the
app's background warm-up and a first page load) can see a half-initialised module and fail with
``ImportError: cannot import name 'AutoModel'``. Every engine import of it goes through ``hf()``.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

_lock = threading.Lock()
_api: SimpleNamespace | None = None


def hf() -> SimpleNamespace:
    """The transformers names the engine uses (imported once, under a lock; ~5 s the first time)."""
    global _api
    with _lock:
        if _api is None:
            from transformers import (
                AutoImageProcessor,
                AutoModel,
                AutoModelForCausalLM,
                AutoModelForImageClassification,
                AutoModelForSeq2SeqLM,
                AutoTokenizer,
                GPT2Config,
                GPT2LMHeadModel,
                PreTrainedTokenizerFast,
            )
            from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

            _api = SimpleNamespace(
                AutoImageProcessor=AutoImageProcessor,
                AutoModelForImageClassification=AutoModelForImageClassification,
                AutoModel=AutoModel,
                AutoModelForCausalLM=AutoModelForCausalLM,
                AutoModelForSeq2SeqLM=AutoModelForSeq2SeqLM,
                AutoTokenizer=AutoTokenizer,
                GPT2Config=GPT2Config,
                GPT2LMHeadModel=GPT2LMHeadModel,
                PreTrainedTokenizerFast=PreTrainedTokenizerFast,
                causal_lm_types=frozenset(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES),  # model types AutoModelForCausalLM builds
            )
        return _api
