"""The Examples picker (Explore, Step by step, Heads): it fills the shared text box, opens the head an
example names, shows a closed-vocabulary model's words, and the unknown-words notice points to it.
The stories and translator examples are checked against the engine's own tokenization: no ``<unk>``."""

from __future__ import annotations

import pytest

import engine
from app.controls.examples import EXAMPLES, examples_for
from app.state import DEFAULT_TEXT
from apptest_helpers import assert_clean, messages, open_page


@pytest.mark.parametrize("model_id", ["tiny-gpt-stories", "tiny-translator"])
def test_word_level_examples_have_no_unknown_words(model_id):
    model = engine.load(model_id)
    for example in EXAMPLES[model_id]:
        tr = engine.trace(model, example.text, max_tokens=128)
        tokens = tr.source.strings if model_id == "tiny-translator" else tr.tokens.strings
        assert "<unk>" not in tokens, (example.text, tokens)
        assert not any("<unk>" in n for n in tr.notices), tr.notices


@pytest.mark.parametrize("model_id", ["minilm", "tiny-gpt-stories"])
def test_named_heads_exist(model_id):
    tr = (
        engine.trace(engine.load(model_id), "a b", max_tokens=16)
        if model_id == "minilm"
        else engine.trace(engine.load(model_id), "lily smiled .", max_tokens=16)
    )
    for example in EXAMPLES[model_id]:
        if example.layer is not None:
            assert 0 <= example.layer < tr.n_layers and 0 <= example.head < tr.n_heads, example


def test_a_trained_model_gets_only_examples_it_reads():
    vocab = tuple(engine.load("tiny-gpt-stories").tokenizer.tokens[5:])
    name, examples = examples_for("my-trained-model", "decoder", vocab)
    assert name == "own" and examples
    assert {e.text for e in examples} == {e.text for e in EXAMPLES["tiny-gpt-stories"]}
    assert all(e.layer is None for e in examples)  # heads were measured on another model


@pytest.mark.parametrize("page", ["explore", "heads", "step_by_step"])
def test_picking_an_example_fills_the_text_and_opens_its_head(page):
    at = open_page(page)
    assert_clean(at)
    example = next(e for e in EXAMPLES["minilm"] if e.layer is not None and e.text != DEFAULT_TEXT)
    index = EXAMPLES["minilm"].index(example)
    at.selectbox(key="examples_minilm").set_value(index).run()
    assert_clean(at)
    assert at.session_state["text"] == example.text
    assert (at.session_state["layer"], at.session_state["head"]) == (example.layer, example.head)
    assert at.selectbox(key="examples_minilm").value is None  # ready for the next pick
    assert any(f"layer {example.layer} head {example.head}" in m for m in messages(at.caption))


def test_stories_model_shows_its_words_and_the_notice_points_to_the_examples():
    at = open_page("explore", model="tiny-gpt-stories")
    assert_clean(at)
    vocab = [t for t in engine.load("tiny-gpt-stories").tokenizer.tokens[5:]]
    expander = next(e for e in at.expander if e.label.startswith("Words this model knows"))
    assert f"({len(vocab)})" in expander.label
    listed = " ".join(str(m.value) for m in expander.markdown)
    assert all(f"`{w}`" in listed for w in vocab)
    notices = [m for m in messages(at.info) if "<unk>" in m]  # the default sentence has unknown words
    assert notices and "Examples" in notices[0]
    story = EXAMPLES["tiny-gpt-stories"][0]
    at.selectbox(key="examples_tiny-gpt-stories").set_value(0).run()
    assert_clean(at)
    assert at.session_state["text"] == story.text
    assert not [m for m in messages(at.info) if "<unk>" in m]
