"""A trace's captures come back from the model's device in one copy (engine.capture.transfer).

References: each tensor copied on its own, ``t.detach().float().cpu().numpy()`` (what the engine did before, one
device-to-host copy per tensor), and a count of the copies a trace makes. On the CPU the one-buffer path runs
exactly as on a GPU but for the pinned, non-blocking copy at its end, which the CUDA-only test checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.capture import transfer
from engine.capture.hf import LayerRecord
from tests.hf_helpers import tiny_llama

SENTENCE = "Lily found a red ball . She gave it to Tom ."


def one_by_one(tensors) -> list[np.ndarray]:
    """The per-tensor path: one host copy per tensor."""
    return [t.detach().float().cpu().numpy().copy() for t in tensors]


def captures(device: str = "cpu") -> list[torch.Tensor]:
    """Tensors as captures come: every float dtype, strided views (a permuted head layout, a batch row, a slice),
    a scalar, an empty one."""
    g = torch.Generator().manual_seed(0)
    base = torch.randn(2, 7, 3, 5, generator=g, dtype=torch.float64).to(device)
    return [
        base[0].permute(1, 0, 2),  # [1, T, H, d] → [H, T, d]: not contiguous
        base.half()[:, :, 1],
        base.bfloat16()[1, 2:5],
        base.float().transpose(0, 3),
        base,
        torch.tensor(2.5, dtype=torch.float64, device=device),
        torch.empty(0, 4, device=device),
        torch.arange(6, device=device).reshape(2, 3),
    ]


def assert_same(got: list[np.ndarray], tensors: list[torch.Tensor]) -> None:
    want = one_by_one(tensors)
    assert len(got) == len(want)
    for a, b, t in zip(got, want, tensors):
        assert a.dtype == np.float32 and a.shape == tuple(t.shape) and a.flags.c_contiguous
        np.testing.assert_array_equal(a, b)


def test_one_buffer_gives_every_tensor_exactly_as_copied_one_by_one():
    tensors = captures()
    got = transfer.copy_to_host(tensors)
    assert_same(got, tensors)
    tensors[0].zero_()  # the copies share nothing with the captured tensors
    assert np.any(got[0] != 0)
    assert transfer.copy_to_host([]) == []


@dataclass
class Holder:
    record: LayerRecord
    note: str


def counting(monkeypatch, copy=transfer.copy_to_host) -> list[int]:
    """Make every host copy go through ``copy``, counted: the number of tensors of each copy, in order."""
    calls: list[int] = []

    def counted(tensors):
        calls.append(len(tensors))
        return copy(tensors)

    monkeypatch.setattr(transfer, "copy_to_host", counted)
    return calls


def test_to_host_keeps_the_structure_and_one_array_per_tensor(monkeypatch):
    q, k, v, shared = captures()[:4]
    record = LayerRecord(query=q, key=k, value=v, scaling=0.5, sliding_window=None, softcap=None, masked=True)
    tree = {"layers": [record, record], "pair": (shared, shared, None), "holder": Holder(record, "x"), "n": 3}
    calls = counting(monkeypatch)
    host = transfer.to_host(tree)
    assert calls == [4], "one copy for the four distinct tensors"
    assert host["n"] == 3 and host["pair"][2] is None and host["holder"].note == "x"
    assert host["pair"][0] is host["pair"][1], "one tensor met twice is one array"
    first = host["layers"][0]
    assert isinstance(first, LayerRecord) and (first.scaling, first.masked) == (0.5, True)
    assert_same([first.query, first.key, first.value, host["pair"][0]], [q, k, v, shared])
    assert isinstance(record.query, torch.Tensor), "the record itself is left as it was"


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory) -> Path:
    """A tiny random Llama with grouped-query attention (4 query heads, 2 key/value heads), saved locally."""
    import transformers as tf

    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    config = tiny_llama(len(tokenizer), tokenizer.eos_token_id, max_position_embeddings=128)
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("transfer_llama") / "llama"
    tf.AutoModelForCausalLM.from_config(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def traced(model, monkeypatch, copy) -> tuple[object, list[int]]:
    """``engine.trace`` of :data:`SENTENCE` with ``copy`` as the host copy; the sizes of the copies it made."""
    with monkeypatch.context() as m:
        calls = counting(m, copy)
        return engine.trace(model, SENTENCE), calls


FIELDS = ("queries", "keys", "values", "value_out_norms")


@pytest.mark.parametrize("which", ["tiny-gpt-stories", "tiny-random-gpt2", "llama"])
def test_a_trace_makes_one_copy_and_equals_the_per_tensor_path(which, llama_folder, monkeypatch):
    model = engine.load(str(llama_folder) if which == "llama" else which, device="cpu")
    packed, calls = traced(model, monkeypatch, transfer.copy_to_host)
    layers = packed.n_layers
    # Q, K, V and the norms of every layer (and the position vectors where the model adds them): one copy
    assert len(calls) == 1 and calls[0] == 4 * layers + (packed.pos_encoding is not None), calls
    alone, calls_alone = traced(model, monkeypatch, one_by_one)
    assert calls_alone == calls
    for name in FIELDS:
        for layer in range(layers):
            np.testing.assert_array_equal(getattr(packed, name)[layer], getattr(alone, name)[layer], err_msg=name)
    if packed.pos_encoding is not None:
        np.testing.assert_array_equal(packed.pos_encoding, alone.pos_encoding)
    if which == "llama":
        assert packed.kv_heads == 2 and packed.n_heads == 4  # keys and values repeated per query head on the host
    assert packed.has_contributions and packed.device == "cpu"


def test_a_batch_pass_makes_one_copy_for_every_text(monkeypatch):
    model = engine.load("tiny-random-gpt2", device="cpu")
    texts = [SENTENCE, "The cat sat .", "A dog ran to the red ball and sat down by it ."]
    with monkeypatch.context() as m:
        calls = counting(m)
        batch = model.adapter.trace_batch(model, texts, causal=None, max_tokens=[64] * 3)
    assert len(calls) == 1, "the three texts are one pass: one copy"
    for text, tr in zip(texts, batch):
        alone = engine.trace(model, text)
        for name in FIELDS:
            for layer in range(tr.n_layers):
                np.testing.assert_allclose(getattr(tr, name)[layer], getattr(alone, name)[layer], atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_on_cuda_one_pinned_copy_gives_the_cpu_numbers():
    tensors = captures("cuda")
    got = transfer.copy_to_host(tensors)
    assert_same(got, tensors)
    assert all(torch.from_numpy(a).is_pinned() for a in got if a.size)
