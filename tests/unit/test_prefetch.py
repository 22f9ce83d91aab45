"""engine.prefetch: a child process traces the landing page's sentence while a server starts.

The child is real (``python -m engine.prefetch``, real MiniLM): what it sends back must be what this process's
engine computes for the same request (``engine.trace``, itself checked against Hugging Face's eager attention in
test_hf_parity.py), the model's card and where it ran. A child that cannot load answers nothing, and exits.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import prefetch
from engine.records import ModelCard
from engine.vocab import SPECIALS, Vocab, known_words

TEXT = "The prefetch child reads this sentence, <b>bold</b> and café ☕ included."
WAIT_S = 180.0


@pytest.fixture(autouse=True)
def _no_prefetch_left():
    yield
    prefetch.forget()


def test_the_child_sends_the_trace_this_process_computes_with_the_card_and_device():
    early = prefetch.start()
    early.send("minilm", TEXT, 16)  # a limit under the sentence's length: the cut is the child's too
    answer = early.wait(WAIT_S)
    assert answer is not None, "the prefetch child did not answer"
    assert early.proc.returncode == 0

    model = engine.load("minilm")
    expected = engine.trace(model, TEXT, causal=False, max_tokens=16)
    assert answer.key == ("minilm", TEXT, False, 16)
    assert answer.card == ModelCard(spec=model.spec, default_causal=False, max_positions=model.max_positions)
    assert answer.device == engine.device_name()
    assert answer.vocabulary is None  # MiniLM's WordPiece reads any text
    got = answer.trace
    assert got.tokens == expected.tokens and got.truncated and got.n_input_tokens == expected.n_input_tokens
    assert got.causal is False and (got.n_layers, got.n_heads) == (expected.n_layers, expected.n_heads)
    for layer in range(expected.n_layers):
        np.testing.assert_allclose(got.queries[layer], expected.queries[layer], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got.keys[layer], expected.keys[layer], rtol=1e-5, atol=1e-6)
        for head in (0, expected.n_heads - 1):
            np.testing.assert_allclose(got.pattern(layer, head), expected.pattern(layer, head), atol=1e-6)

    # asked about the model it loaded, it answers at once; about another model, nothing
    assert prefetch.answer("minilm", timeout_s=0) is answer
    assert prefetch.answer("tiny-random-gpt2", timeout_s=0) is None
    assert prefetch.asked() == "minilm" and prefetch.device() == answer.device and prefetch.answered(0)


def test_a_child_that_cannot_load_the_model_answers_nothing_and_exits():
    early = prefetch.start()
    early.send("no-such-model-here", "A sentence.", 16)
    assert early.wait(WAIT_S) is None
    assert early.proc.poll() is not None and early.proc.returncode != 0
    assert prefetch.answer("no-such-model-here", timeout_s=0) is None and not prefetch.answered(0)


def test_nothing_is_answered_when_no_prefetch_was_started():
    prefetch.forget()
    assert prefetch.answer("minilm", timeout_s=0) is None
    assert prefetch.asked() is None and prefetch.device() is None


def test_known_words_are_a_closed_vocabularys_words_without_its_specials():
    vocab = Vocab.from_words(["the", "cat", "sat"])
    assert known_words(vocab) == ("the", "cat", "sat")
    assert known_words({"source": vocab, "target": Vocab.from_words(["le", "chat"])}) == ("the", "cat", "sat")
    assert not set(SPECIALS) & set(known_words(vocab))
    assert known_words(engine.load("minilm").tokenizer) is None  # an open (WordPiece) tokenizer


def test_the_child_dies_with_the_server_that_started_it():
    """A server stopped while its child still imports (the classroom script's workers, stopped by Ctrl+C) leaves
    nothing behind: the kernel kills the child with its parent, long before its imports would have ended."""
    import os
    import subprocess
    import sys

    from tests.job_helpers import wait_until

    code = "from engine import prefetch; print(prefetch.start().proc.pid, flush=True); import os; os._exit(0)"
    parent = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    child = int(parent.stdout.split()[-1])

    def gone() -> bool:  # exited, or dead and waiting for init to reap it
        try:
            return open(f"/proc/{child}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    try:
        wait_until(gone, timeout=2.0, what="the prefetch child to die with its server")  # its imports take 3–4 s
    finally:
        if not gone():
            os.kill(child, 9)
