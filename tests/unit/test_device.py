"""Where the forward pass runs: the GPU out-of-memory fallback, and CUDA against CPU.

The fallback is tested on any machine: a ``Model`` on a non-CPU device (``meta`` stands in for the
GPU) whose shared module raises ``torch.OutOfMemoryError`` must retry on a CPU copy built by ``reload``, say so in the trace,
and give the same numbers as a plain CPU load. The CUDA comparisons run only where a GPU is present
(they are skipped in CI, which has none); each model family is loaded on both devices from the same
files and traced on the same input.
"""

from __future__ import annotations

import copy
import dataclasses
import threading

import numpy as np
import pytest
import torch
from torch import nn

import engine
from engine.records import ModelUnavailableError
from engine.registry import MINILM
from engine.samples import digit
from engine.traces.attention import AttentionTrace
from engine.training.loop import TrainConfig, make_model, train
from engine.training.tasks import make_task

STORIES = "tiny-gpt-stories"
SENTENCE = "Lily found a red ball . She gave it to Tom ."
CPU = torch.device("cpu")
#: stands in for a GPU in the fallback tests: not the CPU, and tensors can be made on it without CUDA
ACCELERATOR = torch.device("meta")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")


def out_of_memory(*args, **kwargs):
    raise torch.OutOfMemoryError("CUDA out of memory (simulated)")


def failing_copy(module: nn.Module) -> nn.Module:
    """A copy of ``module`` whose every forward pass fails as a full GPU would."""
    clone = copy.deepcopy(module)
    for sub in clone.modules():
        sub.forward = out_of_memory
    return clone


def load_on(model_id: str, device: torch.device):
    """A catalog model loaded on ``device`` (without it, ``engine.load`` picks CUDA when present)."""
    return engine.load(model_id, device=device.type)


def assert_same_attention(a, b, atol):
    assert a.tokens.strings == b.tokens.strings
    for layer in range(a.n_layers):
        for name in ("queries", "keys", "values"):
            np.testing.assert_allclose(getattr(a, name)[layer], getattr(b, name)[layer], atol=atol)
        for head in range(a.n_heads):
            np.testing.assert_allclose(a.pattern(layer, head), b.pattern(layer, head), atol=atol)


# ------------------------------------------------------------------------------ OOM fallback (any machine)


INPUTS = {
    MINILM.id: SENTENCE,
    STORIES: SENTENCE,
    "tiny-translator": "the red car is small",
    "bahdanau-translator": "the red car is small",
    "tiny-vit-digits": digit(0)[0],
}


def comparable(trace) -> dict[str, np.ndarray]:
    """The numbers of any trace type, by name."""
    if isinstance(trace, AttentionTrace):
        return {f"{name}{i}": a for name in ("queries", "keys", "values") for i, a in enumerate(getattr(trace, name))}
    if hasattr(trace, "cross"):
        return {
            f"{block}.{k}": v
            for block in ("encoder", "decoder", "cross")
            for k, v in comparable(getattr(trace, block)).items()
        }
    if hasattr(trace, "alignment"):
        return {"alignment": trace.alignment, "contexts": trace.contexts}
    return {"probs": trace.probs, **comparable(trace.attention)}


def device_of(trace) -> str:
    for inner in (trace, getattr(trace, "attention", None), getattr(trace, "decoder", None)):
        if isinstance(inner, AttentionTrace):
            return inner.device
    return "n/a"


@pytest.mark.parametrize("model_id", list(INPUTS))
def test_gpu_out_of_memory_retries_on_a_cpu_copy(model_id):
    reference = load_on(model_id, CPU)
    expected = engine.trace(reference, INPUTS[model_id])
    failing = failing_copy(reference.module)
    rebuilt: list[torch.device] = []

    def reload(device):
        rebuilt.append(device)
        return reference.reload(device)

    model = dataclasses.replace(
        reference, module=failing, device=ACCELERATOR, reload=reload, lock=threading.Lock(), _cpu_module=None
    )
    got = engine.trace(model, INPUTS[model_id])
    assert rebuilt == [CPU], "the CPU copy is built once, on the CPU"
    assert any("ran out of memory" in n for n in got.notices), got.notices
    assert not any("ran out of memory" in n for n in expected.notices)
    assert device_of(got) in ("cpu", "n/a")
    want, have = comparable(expected), comparable(got)
    assert want.keys() == have.keys() and want
    for name in want:
        np.testing.assert_allclose(have[name], want[name], atol=1e-6, err_msg=name)

    engine.trace(model, INPUTS[model_id])
    assert rebuilt == [CPU], "the CPU copy is kept for the next input"
    assert model.module is failing, "the shared module is never replaced"


def test_out_of_memory_on_the_cpu_is_not_hidden():
    reference = load_on(STORIES, CPU)
    model = dataclasses.replace(
        reference, module=failing_copy(reference.module), lock=threading.Lock(), _cpu_module=None
    )
    with pytest.raises(torch.OutOfMemoryError):
        engine.trace(model, SENTENCE)


def test_a_device_that_cannot_be_used_is_a_readable_error():
    with pytest.raises(ModelUnavailableError, match="device must be 'cpu' or 'cuda'"):
        engine.load(STORIES, device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ModelUnavailableError, match="no CUDA GPU"):
            engine.load(MINILM.id, device="cuda")
    assert engine.load(STORIES, device="cpu").device == CPU


# ------------------------------------------------------------------------------ CUDA against CPU (GPU only)


@needs_cuda
@pytest.mark.parametrize("model_id", [MINILM.id, STORIES])
def test_text_trace_on_cuda_matches_cpu(model_id):
    cpu, gpu = load_on(model_id, CPU), load_on(model_id, torch.device("cuda"))
    a, b = engine.trace(cpu, SENTENCE), engine.trace(gpu, SENTENCE)
    assert (a.device, b.device) == ("cpu", "cuda")
    assert_same_attention(a, b, atol=1e-4)


@needs_cuda
def test_translator_and_bahdanau_on_cuda_match_cpu():
    source = "the red car is small"
    for model_id in ("tiny-translator", "bahdanau-translator"):
        a = engine.trace(load_on(model_id, CPU), source)
        b = engine.trace(load_on(model_id, torch.device("cuda")), source)
        assert a.output_text == b.output_text
        if model_id == "tiny-translator":
            for block in ("encoder", "decoder", "cross"):
                assert_same_attention(getattr(a, block), getattr(b, block), atol=1e-4)
        else:
            np.testing.assert_allclose(a.alignment, b.alignment, atol=1e-4)


@needs_cuda
def test_vit_on_cuda_matches_cpu():
    image = INPUTS["tiny-vit-digits"]
    a = engine.trace(load_on("tiny-vit-digits", CPU), image)
    b = engine.trace(load_on("tiny-vit-digits", torch.device("cuda")), image)
    np.testing.assert_allclose(a.probs, b.probs, atol=1e-4)
    assert_same_attention(a.attention, b.attention, atol=1e-4)


@needs_cuda
def test_training_runs_on_cuda():
    task = make_task("reverse", length=4)
    model = make_model(task, n_layers=1, n_heads=2, d_model=32)
    snaps = list(train(model, task, TrainConfig(steps=20, snapshot_every=10, device="cuda", eval_batch_size=16)))
    assert snaps and all(s.device == "cuda" for s in snaps)
    assert snaps[-1].loss < snaps[0].loss
