"""The Head finder page through AppTest: its scatter holds exactly the shipped table's metrics (read here from the
JSON file), a head's snippets are the table's top cells with the tokens at those positions marked (the positions
decoded here with the model's own tokenizer), a link restores the view, a preset opens the induction heads, and a
model without a table is measured on the long-work queue."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import engine
from apptest_helpers import ROOT, assert_clean, decode, figures, open_page, run_until, shown, title  # noqa: E402
from engine.vocab import Vocab

HEADS = ROOT / "assets" / "heads"
MARK = re.compile(r":(orange|blue|violet)-background\[\*\*(.+?)\*\*\]")


def table(model_id: str) -> dict:
    return json.loads((HEADS / f"{model_id}.json").read_text(encoding="utf-8"))


def scatter(at) -> dict:
    (fig,) = [f for f in figures(at) if title(f).startswith("Every head")]
    return fig


def tokens_of(model_id: str, text: str) -> list[str]:
    """The model's tokens of ``text`` as its tokenizer makes them (the first token included)."""
    tok = engine.load(model_id).tokenizer
    if isinstance(tok, Vocab):  # our own models: <bos> then the text's words (letters for the induction model)
        words = list(text) if model_id == "induction-2l-attn-only" else tok.decode(tok.encode_text(text))
        return ["<bos>", *words]
    return tok.convert_ids_to_tokens(tok(text)["input_ids"])  # MiniLM: [CLS] … [SEP]


@pytest.fixture(scope="module")
def page():
    return open_page("head_finder")


@pytest.mark.parametrize(
    ("model_id", "axes"),
    [
        ("induction-2l-attn-only", ("self", "induction", "entropy")),
        ("tiny-translator", ("sink", "entropy", "first_token")),
    ],
)
def test_the_scatter_is_the_shipped_tables_metrics(page, model_id, axes):
    page.selectbox(key="finder_model").set_value(model_id).run()
    for key, metric in zip(("finder_x", "finder_y", "finder_colour"), axes):
        page.selectbox(key=key).set_value(metric).run()
    assert_clean(page)
    rows = table(model_id)["heads"]
    points = scatter(page)["data"][0]
    x, y, colour = axes
    np.testing.assert_array_equal(decode(points["x"]), [r[x] for r in rows])
    np.testing.assert_array_equal(decode(points["y"]), [r[y] for r in rows])
    np.testing.assert_array_equal(decode(points["marker"]["color"]), [r[colour] for r in rows])
    blocks = {"self": "", "encoder": "Encoder self-attention: l", "decoder": "Decoder self-attention: l"}
    blocks["cross"] = "Cross-attention: l"
    names = [f"{blocks[r['block']] or 'L'}ayer {r['layer']}, head {r['head']}" for r in rows]
    assert points["text"] == names
    caption = next(c.value for c in page.caption if "Each point" in c.value)
    assert f"{len(rows)} heads" in caption and str(len(table(model_id)["corpus"]["texts"])) in caption


def test_cross_attention_is_left_out_of_metrics_it_has_none_of(page):
    page.selectbox(key="finder_model").set_value("tiny-translator").run()
    page.selectbox(key="finder_x").set_value("previous_token").run()
    rows = [r for r in table("tiny-translator")["heads"] if r["block"] != "cross"]
    assert len(decode(scatter(page)["data"][0]["x"])) == len(rows) < len(table("tiny-translator")["heads"])
    assert any("left out" in c.value for c in page.caption)


def test_a_measure_no_head_of_the_model_has_is_not_offered():
    """The translator is not traced from token ids: no induction or duplicate token (null in its table)."""
    at = open_page("head_finder", finder_model="tiny-translator")
    assert_clean(at)
    rows = table("tiny-translator")["heads"]
    assert all(r["induction"] is None and r["duplicate_token"] is None for r in rows)
    offered = at.selectbox(key="finder_y").options
    assert "Induction" not in offered and "Duplicate token" not in offered and "Entropy" in offered
    x, y = at.selectbox(key="finder_x").value, at.selectbox(key="finder_y").value
    assert x != y and "induction" not in (x, y)
    drawn = [r for r in rows if r[x] is not None and r[y] is not None]
    np.testing.assert_array_equal(decode(scatter(at)["data"][0]["y"]), [r[y] for r in drawn])


@pytest.mark.parametrize(("model_id", "head"), [("induction-2l-attn-only", "1.2"), ("minilm", "2.7")])
def test_a_heads_snippets_are_its_top_cells_with_the_query_and_key_marked(page, model_id, head):
    page.selectbox(key="finder_model").set_value(model_id).run()
    page.selectbox(key="finder_head").set_value(head).run()
    assert_clean(page)
    doc = table(model_id)
    layer, number = (int(v) for v in head.split("."))
    (row,) = [r for r in doc["heads"] if (r["layer"], r["head"]) == (layer, number)]
    shown_snippets = [m.value for m in page.markdown if re.match(r"\d+\. Text \d+", m.value)]
    assert len(shown_snippets) == len(row["top"]) > 0
    for source, (t, q, k, weight) in zip(shown_snippets, row["top"]):
        assert source.startswith(f"{row['top'].index([t, q, k, weight]) + 1}. Text {t}, weight **{weight:.2f}**")
        assert f"from position {q} to {k}" in source
        tokens = tokens_of(model_id, doc["corpus"]["texts"][t])
        line = source.split("  \n", 1)[1]
        words = line.split(" ")
        start = max(0, min(q, k) - 12) if words[0] == "…" else 0  # the line starts 12 tokens before the marks
        words = [w for w in words if w != "…"]
        marks = {start + i: MARK.fullmatch(w).groups() for i, w in enumerate(words) if MARK.fullmatch(w)}
        expected = {q: ("violet", tokens[q])} if q == k else {q: ("orange", tokens[q]), k: ("blue", tokens[k])}
        assert {i: (colour, shown(word)) for i, (colour, word) in marks.items()} == expected
        plain = [shown(MARK.sub(r"\2", w)) for w in words]
        assert plain == tokens[start : start + len(plain)]  # every token shown literally, in order
    (link,) = page.get("page_link")
    assert link.proto.label == f"Open layer {layer}, head {number} in Explore"
    assert link.proto.query_string == f"model={model_id}&layer={layer}&head={number}"


def test_a_link_restores_the_model_the_axes_and_the_head():
    from streamlit.testing.v1 import AppTest

    from apptest_helpers import APP, TIMEOUT

    link = {"finder_model": "induction-2l-attn-only", "finder_x": "duplicate_token", "finder_head": "0.1"}
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(str(ROOT / "app" / "views" / "head_finder" / "page.py"))
    at.query_params.update(link)
    at.run()
    assert_clean(at)
    assert at.selectbox(key="finder_model").value == "induction-2l-attn-only"
    assert (at.selectbox(key="finder_x").value, at.selectbox(key="finder_y").value) == ("duplicate_token", "induction")
    assert at.selectbox(key="finder_head").value == "0.1"
    row = table("induction-2l-attn-only")["heads"][1]  # layer 0, head 1: the card's previous-token head
    ring = scatter(at)["data"][1]
    assert (decode(ring["x"])[0], decode(ring["y"])[0]) == (row["duplicate_token"], row["induction"])
    assert at.query_params == link  # written back as it came (the y axis, its default, left out)


def test_the_induction_preset_opens_the_strongest_induction_head_on_a_repeated_run(page):
    page.button(key="finder_preset_0").click().run()
    assert_clean(page)
    rows = table("induction-2l-attn-only")["heads"]
    best = max(rows, key=lambda r: r["induction"])
    assert (best["layer"], best["head"]) == (1, 2)  # the model card's induction head
    assert page.selectbox(key="finder_model").value == "induction-2l-attn-only"
    assert page.selectbox(key="finder_head").value == "1.2"
    assert page.selectbox(key="finder_y").value == "induction"
    text = page.text_area(key="text").value
    half = len(text) // 2
    assert text[:half] == text[half:]  # a run repeated: the induction stripe shows on the sentence
    assert any(title(f) == "Layer 1, head 2 on your sentence" for f in figures(page))


@pytest.mark.parametrize("kind", ["catalog", "folder"])
def test_a_model_without_a_table_is_measured_on_the_long_work_queue(kind, tiny_hf_folders, monkeypatch):
    from engine.analysis.head_finder import corpus_for, head_table

    if kind == "folder":  # a Hugging Face GPT-2 folder typed into the field, inside the folder the server allows
        monkeypatch.setenv("AP_MODEL_DIRS", str(tiny_hf_folders["gpt2"].parent))
        model_id = str(tiny_hf_folders["gpt2"])
        at = open_page("head_finder", finder_hub=model_id)
    else:
        model_id = "tiny-random-gpt2"
        at = open_page("head_finder", finder_model=model_id)
    assert_clean(at)
    assert not [f for f in figures(at) if title(f).startswith("Every head")]
    at.button(key="finder_measure").click().run()
    run_until(at, lambda a: any(title(f).startswith("Every head") for f in figures(a)), what="the measured table")
    assert_clean(at)
    rows = head_table(engine.load(model_id), corpus_for(model_id).texts)
    points = scatter(at)["data"][0]
    np.testing.assert_allclose(decode(points["x"]), [r["previous_token"] for r in rows], atol=5e-5)
    np.testing.assert_allclose(decode(points["y"]), [r["induction"] for r in rows], atol=5e-5)
    assert at.query_params.get("finder_hub" if kind == "folder" else "finder_model") == model_id
