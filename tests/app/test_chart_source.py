"""Every chart of a text page says which model and sentence it shows (its title's subtitle, in the PNG or SVG a
teacher downloads too); a link that locks the model still names it; next-token bars carry their numbers."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

import engine  # noqa: E402
from apptest_helpers import APP, TIMEOUT, assert_clean, figures, layer_shown, run_app  # noqa: E402

SENTENCE = "The <b>tired</b> cat sat on the mat because it was warm"


def _subtitle(fig: dict) -> str | None:
    return ((fig["layout"].get("title") or {}).get("subtitle") or {}).get("text")


def test_explore_charts_name_the_model_and_the_sentence_escaped():
    at = run_app(text=SENTENCE, explore_tab="Causal mask off vs on")
    assert_clean(at)
    label = next(s.label for s in engine.list_models() if s.id == "minilm")
    subtitles = [_subtitle(f) for f in figures(at)]
    assert len(subtitles) == 2  # the mask pair
    for text in subtitles:
        assert text == f"{label} · “The &lt;b&gt;tired&lt;/b&gt; cat sat on the mat because it was warm”"
    # the view draws its source line as text (no markup to escape), in its PNG and SVG too
    assert layer_shown(at).header["source"] == f"{label} · “{SENTENCE}”"
    at.selectbox(key="layer").set_value(3).run()
    assert {_subtitle(f) for f in figures(at)} == set(subtitles)


def test_a_long_sentence_is_cut_in_the_subtitle():
    at = run_app(text="word " * 100)
    text = layer_shown(at).header["source"]
    assert text.endswith("…”") and len(text) < 120


def test_another_page_does_not_borrow_explores_source():
    at = run_app(text=SENTENCE)
    at.switch_page("views/bahdanau/page.py").run()
    assert_clean(at)
    assert figures(at) and all(_subtitle(f) is None for f in figures(at))


def test_a_link_that_locks_the_model_still_names_it():
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update({"model": "tiny-gpt-stories", "text": "lily found a ball", "hide": "model"})
    at.run()
    assert_clean(at)
    label = next(s.label for s in engine.list_models() if s.id == "tiny-gpt-stories")
    assert "model" not in [w.key for w in at.selectbox]
    shown = [c.value.replace("\\", "") for c in at.caption if "fixed by this link" in c.value]
    assert shown == [f"Model: **{label}** (fixed by this link)"], [c.value for c in at.caption]
    assert all(_subtitle(f).startswith(label.replace("&", "&amp;")) for f in figures(at))


def test_next_token_bars_carry_their_numbers():
    at = run_app(model="tiny-gpt-stories", text="lily found a")
    at.session_state["explore_tab"] = "What comes next?"
    at.run()
    assert_clean(at)
    bars = [json.loads(c.proto.spec)["data"][0] for c in at.get("plotly_chart") if c.key == "next_token_chart"]
    assert len(bars) == 1
    assert bars[0]["text"] == [f"{p:.1%}" for p in bars[0]["x"]] and bars[0]["textposition"] == "outside"
