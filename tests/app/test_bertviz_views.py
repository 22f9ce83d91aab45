"""The bertviz views page through AppTest: an iframe with an offline document per view and family.

AppTest runs no JavaScript: it checks the documents the page sends (tests/e2e draws them).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from apptest_helpers import assert_clean, messages, open_page  # noqa: E402
from engine.views import bertviz_html as bv
from engine.views.offline_js import SHIM_MARKER

PAGE = "bertviz_views"


def iframes(at: AppTest) -> list:
    return [el.proto for el in at.main.get("iframe")]  # the sidebar has the share box's copy button


def only_document(at: AppTest) -> str:
    frames = iframes(at)
    assert len(frames) == 1, f"{len(frames)} iframes"
    assert frames[0].srcdoc, "the iframe carries its document inline (srcdoc), not a URL"
    assert not re.search(r"(src|href)\s*=\s*[\"']?https?:", frames[0].srcdoc, re.I), "loads from the network"
    assert SHIM_MARKER in frames[0].srcdoc
    return frames[0].srcdoc


def open_with(model: str, **state) -> AppTest:
    """The page with ``model`` picked in its selectbox (Explore, run first, keeps only text models)."""
    at = open_page(PAGE, **state)
    if at.selectbox(key="model").value != model:
        at.selectbox(key="model").set_value(model).run()
    assert at.selectbox(key="model").value == model
    return at


def show(at: AppTest, view: str) -> AppTest:
    at.radio(key="bertviz_view").set_value(view).run()
    assert_clean(at)
    assert not at.error, messages(at.error)
    return at


@pytest.mark.parametrize(
    ("model", "left"),
    [
        ("minilm", "[CLS]"),
        ("tiny-gpt-stories", "<bos>"),
        ("tiny-random-gpt2", "The"),
        ("tiny-translator", "the"),
    ],
)
def test_every_view_for_text_families(model: str, left: str):
    at = open_with(model, text="The small cat sees the red apple.")
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert at.radio(key="bertviz_view").value == "head"
    for view in ("head", "model", "neuron"):
        show(at, view)
        params = bv.read_payload(only_document(at))
        first = params["attention"]
        first = first[0] if isinstance(first, list) else next(iter(first.values()))
        assert first["left_text"][0].strip().lower() == left.lower(), first["left_text"]
        assert at.main.get("iframe")[0].proto.alt == f"bertviz {view} view"
    if model == "tiny-translator":
        names = [p["name"] for p in bv.read_payload(only_document(show(at, "head")))["attention"]]
        assert names == ["Encoder", "Decoder", "Cross"]


def test_vit_digits():
    at = open_with("tiny-vit-digits")
    assert_clean(at)
    assert at.number_input(key="bertviz_digit").value == 0
    show(at, "neuron")
    part = bv.read_payload(only_document(at))["attention"]["all"]
    assert part["left_text"][:3] == ["[CLS]", "p0", "p1"] and len(part["left_text"]) == 17
    at.number_input(key="bertviz_digit").set_value(7).run()
    assert_clean(at)
    assert bv.read_payload(only_document(at))["attention"]["all"]["attn"] != part["attn"]
    assert any("Prediction" in c for c in messages(at.caption))


def test_rnn_has_a_head_view_and_says_why_no_neuron_view():
    at = open_with("bahdanau-translator", text="the small cat")
    assert_clean(at)
    assert any("no layers, heads, queries or keys" in m for m in messages(at.info))
    attn = np.array(bv.read_payload(only_document(at))["attention"][0]["attn"])
    assert attn.shape[:2] == (1, 1)
    show(at, "neuron")
    assert not iframes(at)
    assert any("needs queries and keys" in m for m in messages(at.info))


def test_long_input_gives_a_message_and_a_link_not_a_heavy_iframe():
    at = open_with("minilm", text="word " * 400, max_tokens=128)
    assert_clean(at)
    for view in ("head", "model", "neuron"):
        show(at, view)
        assert not iframes(at), view
        warnings = messages(at.warning)
        assert any("128 tokens" in w and "own views" in w for w in warnings), warnings
        assert at.get("page_link"), "a link to the Explore page"


def test_model_view_cap_sits_between_head_and_model_limits():
    """Just above the model view's limit: the head view still draws, the model view says it is too big."""
    n = bv.MAX_TOKENS["model"] + 4
    at = open_with("minilm", text="word " * 200, max_tokens=n)
    assert_clean(at)
    show(at, "head")
    assert len(bv.read_payload(only_document(at))["attention"][0]["left_text"]) == n
    show(at, "model")
    assert not iframes(at)
    assert any(f"{n} tokens" in w for w in messages(at.warning))


def test_empty_text_is_a_warning():
    at = open_with("minilm", text="   ")
    assert_clean(at)
    assert any("empty" in w.lower() for w in messages(at.warning))
    assert not iframes(at)


def test_the_captioner_is_not_offered():
    """Its attention is over an image grid, one map per written word: nothing bertviz draws."""
    import engine

    at = open_with("tiny-vit-digits")
    offered = set(at.selectbox(key="model").options)
    captioners = {s.label for s in engine.list_models() if s.family == "captioner"}
    assert captioners and not captioners & offered
    assert any("ViT" in o or "vit" in o for o in offered)
