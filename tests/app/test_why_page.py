"""The "Which heads carry the answer?" page through AppTest: its grids are ``engine.analysis.patching`` computed
here directly (itself checked against hand-written hooks in tests/unit/test_patching.py), and bad prompts get the
engine's message, not a traceback."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from apptest_helpers import assert_clean, figures, open_page, title, z  # noqa: E402
from engine.analysis.patching import EXAMPLES, patch_heads, patch_residual


@pytest.fixture(scope="module")
def page():
    return open_page("why")


def chart(at, text: str) -> dict:
    (found,) = [f for f in figures(at) if text in title(f)]
    return found


@pytest.mark.parametrize("model_id", ["tiny-gpt-stories", "induction-2l-attn-only"])
def test_the_grids_are_the_engines_patching_of_the_built_in_example(page, model_id):
    page.text_input(key="why_clean").input("something else").run()
    page.selectbox(key="why_model").set_value(model_id).run()  # a model switch brings its own example
    if page.text_input(key="why_clean").value != EXAMPLES[model_id].clean:  # the same model: the button does
        page.button[0].click().run()
    assert_clean(page)
    ex = EXAMPLES[model_id]
    model = engine.load(model_id)
    heads = patch_heads(model, ex.clean, ex.corrupt, ex.answer, ex.wrong)
    residual = patch_residual(model, ex.clean, ex.corrupt, ex.answer, ex.wrong)
    np.testing.assert_allclose(z(chart(page, "Each head")), heads, atol=1e-9)
    np.testing.assert_allclose(z(chart(page, "residual stream")), residual, atol=1e-9)
    (caption,) = [c.value for c in page.caption if "largest" in c.value]
    layer, head = ex.heads[0]
    assert f"head {layer}.{head}" in caption and ex.notice in caption


def test_prompts_of_different_lengths_get_the_engines_message(page):
    page.selectbox(key="why_model").set_value("tiny-gpt-stories").run()
    page.text_input(key="why_corrupt").input("He gave it to").run()
    assert not page.exception
    said = [w.value for w in page.warning]
    assert any("same number of tokens" in w or "length" in w for w in said), said
    assert not figures(page)
