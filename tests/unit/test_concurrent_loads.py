"""Two models loading at the same moment in one server process each come out whole.

transformers 5.23's ``from_pretrained`` patches process-wide state while it builds a model (the meta device for
the weights it will read, no-op weight initialisers): a model built in another thread at that moment came out
with meta tensors ("Cannot copy out of meta tensor", seen in CI when the server's background load of MiniLM met a
page loading a captioner). Every engine build of a Hugging Face model holds ``engine.builds.BUILD_LOCK``.
"""

from __future__ import annotations

import threading

import numpy as np

import engine
from engine.builds import BUILD_LOCK
from tests.caption_hf_helpers import save_tiny_ved


def test_minilm_and_a_captioner_loaded_at_once_both_load_whole(tmp_path):
    folder = str(save_tiny_ved(tmp_path / "ved"))
    alone = engine.load(folder)
    errors, loaded = [], {}

    def load(model_id: str) -> None:
        try:
            for _ in range(3):
                loaded[model_id] = engine.load(model_id)
        except Exception as err:  # noqa: BLE001 — the test reports whatever a load raised
            errors.append(f"{model_id}: {err!r}")

    threads = [threading.Thread(target=load, args=(model_id,)) for model_id in ("minilm", folder)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    for model in loaded.values():
        assert not any(p.is_meta for p in model.module.parameters())
    for (name, a), (_, b) in zip(alone.module.state_dict().items(), loaded[folder].module.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)  # the same weights as loaded alone
    assert not BUILD_LOCK.locked()
