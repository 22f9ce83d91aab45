"""The lesson's captioning step (issue 22, 5): "where will it look for 'circle'?" is answered from the real model.

The region the reveal names is recomputed here from an engine trace of the same held-out scene (the peak cell of
the word's α map, and the third of the picture its row and column fall in, from the cell centres), and the
explanation's premise is checked: on this scene the word's peak lies on its object's true box.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
from app.views.captions.map_data import REGIONS
from app.views.lessons.lesson_file import Look
from app.views.lessons.plan import STEPS
from apptest_helpers import assert_clean, decode, figures, messages, open_page, title
from engine.corpora.scenes import make_scenes
from engine.training.caption_metrics import cells_in_box
from engine.training.recipes.captioner import HELD_OUT_SEED

K, STEP = next((k, s) for k, s in enumerate(STEPS, start=1) if isinstance(s.check, Look))
CHECK = STEP.check


@pytest.fixture(scope="module")
def truth():
    """(scene, trace, index of the word, peak cell (row, column), the peak's region) computed without the app."""
    scene = make_scenes(CHECK.scene + 1, seed=HELD_OUT_SEED)[CHECK.scene]
    model = engine.load(CHECK.model)
    trace = model.adapter.trace(model, scene.image)
    t = list(trace.words.strings).index(CHECK.word)
    grid = trace.alphas.shape[-1]
    r, c = np.unravel_index(int(np.argmax(trace.alphas[t])), (grid, grid))
    third = [min(int(3 * (i + 0.5) / grid), 2) for i in (r, c)]
    return scene, trace, t, (int(r), int(c)), 3 * third[0] + third[1]


def test_the_explanations_premise_holds_for_this_scene(truth):
    scene, trace, t, (r, c), _region = truth
    noun = next(obj for obj in scene.objects if obj.shape == CHECK.word)
    assert cells_in_box(noun.box, trace.alphas.shape[-1], scene.image.shape[0])[r * trace.alphas.shape[-1] + c], (
        "the word's attention peak is no longer on its object: choose another scene for the lesson"
    )


@pytest.mark.parametrize("right", [True, False])
def test_pick_a_region_and_the_real_map_is_revealed(truth, right):
    _scene, trace, t, (r, c), region = truth
    at = open_page("lessons", lesson_step=K)
    assert_clean(at)
    assert [h.value for h in at.header] == [f"{K}. {STEP.title}"]
    key = f"lesson_region_{STEP.id}"
    assert not [f for f in figures(at) if title(f).startswith("Where it looks")]  # nothing revealed yet
    picked = region if right else (region + 4) % len(REGIONS)
    at.pills(key=key).set_value(picked).run()
    assert_clean(at)
    text = " ".join(messages(at.markdown))
    assert f"You picked **{REGIONS[picked]}**" in text
    assert f"row {r}, column {c}" in text and f"in the **{REGIONS[region]}**" in text
    assert ("Well predicted" in text) == right
    reveal = next(f for f in figures(at) if title(f) == f"Where it looks for “{CHECK.word}”")
    shown = decode(next(d for d in reveal["data"] if d.get("name") == "attention")["z"])
    np.testing.assert_allclose(shown, trace.alphas[t], atol=1e-6)
    assert any(trace.caption in m for m in messages(at.caption))
    assert any(f"{1 if right else 0} right" in str(p.proto.text) for p in at.get("progress"))
    at.button(key=f"lesson_again_{STEP.id}").click().run()  # try again: the region is asked for afresh
    assert at.pills(key=key).value is None
