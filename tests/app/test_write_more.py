"""Explore's "Write more" tab through AppTest: the button writes (greedy by default, 20 tokens), the text
shows prompt + highlighted continuation, the chart covers prompt + generated tokens with the boundary
marked; bad settings and encoders get a clear message, never an exception."""

from __future__ import annotations

import dataclasses
import json

import pytest

import engine
from apptest_helpers import assert_clean, messages, run_app  # noqa: E402
from engine.generation import DecodeSettings

TAB = "Write more"
STORY = "lily found a"


def _open(**state):
    at = run_app(**state)
    at.session_state["explore_tab"] = TAB
    at.run()
    assert_clean(at)
    return at


def _chart(at) -> dict | None:
    charts = [c for c in at.get("plotly_chart") if c.key == "write_chart"]
    return json.loads(charts[0].proto.spec) if charts else None


def _press(at):
    at.button(key="FormSubmitter:write_form-Write more").click().run()
    assert_clean(at)
    return at


def test_greedy_default_writes_and_marks_the_generated_part():
    at = _open(model="tiny-gpt-stories", text=STORY)
    assert _chart(at) is None, "nothing is generated before the button"
    assert at.number_input(key="write_tokens").value == 20 and at.radio(key="write_mode").value == "Greedy"
    _press(at)
    assert not at.error and not at.warning, messages(at.warning)
    ref = engine.generate(engine.load("tiny-gpt-stories"), STORY, DecodeSettings(max_new_tokens=20))
    words = " ".join(ref.tokens.strings[ref.generated_from :]).replace("<eos>", "").strip()
    text = [m for m in at.markdown if ":orange-background[" in m.value]
    assert len(text) == 1 and text[0].value.startswith("lily found a :orange-background[**")
    assert words.split()[0] in text[0].value
    fig = _chart(at)
    n = len(ref.tokens)
    assert len(fig["data"][0]["x"]) == n and len(fig["data"][0]["y"]) == n
    lines = fig["layout"]["shapes"]
    assert {s["x0"] for s in lines if s.get("yref") == "paper"} == {ref.generated_from - 0.5}
    assert any("<b>" in t for t in fig["layout"]["yaxis"]["ticktext"])
    assert any("greedy" in m for m in messages(at.caption))


def test_sampled_settings_reach_the_engine():
    at = _open(model="tiny-gpt-stories", text=STORY + " big")
    at.radio(key="write_mode").set_value("Sampled").run()  # outside the form: enables the sampling controls
    at.number_input(key="write_tokens").set_value(6)
    at.number_input(key="write_top_k").set_value(5)
    at.number_input(key="write_seed").set_value(11)
    _press(at)
    ref = engine.generate(
        engine.load("tiny-gpt-stories"), STORY + " big", DecodeSettings(max_new_tokens=6, sample=True, top_k=5, seed=11)
    )
    assert len(_chart(at)["data"][0]["x"]) == len(ref.tokens)
    assert any("top-k 5, seed 11" in m for m in messages(at.caption)), messages(at.caption)


SAMPLING = ("temperature", "top_p", "top_k", "seed")


def _disabled(at, prefix: str) -> dict[str, bool]:
    return {
        name: (at.slider if name in ("temperature", "top_p") else at.number_input)(key=f"{prefix}_{name}").disabled
        for name in SAMPLING
    }


@pytest.mark.parametrize("model,prefix", [("tiny-gpt-stories", "write"), ("tiny-translator", "decode")])
def test_greedy_disables_the_sampling_controls_at_once(model, prefix):
    """Issue 20 (b): greedy ignores temperature, top-k, top-p and seed, so they are greyed out, and the mode
    choice sits outside the form, so changing it shows at once (no submit, nothing written)."""
    at = _open(model=model, text=STORY if prefix == "write" else "the cat eats the bread")
    assert at.radio(key=f"{prefix}_mode").value == "Greedy"
    assert _disabled(at, prefix) == dict.fromkeys(SAMPLING, True)
    assert not at.number_input(key=f"{prefix}_tokens").disabled, "greedy still writes N tokens"
    at.radio(key=f"{prefix}_mode").set_value("Sampled").run()
    assert_clean(at)
    assert _disabled(at, prefix) == dict.fromkeys(SAMPLING, False)
    if prefix == "write":
        assert _chart(at) is None, "choosing a mode writes nothing until the button"
    at.radio(key=f"{prefix}_mode").set_value("Greedy").run()
    assert _disabled(at, prefix) == dict.fromkeys(SAMPLING, True)


@pytest.mark.parametrize(
    "settings,says", [((500, False, 1.0, 0, 1.0, 0), "max_new_tokens"), ((5, True, 1.0, 0, 0.0, 0), "top_p")]
)
def test_bad_settings_get_a_clear_message(settings, says):
    at = _open(model="tiny-gpt-stories", text=STORY)
    at.session_state["write_request"] = ("tiny-gpt-stories", STORY, 128, settings)  # forged past the widgets
    at.run()
    assert_clean(at)
    assert _chart(at) is None
    assert any(says in m for m in messages(at.warning)), messages(at.warning)


def test_a_prompt_that_fills_the_model_says_so():
    at = _open(model="tiny-gpt-stories", text="lily found a ball . " * 30)
    _press(at)
    assert _chart(at) is None
    assert any("fills this model's 96 positions" in m for m in messages(at.warning)), messages(at.warning)


def test_empty_prompt_and_encoders():
    at = _open(model="tiny-gpt-stories", text="   ")
    assert not at.exception
    enc = _open(text="The cat sat.")  # MiniLM by default
    assert any("needs a decoder" in m.value for m in enc.info), messages(enc.info)
    assert not [b for b in enc.button if "write_form" in str(b.key)]


def test_grouped_query_heads_are_named_in_the_caption():
    import numpy as np

    from app.controls.pickers import kv_sharing
    from engine.records import Tokens
    from engine.traces.attention import AttentionTrace

    toks = Tokens(strings=("a", "b"), ids=(1, 2), special=(False, False))
    arr = np.zeros((8, 2, 4), dtype=np.float32)
    tr = AttentionTrace(
        model_id="m",
        family="decoder",
        tokens=toks,
        key_tokens=toks,
        queries=(arr,),
        keys=(arr,),
        values=(arr,),
        scales=(0.5,),
        causal=True,
        kv_heads=2,
    )
    assert kv_sharing(tr, 5).startswith(" Heads 4–7 share key/value head 1 (grouped-query attention")
    assert kv_sharing(dataclasses.replace(tr, kv_heads=None), 5) == ""


def test_the_writing_job_draws_the_head_map_off_the_page(monkeypatch):
    """The job that writes also computes the head the page shows (on the long-work lane, at low priority):
    the page's next run finds that map in the shared cache instead of pooling a long trace itself."""
    import threading

    from app.runtime import maps

    made = []
    real = maps.head_map

    def recording(att, view):
        made.append((threading.current_thread().name, len(att.tokens), view.layer, view.head))
        return real(att, view)

    monkeypatch.setattr(maps, "head_map", recording)
    at = _open(model="tiny-gpt-stories", text=STORY + " ball")
    made.clear()
    _press(at)
    n = len(engine.generate(engine.load("tiny-gpt-stories"), STORY + " ball", DecodeSettings(max_new_tokens=20)).tokens)
    assert len(_chart(at)["data"][0]["x"]) == n  # the written text's head is drawn
    of_the_writing = [m for m in made if m[1] == n]
    assert of_the_writing and all(name.startswith("long-work-") for name, *_ in of_the_writing), made
