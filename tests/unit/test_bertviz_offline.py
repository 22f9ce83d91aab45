"""bertviz views built from our traces: offline HTML, payloads equal to the trace, validation.

References: ``trace.pattern``/``trace.q``/``trace.k`` (themselves tested against HF eager and SDPA
elsewhere), the JS files as shipped by the installed packages, and a hand-made 3-token trace.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

import engine
from engine.records import EngineError, Tokens
from engine.traces.attention import AttentionTrace
from engine.views import bertviz_html as bv
from engine.views.bertviz_html import FIT_JS
from engine.views.offline_js import SHIM_MARKER, library_js, package_file

W_TOL = 0.5e-4 + 1e-7  # weights rounded to 4 decimals
V_TOL = 0.5e-3 + 1e-6  # q/k rounded to 3 decimals


@pytest.fixture(scope="module")
def minilm_trace():
    engine.set_threads(1)
    return engine.trace(engine.load("minilm"), "The cat sat on the mat because it was tired.")


@pytest.fixture(scope="module")
def stories_trace():
    return engine.trace(engine.load("tiny-gpt-stories"), "Lily found a red ball. She gave it to Tom.")


@pytest.fixture(scope="module")
def translator_trace():
    return engine.trace(engine.load("tiny-translator"), "the small cat sees the red apple")


@pytest.fixture(scope="module")
def vit_trace():
    from sklearn.datasets import load_digits

    return engine.trace(engine.load("tiny-vit-digits"), load_digits().images[5])


def three_token_trace() -> AttentionTrace:
    """One layer, one head, d_head 2: q = k = [[1,0],[0,1],[1,1]], scale 1 → pattern by hand."""
    q = np.array([[[1, 0], [0, 1], [1, 1]]], dtype=np.float32)
    tokens = Tokens(("a", "b", "c"), (0, 1, 2), (False,) * 3)
    return AttentionTrace("hand", "encoder", tokens, tokens, (q,), (q.copy(),), (q.copy(),), (1.0,), causal=False)


def assert_offline(document: str) -> None:
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)\s*=\s*[\"']?https?:", document, re.I), (
        "a script/link loads from the network"
    )
    assert "cdnjs" not in document.split("require.config", 1)[0], "a CDN URL outside bertviz's dead require.config"
    assert library_js("d3") in document
    assert library_js("jquery") in document
    assert SHIM_MARKER in document
    # parsed as a browser would: only the page's own tags, and the libraries intact inside <script>s
    parser = TagCollector()
    parser.feed(document)
    assert set(parser.tags) <= PAGE_TAGS, set(parser.tags) - PAGE_TAGS
    # d3, jQuery, shim, bertviz (+ the neuron view's params, + the fit-to-frame script of model/neuron views)
    assert parser.tags.count("script") in (4, 5, 6)
    if "bertviz model view" in document or "bertviz neuron view" in document:
        assert any(FIT_JS in s for s in parser.scripts), "the model and neuron views scale to their frame"
    assert any(library_js("d3") == s for s in parser.scripts)


PAGE_TAGS = {"html", "head", "meta", "title", "style", "script", "body", "div", "span", "select", "option"}


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.scripts: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)

    def handle_data(self, data) -> None:
        if self.lasttag == "script":
            self.scripts.append(data)


def test_libraries_come_from_the_installed_packages():
    d3 = package_file("mpld3", "js/d3.v5.min.js").read_text(encoding="utf-8")
    assert d3.startswith("// https://d3js.org v5.7.0")
    jq = package_file("xstatic.pkg.jquery", "data/jquery.min.js").read_text(encoding="utf-8")
    assert "jQuery v3" in jq[:200]
    assert library_js("d3") == d3 and library_js("jquery") == jq


@pytest.mark.parametrize("build", [bv.head_view_html, bv.model_view_html, bv.neuron_view_html])
def test_documents_are_offline(minilm_trace, build):
    assert_offline(build(minilm_trace))


def test_head_and_model_payload_equal_the_trace(minilm_trace):
    for build in (bv.head_view_html, bv.model_view_html):
        params = bv.read_payload(build(minilm_trace))
        (part,) = params["attention"]
        assert part["left_text"] == list(minilm_trace.tokens.strings) == part["right_text"]
        attn = np.array(part["attn"])
        assert attn.shape == (6, 12, minilm_trace.n_queries, minilm_trace.n_keys)
        for layer in range(minilm_trace.n_layers):
            np.testing.assert_allclose(attn[layer], minilm_trace.pattern(layer), atol=W_TOL, rtol=0)


def test_the_head_view_opens_on_the_apps_layer_and_head(minilm_trace):
    params = bv.read_payload(bv.head_view_html(minilm_trace, layer=3, head=5))
    assert (params["layer"], params["heads"]) == (3, [5])  # the other heads: one click on their colour square
    assert bv.read_payload(bv.head_view_html(minilm_trace, layer=3, head=99))["heads"] is None  # none such: all


def test_hand_worked_three_tokens():
    """softmax([1,0,1]), softmax([0,1,1]), softmax([1,1,2]) (q·k with scale 1)."""
    tr = three_token_trace()
    attn = np.array(bv.read_payload(bv.head_view_html(tr))["attention"][0]["attn"])[0, 0]
    e = np.exp(np.array([[1, 0, 1], [0, 1, 1], [1, 1, 2]], dtype=float))
    np.testing.assert_allclose(attn, e / e.sum(1, keepdims=True), atol=W_TOL)


def test_neuron_payload_equals_q_k_and_pattern(stories_trace):
    params = bv.read_payload(bv.neuron_view_html(stories_trace, layer=2, head=1))
    assert params["bidirectional"] is False  # causal decoder: keys after the query are hidden on hover
    assert (params["layer"], params["head"]) == (2, 1)
    part = params["attention"]["all"]
    assert part["left_text"] == list(stories_trace.tokens.strings)
    for layer in range(stories_trace.n_layers):
        np.testing.assert_allclose(np.array(part["queries"][layer]), stories_trace.q(layer), atol=V_TOL, rtol=0)
        np.testing.assert_allclose(np.array(part["keys"][layer]), stories_trace.k(layer), atol=V_TOL, rtol=0)
        attn = np.array(part["attn"][layer])
        np.testing.assert_allclose(attn, stories_trace.pattern(layer), atol=W_TOL, rtol=0)
        assert np.all(attn[:, np.triu_indices(attn.shape[1], 1)[0], np.triu_indices(attn.shape[1], 1)[1]] == 0)


def test_translator_parts_cross_has_target_left_source_right(translator_trace):
    tr = translator_trace
    head = bv.read_payload(bv.head_view_html(tr))["attention"]
    assert [p["name"] for p in head] == ["Encoder", "Decoder", "Cross"]
    cross = head[2]
    assert cross["left_text"] == list(tr.target.strings) and cross["right_text"] == list(tr.source.strings)
    for layer in range(tr.cross.n_layers):
        np.testing.assert_allclose(np.array(cross["attn"][layer]), tr.cross.pattern(layer), atol=W_TOL, rtol=0)
    neuron = bv.read_payload(bv.neuron_view_html(tr))["attention"]
    assert list(neuron) == ["encoder", "decoder", "cross"]
    np.testing.assert_allclose(np.array(neuron["cross"]["queries"][1]), tr.cross.q(1), atol=V_TOL, rtol=0)
    np.testing.assert_allclose(np.array(neuron["cross"]["keys"][1]), tr.cross.k(1), atol=V_TOL, rtol=0)
    assert neuron["cross"]["left_text"] == list(tr.target.strings)
    assert_offline(bv.neuron_view_html(tr))
    assert_offline(bv.model_view_html(tr))


def test_vit_tokens_are_cls_and_patches(vit_trace):
    part = bv.read_payload(bv.neuron_view_html(vit_trace))["attention"]["all"]
    assert part["left_text"] == ["[CLS]"] + [f"p{i}" for i in range(16)]
    np.testing.assert_allclose(np.array(part["attn"][0]), vit_trace.attention.pattern(0), atol=W_TOL, rtol=0)


def test_rnn_alignment_in_the_head_view_and_no_neuron_view():
    tr = engine.trace(engine.load("bahdanau-translator"), "the small cat")
    (part,) = bv.read_payload(bv.head_view_html(tr))["attention"]
    assert part["left_text"] == list(tr.target.strings) and part["right_text"] == list(tr.source.strings)
    np.testing.assert_allclose(np.array(part["attn"])[0, 0], tr.alignment, atol=W_TOL, rtol=0)
    with pytest.raises(EngineError, match="no queries or keys"):
        bv.neuron_view_html(tr)


def test_html_in_tokens_cannot_end_the_script():
    tokens = Tokens(("</script><b>x", "<!--", "a&b"), (0, 1, 2), (False,) * 3)
    base = three_token_trace()
    tr = AttentionTrace("hand", "encoder", tokens, tokens, base.queries, base.keys, base.values, (1.0,), causal=False)
    for build in (bv.head_view_html, bv.model_view_html, bv.neuron_view_html):
        document = build(tr)
        assert "</script><b>" not in document and "<!--" not in document
        parser = TagCollector()
        parser.feed(document)
        assert "b" not in parser.tags
        assert bv.read_payload(document)["attention"][0 if build is not bv.neuron_view_html else "all"][
            "left_text"
        ] == ["</script><b>x", "<!--", "a&b"]


def test_token_count_must_match_the_matrix():
    """bertviz's own validation: a matrix with more positions than tokens is refused, naming the tokens."""
    import torch
    from bertviz import head_view

    with pytest.raises(ValueError, match="number of tokens is 2"):
        head_view([torch.ones(1, 1, 3, 3) / 3], ["a", "b"], html_action="return")
    with pytest.raises(ValueError, match="3 query rows for 2 tokens"):
        q = np.zeros((1, 3, 2), np.float32)
        AttentionTrace(
            "x",
            "encoder",
            Tokens(("a", "b"), (0, 1), (False, False)),
            Tokens(("a", "b"), (0, 1), (False, False)),
            (q,),
            (q,),
            (q,),
            (1.0,),
            causal=False,
        )


def test_limits_refuse_big_inputs(minilm_trace):
    long = engine.trace(engine.load("minilm"), "word " * 200, max_tokens=bv.MAX_TOKENS["model"] + 8)
    assert bv.too_big(minilm_trace, "model") is None
    reason = bv.too_big(long, "model")
    assert reason and str(bv.MAX_TOKENS["model"]) in reason
    with pytest.raises(EngineError):
        bv.model_view_html(long)
    assert bv.n_cells(minilm_trace, "model") == 6 * 12 * minilm_trace.n_queries**2


def random_trace(n: int, layers: int, heads: int, d_head: int = 8) -> AttentionTrace:
    rng = np.random.default_rng(0)
    qkv = [tuple(rng.standard_normal((heads, n, d_head), dtype=np.float32) for _ in range(layers)) for _ in range(3)]
    tokens = Tokens(tuple(f"t{i}" for i in range(n)), tuple(range(n)), (False,) * n)
    return AttentionTrace("r", "encoder", tokens, tokens, *qkv, scales=(1.0,) * layers, causal=False)


def test_limits_scale_with_the_number_of_heads():
    """A 12 × 12-head model (BERT-base, GPT-2 small) stops earlier in the model view than MiniLM's 6 × 12."""
    assert bv.too_big(random_trace(48, 6, 12), "model") is None
    assert bv.too_big(random_trace(41, 12, 12), "model") is None
    assert "numbers" in bv.too_big(random_trace(42, 12, 12), "model")
    assert bv.too_big(random_trace(64, 12, 12), "head") is None
    assert "65 tokens" in bv.too_big(random_trace(65, 1, 1), "head")
