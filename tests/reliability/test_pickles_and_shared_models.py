"""Pickles are never run, and training never touches the models every session shares.

- A pickle that would create a file when unpickled is put where weights belong: in place of one of our
  checkpoints' ``.safetensors`` files, and as the only weights (``pytorch_model.bin``) of a Hugging Face
  folder inside an allowed model directory. Loading refuses it with a readable message, and the file it
  would have created does not exist afterwards.
- A training job (and the trained model registered for its session) leaves every shared model's weights
  bit for bit as they were.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from pathlib import Path

import pytest
import torch

import engine
from engine.policy import ServerPolicy
from engine.records import CheckpointError, EngineError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_checkpoint import save  # noqa: E402  (a tiny checkpoint of our own, as the unit tests write it)

pytestmark = pytest.mark.reliability


class Payload:
    """Unpickling this creates ``marker``: proof that a pickle was run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def write_pickle(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps({"weight": Payload(marker)}))


def test_a_pickle_in_place_of_our_weights_is_refused_and_never_run(tmp_path):
    from engine.checkpoint import load_checkpoint

    paths = save(tmp_path)
    marker = tmp_path / "ran"
    write_pickle(paths.weights, marker)
    with pytest.raises(CheckpointError, match="tiny.safetensors: not a readable safetensors file"):
        load_checkpoint(tmp_path, "tiny")
    assert not marker.exists(), "the pickle was unpickled"


def test_a_hugging_face_folder_with_only_pickled_weights_is_refused(tmp_path, folders):
    import shutil

    allowed = tmp_path / "models"
    folder = allowed / "pickled"
    shutil.copytree(folders.inside, folder)  # conftest's tiny BERT, saved with save_pretrained
    for weights in folder.glob("*.safetensors"):
        weights.unlink()
    marker = tmp_path / "ran"
    write_pickle(folder / "pytorch_model.bin", marker)
    policy = ServerPolicy(hub=False, model_dirs=(allowed.resolve(),))
    for load in (lambda: engine.load(str(folder)), lambda: engine.load(str(folder), policy=policy)):
        with pytest.raises(EngineError) as caught:
            load()
        assert "safetensors" in str(caught.value) or "weights" in str(caught.value), str(caught.value)
    assert not marker.exists(), "the pickle was unpickled"


def _digest(model) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(model.module.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _config(model) -> str:
    """A model's configuration as text (a Hugging Face config or one of our dataclass configs)."""
    cfg = getattr(model.module, "config", None) or getattr(model.module, "cfg", None)
    return repr(cfg.to_dict() if hasattr(cfg, "to_dict") else cfg)


def test_training_leaves_every_shared_model_as_it_was():
    from engine.training.export import runtime_model
    from engine.training.jobs import JobManager

    shared = {name: engine.load(name) for name in ("tiny-gpt-stories", "tiny-random-gpt2")}
    before = {name: _digest(model) for name, model in shared.items()}
    configs = {name: _config(model) for name, model in shared.items()}
    manager = JobManager(max_running=1, heartbeat_timeout=60.0)
    try:
        job = manager.submit("one-session", {"task": "reverse", "steps": 20, "n_layers": 1, "d_model": 32})
        assert job.wait(timeout=120), "the job did not finish"
        assert job.progress().finished
        trained = runtime_model(job, "trained-reverse")  # what "Open in Explore" registers for one session
        engine.trace(trained, "a b c")
    finally:
        manager.shutdown()
    after = {name: _digest(model) for name, model in shared.items()}
    assert after == before, "a shared model's weights changed"
    for name, model in shared.items():
        assert not model.module.training, f"{name} was left in training mode"
        assert _config(model) == configs[name], f"{name}'s config changed"
        assert all(not p.requires_grad for p in model.module.parameters()), f"{name} has gradients switched on"
    assert torch.is_grad_enabled()  # and nobody switched autograd off for the whole process
