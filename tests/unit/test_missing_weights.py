"""A weights file that lacks the model's tensors is refused, with how many are missing (issue 43, item 7).

transformers fills missing weights with random numbers and only logs it; the engine refuses such a folder
(:func:`engine.families.hub.check_weights`) instead of drawing random attention under the model's name.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import engine
from engine.records import ModelUnavailableError


def _with_weights(source: Path, folder: Path, tensors: dict[str, torch.Tensor]) -> Path:
    """``source``'s config and tokenizer beside a weights file holding only ``tensors``."""
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.safetensors"))
    save_file(tensors, folder / "model.safetensors")
    return folder


def _refusal(folder: Path) -> tuple[int, int]:
    """(missing, total) read from the engine's refusal of ``folder``."""
    with pytest.raises(ModelUnavailableError) as caught:
        engine.load(str(folder), device="cpu")
    found = re.match(r"(\d+) of the (\d+) weights of '.*' are missing from its weights file", str(caught.value))
    assert found, str(caught.value)
    assert "random numbers" in str(caught.value)
    return int(found[1]), int(found[2])


def test_unrelated_tensors_are_refused_with_the_count(tiny_hf_folders, tmp_path) -> None:
    source = tiny_hf_folders["bert"]
    saved = load_file(source / "model.safetensors")  # every tensor of the tiny BERT (no tied ones)
    counted = [name for name in saved if not name.startswith("pooler.")]  # all but the pooler (it may be missing)
    assert 0 < len(counted) < len(saved)
    folder = _with_weights(source, tmp_path / "unrelated", {"foo.weight": torch.zeros(3), "bar": torch.ones(2)})
    assert _refusal(folder) == (len(counted), len(saved))


def test_a_file_missing_one_layer_is_refused_with_that_layers_count(tiny_hf_folders, tmp_path) -> None:
    source = tiny_hf_folders["bert"]
    saved = load_file(source / "model.safetensors")
    kept = {name: t for name, t in saved.items() if not name.startswith("encoder.layer.1.")}
    assert 0 < len(kept) < len(saved)
    assert _refusal(_with_weights(source, tmp_path / "one_layer", kept)) == (len(saved) - len(kept), len(saved))


def test_a_file_without_the_pooler_loads_and_keeps_its_attention(tiny_hf_folders, tmp_path) -> None:
    """The pooler is the one part a BERT-like checkpoint may lack (no page reads it): its attention is the file's."""
    source = tiny_hf_folders["bert"]
    saved = load_file(source / "model.safetensors")
    kept = {name: t for name, t in saved.items() if not name.startswith("pooler.")}
    assert len(kept) < len(saved)
    model = engine.load(str(_with_weights(source, tmp_path / "no_pooler", kept)), device="cpu")
    query = model.module.encoder.layer[0].attention.self.query.weight
    torch.testing.assert_close(query, saved["encoder.layer.0.attention.self.query.weight"], rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_a_complete_tiny_folder_still_loads(tiny_hf_folders, kind: str) -> None:
    model = engine.load(str(tiny_hf_folders[kind]), device="cpu")
    assert engine.trace(model, "the cat sat").n_layers == 2
