"""Step by step's "What made this score?" through AppTest: the waterfall's parts add up to the raw score of an
independent trace (``engine.trace(...).scores(layer, head, stage="raw")``), the key picker and the link
(:func:`score_link`) restore the view, and a split that does not apply gives the engine's message calmly."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from app.views.step_by_step.score_parts import TOP, score_link
from apptest_helpers import APP, ROOT, TIMEOUT, assert_clean, decode, figures, messages, open_page  # noqa: E402

STORY = "Lily found a red ball and she gave it to Tom ."
LETTERS = "abcdefgabcdefg"


def reference(model_id: str, text: str):
    return engine.trace(engine.load(model_id), text)


def raw_score(model_id: str, text: str, layer: int, head: int, query: int, key: int) -> float:
    return float(reference(model_id, text).scores(layer, head, stage="raw")[query, key])


def chart(at: AppTest, kind: str) -> dict:
    found = [f["data"][0] for f in figures(at) if f["data"][0]["type"] == kind]
    assert len(found) == 1, f"one {kind} chart"
    return found[0]


def bars(at: AppTest) -> tuple[list[str], np.ndarray]:
    """The waterfall's bar names and values (the last one the total)."""
    fall = chart(at, "waterfall")
    assert fall["measure"] == ["relative"] * (len(fall["y"]) - 1) + ["total"]
    return list(fall["y"]), np.asarray(decode(fall["x"]), dtype=float)


def assert_adds_up(at: AppTest, raw: float) -> list[str]:
    names, values = bars(at)
    assert names[-1] == "= raw score"
    assert values[:-1].sum() == pytest.approx(raw, rel=1e-5, abs=1e-5 * np.abs(values[:-1]).sum())
    assert values[-1] == pytest.approx(raw, rel=1e-5)
    return names


def test_the_waterfall_adds_up_to_the_raw_score_of_the_chosen_key():
    at = open_page("step_by_step", model="tiny-gpt-stories", text=STORY, layer=2, head=1, step_query=9, step_parts=True)
    at.run()
    assert_clean(at)
    words = reference("tiny-gpt-stories", STORY).tokens.strings
    assert at.selectbox(key="step_key").options == [f"{j} · {w}" for j, w in enumerate(words[:10])]  # causal
    at.selectbox(key="step_key").set_value(4).run()
    assert_clean(at)
    names = assert_adds_up(at, raw_score("tiny-gpt-stories", STORY, 2, 1, 9, 4))
    assert len(names) == TOP + 2 and names[-2] == f"other ({13 * 13 - TOP} parts)"  # 13 sources: 169 pairs
    assert at.query_params["step_key"] == "4" and at.query_params["step_parts"] == "1"
    assert [r.options for r in at.radio] == [["Where q and k come from"]]  # learned positions: no RoPE, no ALiBi
    table = next(d.value for d in at.dataframe if list(d.value.columns) == ["adds"])
    assert len(table) == 169 and "head 1.2 · MLP 0" in table.index
    assert any("split into 169 parts that add up to it exactly" in m for m in messages(at.caption))


def test_a_link_opens_the_rope_bands_of_a_cell():
    link = score_link(1, 2, 9, 2)
    assert urlsplit(link).path.endswith("/step_by_step")
    query = dict(parse_qsl(urlsplit(link).query)) | {"model": "induction-2l-attn-only", "text": LETTERS}
    assert {k: query[k] for k in ("layer", "head", "step_query", "step_key", "step_parts")} == {
        "layer": "1",
        "head": "2",
        "step_query": "9",
        "step_key": "2",
        "step_parts": "1",
    }
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)  # the link opened in a new tab
    at.run()
    at.switch_page(str(ROOT / "app" / "views" / "step_by_step" / "page.py"))
    at.query_params.update(query | {"step_split": "rope_bands"})
    at.run()
    assert_clean(at)
    assert (at.selectbox(key="step_query").value, at.selectbox(key="step_key").value) == (9, 2)
    assert at.radio(key="step_split").value == "rope_bands"
    names = assert_adds_up(at, raw_score("induction-2l-attn-only", LETTERS, 1, 2, 9, 2))
    assert names[:-1] == [f"band {i}" for i in range(8)]  # d_head 16: 8 bands
    bands = chart(at, "heatmap")
    assert list(bands["y"]) == names[:-1] and list(decode(bands["x"])) == list(range(len(LETTERS) + 1))  # <bos>
    at.radio(key="step_split").set_value("sources").run()  # RoPE models offer both splits
    assert_adds_up(at, raw_score("induction-2l-attn-only", LETTERS, 1, 2, 9, 2))
    assert at.query_params.get("step_split") is None  # the default is left out of the link


def test_a_split_that_does_not_apply_says_why_calmly():
    at = open_page("step_by_step", model="tiny-translator", text="the cat sees the dog", step_parts=True)
    at.run()
    assert_clean(at)
    assert any("not for tiny" in m for m in messages(at.warning))
    assert "No other split applies here." in messages(at.caption)
    assert not [f for f in figures(at) if f["data"][0]["type"] == "waterfall"]


@pytest.fixture
def alibi_session(tmp_path):
    """An own ALiBi transformer, as a session's trained model (``engine.registry.register_runtime``)."""
    from engine.registry import register_runtime, unregister_runtime
    from tests.unit.test_score_terms import own_model

    model = own_model(tmp_path, "alibi-own", pos_encoding="alibi")
    register_runtime("alibi-own", model, "alibi-session")
    yield model
    unregister_runtime("alibi-session")


def test_alibi_splits_the_score_into_content_and_distance(alibi_session):
    from tests.unit.test_score_terms import SENTENCE

    state = dict(_session_id="alibi-session", model="alibi-own", text=SENTENCE, layer=1, head=2, step_query=9)
    at = open_page("step_by_step", **state, step_parts=True, step_split="alibi")
    at.run()
    assert_clean(at)
    assert at.radio(key="step_split").options == ["Where q and k come from", "Content and ALiBi distance"]
    at.selectbox(key="step_key").set_value(3).run()
    names, values = bars(at)
    trace = engine.trace(alibi_session, SENTENCE)
    masked, raw = (float(trace.scores(1, 2, stage=s)[9, 3]) for s in ("masked", "raw"))
    assert names == ["content q·k·scale", "distance −m·|i−j|", "= score after scale and ALiBi"]
    assert values[0] == pytest.approx(raw / np.sqrt(trace.d_head), rel=1e-5)  # the content: q·k × 1/√d
    assert values[:2].sum() == pytest.approx(masked, rel=1e-5) and values[2] == pytest.approx(masked, rel=1e-5)
    at.radio(key="step_split").set_value("sources").run()
    assert_adds_up(at, raw)
