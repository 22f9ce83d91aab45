"""Fine-tuning our masked-LM encoder on the colour task: it learns, attention moves, the shared model does not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import engine
from engine.records import EngineError
from engine.training.finetune import ColourTask, FinetuneProgress, FinetuneResult, finetune


@pytest.fixture(scope="module")
def model():
    return engine.load("tiny-bert-stories")


def test_colour_task_labels_are_the_colour_word(model):
    task = ColourTask.build(model.tokenizer, model.max_positions)
    for row, n, label, pos in zip(task.ids[:50], task.lengths[:50], task.labels[:50], task.colour_pos[:50]):
        words = model.tokenizer.decode(row[: int(n)].tolist())
        assert words[int(pos)] == task.colours[int(label)]
        assert sum(w in task.colours for w in words) == 1


def test_finetuning_learns_and_moves_attention_to_the_colour(model):
    before = {k: v.clone() for k, v in model.module.state_dict().items()}
    out = list(finetune(model.module, model.tokenizer, steps=80, every=40))
    progress, result = out[:-1], out[-1]
    assert [p.step for p in progress] == [40, 80] and all(isinstance(p, FinetuneProgress) for p in progress)
    assert isinstance(result, FinetuneResult)
    assert result.accuracy_after > result.chance + 0.5 > result.accuracy_before
    best = np.unravel_index(np.argmax(result.colour_after), result.colour_after.shape)
    assert result.colour_after[best] > result.colour_before[best] + 0.3  # some head now looks at the colour
    assert result.change.shape == (3, 4) and np.all((result.change >= 0) & (result.change <= 1))
    np.testing.assert_allclose(result.before_patterns.sum(-1), 1.0, atol=1e-5)
    assert all(torch.equal(v, model.module.state_dict()[k]) for k, v in before.items())  # shared model untouched


@pytest.mark.parametrize("bad", [dict(steps=0), dict(steps=10_000), dict(lr=0.0), dict(lr=1.0)])
def test_bad_settings_are_refused(model, bad):
    with pytest.raises(EngineError):
        next(finetune(model.module, model.tokenizer, **bad))
