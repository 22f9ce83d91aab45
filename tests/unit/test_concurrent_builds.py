"""Our own models built while a Hugging Face model loads in another thread get their seeded weights.

Two things are process-wide while a model is built: torch's global random generator (a seeded build sets it),
and, during transformers' ``from_pretrained``, the weight initialisers (replaced by no-ops while it builds). A
Train live job started while another session loaded a captioner would otherwise train from other weights
than its seed gives (or uninitialised memory). Every build holds ``engine.builds.BUILD_LOCK``.
"""

from __future__ import annotations

import threading

import torch

import engine
from engine.builds import BUILD_LOCK
from engine.training import induction
from engine.training.loop import make_model
from engine.training.tasks import make_task
from tests.caption_hf_helpers import save_tiny_ved


def _same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_seeded_builds_next_to_hugging_face_loads_give_the_seed_s_weights(tmp_path):
    folder = str(save_tiny_ved(tmp_path / "ved"))
    task = make_task("copy")
    alone = make_model(task, seed=3)
    alone_induction = induction.make_model(seed=5)
    stop, wrong, errors = threading.Event(), [], []

    def load() -> None:
        try:
            while not stop.is_set():
                engine.load(folder)
        except Exception as err:  # noqa: BLE001 — reported below
            errors.append(repr(err))

    def build() -> None:
        try:
            for _ in range(40):
                if not _same(make_model(task, seed=3), alone):
                    wrong.append("make_model")
                if not _same(induction.make_model(seed=5), alone_induction):
                    wrong.append("induction")
        except Exception as err:  # noqa: BLE001 — reported below
            errors.append(repr(err))

    loaders = [threading.Thread(target=load) for _ in range(2)]
    builders = [threading.Thread(target=build) for _ in range(2)]
    for thread in loaders + builders:
        thread.start()
    for thread in builders:
        thread.join(300)
    stop.set()
    for thread in loaders:
        thread.join(120)
    assert not errors, errors
    assert not wrong, f"{len(wrong)} builds of 160 came out with other weights than their seed's: {wrong[:5]}"
    assert not BUILD_LOCK.locked()
