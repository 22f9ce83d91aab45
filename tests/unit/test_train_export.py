"""After live training: the typed-input answer, the zipped checkpoint, and the per-session runtime registry."""

from __future__ import annotations

import threading
import zipfile

import numpy as np
import pytest
import torch

import engine
from engine import registry
from engine.checkpoint import load_checkpoint
from engine.families.transformer.adapter import trace_own
from engine.records import ModelUnavailableError
from engine.training.export import answer, checkpoint_zip, runtime_model, split_words
from engine.training.jobs import JobManager


@pytest.fixture(scope="module")
def job():
    """The page's default model on reverse, trained long enough to be right (~100 steps suffice)."""
    manager = JobManager(max_running=1, heartbeat_timeout=600)
    j = manager.submit("export-test", dict(task="reverse", steps=250, device="cpu"))
    assert j.wait(120) and j.status == "done", j.progress().error
    assert j.progress().snapshots[-1].metric > 0.99
    yield j
    manager.shutdown()


def test_split_words_keeps_specials_and_elisions():
    assert split_words("A c B <sep> b") == ["a", "c", "b", "<sep>", "b"]
    assert split_words("l'arbre est vert.") == ["l'", "arbre", "est", "vert", "."]


def test_answer_reverse_matches_the_reversed_input(job):
    letters = ["a", "f", "c", "p", "b", "k"]
    got = answer(job, " ".join(letters))
    assert got.correct == tuple(reversed(letters))  # the right answer, derived here independently
    assert got.model == got.correct and all(got.right)
    assert got.prompt == ("<bos>", *letters, "<sep>")
    assert answer(job, "afcpbk").model == got.model  # letters typed without spaces


@pytest.mark.parametrize(
    "text, message",
    [
        ("a b c", "exactly 6 letters"),
        ("a b c d e z", "not understood: z"),
        ("", "type something"),
        ("<script> a b c d e", "not understood"),
    ],
)
def test_answer_refuses_input_the_task_cannot_read(job, text, message):
    with pytest.raises(ValueError, match=message):
        answer(job, text)


def test_checkpoint_zip_loads_back_to_the_same_model(job, tmp_path):
    data = checkpoint_zip(job, "reverse-live")
    with zipfile.ZipFile(__import__("io").BytesIO(data)) as zf:
        assert sorted(zf.namelist()) == ["reverse-live.json", "reverse-live.md", "reverse-live.safetensors"]
        zf.extractall(tmp_path)
    model, vocab, document = load_checkpoint(tmp_path, "reverse-live")
    assert vocab == job.task.vocab and document["metadata"]["steps"] == 250
    x = job.task.sample(16, torch.Generator().manual_seed(9)).inputs
    with torch.no_grad():
        torch.testing.assert_close(model(x), job.model(x), rtol=0, atol=0)


def test_runtime_registration_is_per_session(job):
    model = runtime_model(job, "trained-reverse-abc123")
    registry.register_runtime("trained-reverse-abc123", model, "session-A")
    try:
        ids_a = [s.id for s in engine.list_models(session_id="session-A")]
        assert ids_a[0] == "trained-reverse-abc123" and "minilm" in ids_a
        assert "trained-reverse-abc123" not in [s.id for s in engine.list_models(session_id="session-B")]
        assert "trained-reverse-abc123" not in [s.id for s in engine.list_models()]
        assert engine.load("trained-reverse-abc123", session_id="session-A") is model
        with pytest.raises(ModelUnavailableError, match="another session"):
            engine.load("trained-reverse-abc123", session_id="session-B")
        with pytest.raises(ValueError, match="another session"):
            registry.register_runtime("trained-reverse-abc123", model, "session-B")
        with pytest.raises(ValueError, match="catalog"):
            registry.register_runtime("minilm", model, "session-A")
        # Explore's path: engine.trace on the registered model equals tracing the job's own network
        tr = engine.trace(model, "a f c p b k <sep> k b p c f a")
        ids = [1, *job.task.vocab.encode("a f c p b k <sep> k b p c f a".split())]
        direct = trace_own(job.model, ids, job.task.vocab.tokens_for_display(ids), model_id="x", causal=True)
        assert tr.tokens.strings == direct.tokens.strings and tr.causal
        np.testing.assert_allclose(tr.pattern(1), direct.pattern(1), atol=1e-6)
        assert not model.module.training and not any(p.requires_grad for p in model.module.parameters())
        # a second registration by the same session replaces the first
        registry.register_runtime("trained-reverse-def456", model, "session-A")
        assert [s.id for s in engine.list_models(session_id="session-A")].count("trained-reverse-abc123") == 0
    finally:
        registry.unregister_runtime("session-A")
    assert registry.runtime_model("trained-reverse-def456", "session-A") is None


def test_registration_from_many_threads(job):
    model = runtime_model(job, "unused")
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for k in range(20):
                registry.register_runtime(f"t-{i}-{k}", model, f"s-{i}")
                assert registry.runtime_model(f"t-{i}-{k}", f"s-{i}") is model
                engine.list_models(session_id=f"s-{i}")
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        for i in range(8):  # one model per session: the last one registered
            assert [s.id for s in engine.list_models(session_id=f"s-{i}")][0] == f"t-{i}-19"
    finally:
        for i in range(8):
            registry.unregister_runtime(f"s-{i}")
