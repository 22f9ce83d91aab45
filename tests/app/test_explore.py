"""The Explore page through Streamlit's AppTest: widgets in, chart figures out.

AppTest runs the real script with no browser (no JavaScript, nothing drawn): it checks what the page
sends to the browser. The browser itself is covered by tests/e2e. Model and trace caches are shared
by every AppTest in one pytest process, so only the first test pays for loading MiniLM.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from apptest_helpers import (  # noqa: E402  (tests/app is on sys.path: rootdir-relative imports)
    APP,
    ROOT,
    TIMEOUT,
    assert_clean,
    assert_head_and_grid,
    figures,
    layer_shown,
    messages,
    run_app,
    title,
    y_labels,
    z,
)

SHOWN = 5e-4 + 1e-6  # the view's weights travel to 3 decimals (engine/views/layer_view.py)

# ---------------------------------------------------------------- the default page


@pytest.fixture(scope="module")
def default_app() -> AppTest:
    return run_app()


def test_default_run_draws_the_layer_s_heads_in_one_browser_view(default_app: AppTest):
    assert_clean(default_app)
    assert not default_app.error, messages(default_app.error)
    # every head of layer 0 in one element (the browser switches between them); the sections wait to be picked
    shown = assert_head_and_grid(default_app, n_heads=12)
    assert shown.title == "Layer 0, head 0" and shown.values.shape[:2] == (1, 12)
    assert default_app.segmented_control(key="explore_tab").value is None


def test_the_view_holds_every_head_of_the_layer_and_opens_the_one_chosen(default_app: AppTest):
    """The view's heads are the layer's weights to the printed decimals; a head chosen in the browser
    (``layer_view.take`` puts it in session state before the next run) is the one the view opens on."""
    from app.runtime.request import TraceRequest
    from app.runtime.traces import get_trace

    text = default_app.text_area(key="text").value
    trace = get_trace(TraceRequest("minilm", text, False, default_app.session_state["max_tokens"]))
    shown = layer_shown(default_app)
    for head in range(12):
        np.testing.assert_allclose(shown.values[0, head], trace.pattern(0, head), rtol=0, atol=SHOWN)
    default_app.selectbox(key="layer").set_value(2).run()
    default_app.session_state["head"] = 7
    default_app.run()
    assert_clean(default_app)
    shown = layer_shown(default_app)
    assert shown.title == "Layer 2, head 7" and shown.header["layers"] == [2]
    np.testing.assert_allclose(shown.values[0, 3], trace.pattern(2, 3), rtol=0, atol=SHOWN)
    default_app.selectbox(key="layer").set_value(0).run()
    default_app.session_state["head"] = 0
    default_app.run()


def show_mask_tab(at: AppTest) -> AppTest:
    at.session_state["explore_tab"] = "Causal mask off vs on"
    at.run()
    assert_clean(at)
    return at


def test_sections_are_one_row_of_buttons_and_a_click_opens_one():
    """The page's sections are a segmented control (one element a rerun; a tab bar was five and cost the browser
    ~0.1 s a rerun at 512 tokens), none open at first (each costs a model pass): pressing "Causal mask off vs on"
    runs that section and no other."""
    from app.views.explore.page import TABS

    at = run_app()
    assert not at.tabs
    row = at.segmented_control(key="explore_tab")
    assert row.options == list(TABS) and row.value is None
    row.set_value(TABS[1]).run()
    assert_clean(at)
    assert [c.key for c in at.get("plotly_chart")] == ["mask_False", "mask_True"]
    assert at.segmented_control(key="explore_tab").value == TABS[1]


def test_default_main_chart_shows_the_sentence(default_app: AppTest):
    shown = layer_shown(default_app)
    assert any("animal" in label for label in shown.rows), shown.rows
    assert any("tired" in label for label in shown.rows), shown.rows
    assert shown.title == "Layer 0, head 0"  # MiniLM: no causal mask by default


def test_default_main_chart_rows_sum_to_one(default_app: AppTest):
    weights = layer_shown(default_app).z
    n = len(layer_shown(default_app).rows)
    assert weights.shape == (n, n)
    assert np.isfinite(weights).all(), "no cell is masked when the causal mask is off"
    assert (weights >= 0).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=n * SHOWN)


def test_default_widgets(default_app: AppTest):
    assert default_app.text_area(key="text").value.startswith("The animal")
    assert default_app.selectbox(key="model").value == "minilm"
    assert default_app.toggle(key="causal").value is False


# ---------------------------------------------------------------- interaction


def test_typing_a_sentence_updates_the_labels():
    at = run_app()
    at.text_area(key="text").input("Lily found a red ball.").run()
    assert_clean(at)
    labels = " ".join(layer_shown(at).rows)
    assert "lily" in labels and "ball" in labels, labels
    assert "animal" not in labels
    # the mask comparison follows the new text
    for fig in figures(show_mask_tab(at)):
        assert any("lily" in label for label in y_labels(fig))


def test_causal_toggle_masks_the_upper_triangle():
    at = run_app()
    at.toggle(key="causal").set_value(True).run()
    assert_clean(at)
    shown = layer_shown(at)
    assert "causal mask on" in shown.title
    weights = shown.z
    n = weights.shape[0]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.isnan(weights[upper]).all(), "cells above the diagonal are blocked (NaN, drawn grey)"
    assert np.isfinite(weights[~upper]).all(), "cells on and below the diagonal carry weights"
    np.testing.assert_allclose(np.nansum(weights, axis=1), 1.0, atol=n * SHOWN)
    # first token can only look at itself
    assert weights[0, 0] == pytest.approx(1.0, abs=SHOWN)

    # and off again: back to a full pattern
    at.toggle(key="causal").set_value(False).run()
    assert "causal" not in layer_shown(at).title
    assert np.isfinite(layer_shown(at).z).all()


def test_mask_comparison_charts_are_off_then_on():
    at = show_mask_tab(run_app())
    off, on = figures(at)
    assert "OFF" in title(off) and "ON" in title(on)
    assert np.isfinite(z(off)).all()
    assert np.isnan(z(on)[0, 1:]).all()
    # one colour scale for both, so the shades compare
    assert off["data"][0]["zmax"] == on["data"][0]["zmax"] >= np.nanmax(z(on)) - 1e-6


def test_mask_comparison_traces_a_second_time_only_while_shown():
    from app.runtime.caches import TRACES
    from app.runtime.request import TraceRequest

    text = "Only the open tab may run the model twice."
    at = run_app(text=text)

    def keys() -> list[TraceRequest]:  # the trace cache's keys are traces.request_key: (request, trained, rules)
        requests = [entry[0] for entry in list(TRACES._entries) if isinstance(entry, tuple)]
        return [r for r in requests if isinstance(r, TraceRequest) and r.text == text]

    assert [k.causal for k in keys()] == [False], "the default tab traces once (mask off: MiniLM's own setting)"
    show_mask_tab(at)
    assert sorted(map(str, (k.causal for k in keys()))) == ["False", "True"]


def test_switching_to_gpt2_turns_the_causal_mask_on():
    at = run_app()
    assert at.toggle(key="causal").value is False
    at.selectbox(key="model").set_value("tiny-random-gpt2").run()
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert at.toggle(key="causal").value is True
    shown = assert_head_and_grid(at)
    assert "causal mask on" in shown.title
    assert np.isnan(shown.z[0, 1:]).all()

    # back to MiniLM: its own default (off) comes back
    at.selectbox(key="model").set_value("minilm").run()
    assert_clean(at)
    assert at.toggle(key="causal").value is False


def test_layer_and_head_selection_change_the_title():
    at = run_app()
    at.selectbox(key="layer").set_value(3).run()
    assert_clean(at)
    assert layer_shown(at).title == "Layer 3, head 0"
    at.session_state["head"] = 7  # as the view's head button leaves it (layer_view.take)
    at.run()
    assert_clean(at)
    assert layer_shown(at).title == "Layer 3, head 7"
    assert len(at.selectbox(key="layer").options) == 6  # MiniLM: 6 layers × 12 heads
    assert layer_shown(at).header["n_heads"] == 12


def test_layer_beyond_a_smaller_model_is_clamped():
    """Layer 5 / head 11 on MiniLM, then the 4-layer tiny GPT-2: no exception, a valid layer and head."""
    at = run_app()
    at.selectbox(key="layer").set_value(5).run()
    at.session_state["head"] = 11
    at.selectbox(key="model").set_value("tiny-random-gpt2").run()
    assert_clean(at)
    layer = at.selectbox(key="layer").value
    shown = layer_shown(at)
    assert layer < len(at.selectbox(key="layer").options)
    assert shown.header["head"] < shown.header["n_heads"] == 4
    assert shown.title.startswith(f"Layer {layer}, head {shown.header['head']}")


# ---------------------------------------------------------------- bad input


def test_empty_text_shows_a_warning():
    at = run_app()
    at.text_area(key="text").input("").run()
    assert_clean(at)
    warnings = messages(at.warning)
    assert warnings, "an empty text gets a message"
    assert any("empty" in w.lower() for w in warnings), warnings
    assert not at.get("plotly_chart")


def test_whitespace_text_shows_a_warning():
    at = run_app()
    at.text_area(key="text").input("   \n\t  ").run()
    assert_clean(at)
    assert any("empty" in w.lower() for w in messages(at.warning))


def test_html_and_emoji_are_escaped():
    at = run_app()
    at.text_area(key="text").input("<script>alert(1)</script> hello 🙂🐍 <b>bold</b>").run()
    assert_clean(at)
    assert not at.error, messages(at.error)
    # the view draws labels as canvas text and its tooltip as textContent: the tokens travel as typed, never markup
    labels = layer_shown(at).rows
    assert any("<" in label for label in labels) and any("hello" in label for label in labels), labels
    assert not figures(at)


def test_unknown_hub_id_shows_an_error():
    """The error comes in the same run (offline: no network wait; bench/bench_responsiveness.py times it)."""
    at = run_app()
    at.text_input(key="hub_id").input("definitely-not-a-model-xyz123").run()
    assert_clean(at)
    errors = messages(at.error)
    assert any("definitely-not-a-model-xyz123" in e for e in errors), errors
    assert not at.get("plotly_chart") and not at.get("bidi_component")

    # clearing the field goes back to the picked model
    at.text_input(key="hub_id").input("").run()
    assert_clean(at)
    assert not at.error
    assert_head_and_grid(at)


@pytest.mark.parametrize("hub_id", ["../../etc", "/nonexistent/folder", "a" * 300, "bad id with spaces"])
def test_malformed_hub_ids_show_an_error(hub_id: str):
    at = run_app()
    at.text_input(key="hub_id").input(hub_id).run()
    assert_clean(at)
    assert at.error, "a malformed id gets a message"
    assert not at.get("plotly_chart") and not at.get("bidi_component")


def trace_of(at: AppTest):
    """The (cached) trace of the sentence, model and token limit ``at`` shows (MiniLM, no mask)."""
    from app.runtime.request import TraceRequest
    from app.runtime.traces import get_trace

    text = at.text_area(key="text").value
    return get_trace(TraceRequest("minilm", text, False, at.session_state["max_tokens"]))


def test_display_options_log_scale_and_hidden_sink_columns(default_app: AppTest):
    at = run_app()
    exact = layer_shown(at).values
    assert layer_shown(at).header["log"] is False
    at.segmented_control(key="explore_scale").set_value("log").run()
    assert_clean(at)
    shown = layer_shown(at)
    np.testing.assert_array_equal(shown.values, exact)  # log is a colour scale: the weights sent are the same
    assert shown.header["log"] is True
    at.segmented_control(key="explore_scale").set_value("row").run()
    rows = layer_shown(at)
    assert rows.header["value_name"] == "share of row max"
    pattern = trace_of(at).pattern(0)
    np.testing.assert_allclose(rows.values[0], pattern / pattern.max(axis=-1, keepdims=True), rtol=0, atol=SHOWN)
    at.segmented_control(key="explore_scale").set_value("linear").run()
    at.toggle(key="explore_hide_sinks").set_value(True).run()
    shown = layer_shown(at)
    keys = shown.header["k"]
    assert not any("[CLS]" in k or "[SEP]" in k for k in keys), keys
    assert not keys[0].startswith("0 ")
    np.testing.assert_array_equal(shown.values, exact[..., 1:-1])  # the same weights, not renormalised


def test_contribution_is_kobayashis_measure_and_value_length_is_offered_apart():
    at = run_app()
    weights = layer_shown(at).z
    assert at.segmented_control(key="explore_weighting").value == "attention"
    at.segmented_control(key="explore_weighting").set_value("contribution").run()
    assert_clean(at)
    shown = layer_shown(at)
    trace = trace_of(at)
    want = trace.contributions(0, 0)  # α·‖v W_O‖ (tests/unit/test_contributions.py checks it against the model)
    contribution = shown.z
    np.testing.assert_allclose(contribution, want, rtol=0, atol=SHOWN * 10 ** (3 - shown.header["digits"]))
    assert "‖α·f(x)‖" in shown.header["value_name"]
    captions = " ".join(messages(at.caption))
    assert "Kobayashi et al. 2020" in captions and "rows no longer sum to 1" in captions, captions
    # the sink columns ([CLS] first, [SEP] last) hold a smaller share of every row's total than under α
    sinks = [0, weights.shape[1] - 1]
    assert shown.header["k"][0].endswith("[CLS]") and shown.header["k"][-1].endswith("[SEP]")
    share_alpha = weights[:, sinks].sum(axis=1) / weights.sum(axis=1)
    share_contribution = want[:, sinks].sum(axis=1) / want.sum(axis=1)
    assert (share_contribution < share_alpha).all(), (share_alpha, share_contribution)
    # with the row colour scale: each row divided by its largest contribution
    at.segmented_control(key="explore_scale").set_value("row").run()
    shown = layer_shown(at)
    np.testing.assert_allclose(shown.z, want / want.max(axis=1, keepdims=True), rtol=0, atol=SHOWN)
    assert shown.header["value_name"] == "share of row max of ‖α·f(x)‖"
    # α·‖v‖ is still there, named for what it is: the value's length only
    at.segmented_control(key="explore_scale").set_value("linear").run()
    at.segmented_control(key="explore_weighting").set_value("value").run()
    shown = layer_shown(at)
    by_hand = trace.pattern(0, 0) * np.linalg.norm(trace.v(0)[0], axis=-1)[None, :]
    np.testing.assert_allclose(shown.z, by_hand, rtol=0, atol=SHOWN * 10 ** (3 - shown.header["digits"]))
    assert "α·‖v‖" in shown.header["value_name"]
    assert "leaves out the output projection" in " ".join(messages(at.caption))
    # and back: the weights again
    at.segmented_control(key="explore_weighting").set_value("attention").run()
    np.testing.assert_array_equal(layer_shown(at).z, weights)


def opened(at):
    """``at`` run once with Explore's zoom panel open, as a click on it would. AppTest sends no expander state:
    a run that changes a widget closes the panel again (the zoom is kept), so each step opens it first."""
    at.session_state["explore_zoom_open"] = True
    return at.run()


def test_long_input_is_an_overview_with_a_zoom_to_exact_cells():
    from engine.traces.overview import overview_edges

    words = "the quick brown fox jumps over the lazy dog while a teacher explains attention".split()
    text = " ".join(words[i % len(words)] for i in range(700))
    at = run_app(text=text, max_tokens=512)
    assert_clean(at)
    warnings = messages(at.warning)
    assert any("first 512" in w for w in warnings) and not any("Token limit" in w for w in warnings), (
        "at the model's own 512 a larger limit would not help, so the warning does not suggest one"
    )
    shown = layer_shown(at)
    pooled = shown.z
    assert pooled.shape == (256, 256), "512 tokens are sent as 256 × 256 block maxima"
    assert len(shown.rows) == 256 and shown.rows[1] == "2–3"
    assert (shown.header["q_first"][1], shown.header["q_last"][1], shown.header["n_tokens"]) == (2, 3, 512)
    # against the full pattern pooled by hand
    import engine
    from app.runtime.request import TraceRequest
    from app.runtime.traces import get_trace

    full = get_trace(TraceRequest("minilm", text, False, 512)).pattern(0, 0)
    edges = overview_edges(512, 256)
    by_hand = np.maximum.reduceat(np.maximum.reduceat(full, edges[:-1], axis=0), edges[:-1], axis=1)
    np.testing.assert_allclose(pooled, by_hand, rtol=0, atol=SHOWN)
    # every head of the layer, pooled alike, in under 1 MB (issue 41: the first draw's budget at 512 tokens)
    head3 = get_trace(TraceRequest("minilm", text, False, 512)).pattern(0, 3)
    pooled3 = np.maximum.reduceat(np.maximum.reduceat(head3, edges[:-1], axis=0), edges[:-1], axis=1)
    np.testing.assert_allclose(shown.values[0, 3], pooled3, rtol=0, atol=SHOWN)
    assert len(at.get("bidi_component")[0].proto.bytes) < 1 << 20
    # a long input starts on the log colour scale (linear looks empty there) until the user picks one
    assert at.segmented_control(key="explore_scale").value == "log"
    at.segmented_control(key="explore_scale").set_value("linear").run()
    at.text_area(key="text").input(text + " again").run()
    assert at.segmented_control(key="explore_scale").value == "linear", "the user's choice is kept"
    # the zoom's controls are drawn only while its panel is open
    assert not at.slider and not any(box.key.startswith("explore_zoom") for box in at.number_input)
    opened(at)
    # zoom to a region that fits: exact weights with token labels
    opened(at).slider(key="explore_zoom_q_512").set_value((100, 200)).run()
    opened(at).slider(key="explore_zoom_k_512").set_value((0, 120)).run()
    assert_clean(at)
    shown = layer_shown(at)
    np.testing.assert_allclose(shown.z, full[100:200, 0:120], rtol=0, atol=SHOWN)
    assert shown.rows[0].startswith("100 ") and shown.header["k"][0] == "0 [CLS]"
    assert shown.header["q_first"][:2] == [100, 101]  # a highlighted token finds its row in the zoomed region
    # closed again, the panel keeps the region
    at.session_state["explore_zoom_open"] = False
    at.run()
    assert not at.slider
    np.testing.assert_allclose(layer_shown(at).z, full[100:200, 0:120], rtol=0, atol=SHOWN)
    assert "queries 100–199, keys 0–119" in at.get("download_button")[0].proto.label
    # open again: the sliders show the kept region
    opened(at)
    assert at.slider(key="explore_zoom_q_512").value == (100, 200)
    assert at.number_input(key="explore_zoom_k_512_to").value == 120
    assert isinstance(engine.DEFAULT_MAX_TOKENS, int)


def test_a_class_sentence_is_sent_exact_for_every_head():
    """A class's sentence (20–60 tokens): every head of the layer a cell a token (a diagonal stays a diagonal)."""
    from app.runtime.request import TraceRequest
    from app.runtime.traces import get_trace

    text = " ".join(["the quick brown fox jumps over the lazy dog"] * 5)  # 45 words, 47 tokens with [CLS]/[SEP]
    at = run_app(text=text)
    assert_clean(at)
    trace = get_trace(TraceRequest("minilm", text, False, 128))
    assert len(trace.tokens) == 47
    shown = layer_shown(at)
    assert shown.values.shape == (1, 12, 47, 47)
    np.testing.assert_allclose(shown.values[0], trace.pattern(0), rtol=0, atol=SHOWN)
    assert len(at.get("bidi_component")[0].proto.bytes) < 50_000, "12 exact 47 × 47 heads, deflated"
    assert not any("block maxima" in c or "Overview" in c for c in messages(at.caption))


def test_a_zoom_region_can_be_typed_and_the_slider_follows():
    """Issue 20 (a): over thousands of tokens a slider moves dozens of tokens a pixel; the ends can be typed."""
    words = "the quick brown fox jumps over the lazy dog while a teacher explains attention".split()
    text = " ".join(words[i % len(words)] for i in range(700))
    at = run_app(text=text, max_tokens=512)
    from app.runtime.request import TraceRequest
    from app.runtime.traces import get_trace

    full = get_trace(TraceRequest("minilm", text, False, 512)).pattern(0, 0)
    opened(at)
    assert at.number_input(key="explore_zoom_q_512_from").value == 0
    assert at.number_input(key="explore_zoom_q_512_to").value == 512
    opened(at).number_input(key="explore_zoom_q_512_from").set_value(300).run()
    opened(at).number_input(key="explore_zoom_q_512_to").set_value(340).run()
    opened(at).number_input(key="explore_zoom_k_512_to").set_value(200).run()
    assert_clean(opened(at))
    assert at.slider(key="explore_zoom_q_512").value == (300, 340), "the slider follows the typed ends"
    assert at.slider(key="explore_zoom_k_512").value == (0, 200)
    np.testing.assert_allclose(layer_shown(at).z, full[300:340, 0:200], rtol=0, atol=SHOWN)
    # the boxes follow the slider, and a start typed past the end moves the end after it
    opened(at).slider(key="explore_zoom_k_512").set_value((10, 50)).run()
    opened(at)
    assert at.number_input(key="explore_zoom_k_512_from").value == 10
    assert at.number_input(key="explore_zoom_k_512_to").value == 50
    opened(at).number_input(key="explore_zoom_k_512_from").set_value(80).run()
    opened(at)
    assert at.slider(key="explore_zoom_k_512").value == (80, 81)
    np.testing.assert_allclose(layer_shown(at).z, full[300:340, 80:81], rtol=0, atol=SHOWN)
    # "Show everything" resets the boxes too
    opened(at).button(key="explore_zoom_reset").click().run()
    opened(at)
    assert at.number_input(key="explore_zoom_q_512_from").value == 0
    assert at.number_input(key="explore_zoom_k_512_to").value == 512
    assert layer_shown(at).z.shape == (256, 256)


def test_token_limit_truncates_with_a_warning():
    at = run_app()
    long_text = " ".join(["The quick brown fox jumps over the lazy dog."] * 20)
    at.text_area(key="text").input(long_text).run()
    at.number_input(key="max_tokens").set_value(8).run()
    assert_clean(at)
    warnings = messages(at.warning)
    assert any("first 8" in w for w in warnings), warnings
    # issue 20 (c): the warning says where the limit is changed, with the control's own label and place
    from app.controls.pickers import LIMIT_EXPANDER, LIMIT_LABEL

    assert LIMIT_LABEL == at.number_input(key="max_tokens").label == "Token limit"
    assert [e.label for e in at.expander if any(w.key == "max_tokens" for w in e.number_input)] == [LIMIT_EXPANDER]
    assert (
        "raise **Token limit** in **Advanced**, under the model picker (this model reads up to 512 tokens)."
        in at.warning[-1].value
    ), warnings
    shown = layer_shown(at)
    assert len(shown.rows) == len(shown.header["k"]) == 8
    assert shown.z.shape == (8, 8)


HUGE = ("word " * 10_000)[:50_000]


def _assert_cut(at: AppTest, limit: int) -> None:
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert assert_head_and_grid(at).z.shape == (limit, limit)
    assert any(f"first {limit}" in w for w in messages(at.warning)), messages(at.warning)


def test_long_typed_text_is_kept_and_cut_with_a_warning():
    """A 50,000-character paste is taken whole (no silent drop in the browser) and cut at the token limit."""
    at = run_app()
    at.number_input(key="max_tokens").set_value(64).run()
    at.text_area(key="text").input(HUGE).run()
    assert len(at.text_area(key="text").value) == len(HUGE)
    _assert_cut(at, 64)


def test_huge_text_in_a_link_does_not_crash():
    """A 50,000-character ``?text=`` deep link (the text area is bound to the URL)."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["text"] = HUGE
    at.run()
    _assert_cut(at, 128)


def test_huge_text_in_session_state_does_not_crash():
    at = run_app(text=HUGE)
    _assert_cut(at, 128)


# ---------------------------------------------------------------- entry point


def test_entry_point_puts_the_repo_root_on_sys_path(tmp_path: Path):
    """``streamlit run app/streamlit_app.py`` puts only ``app/`` on sys.path; the entry point's path
    setup (the lines before ``import streamlit``) must make ``import engine`` work from anywhere."""
    source = APP.read_text(encoding="utf-8")
    setup = source.split("import streamlit as st", 1)[0]
    assert "sys.path" in setup, "the path setup comes before importing streamlit"
    code = (
        "import sys\n"
        f"sys.path = [{str(APP.parent)!r}] + [p for p in sys.path if p not in ('', {str(ROOT)!r})]\n"
        "try:\n"
        "    import engine\n"
        "    raise SystemExit('engine importable without the path setup: the check proves nothing')\n"
        "except ImportError:\n"
        "    pass\n"
        f"__file__ = {str(APP)!r}\n"
        f"exec(compile({setup!r}, __file__, 'exec'))\n"
        "import engine, app.state\n"
        "print(engine.__file__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert Path(result.stdout.strip()).resolve().is_relative_to(ROOT / "engine")


def test_own_stories_model_shows_its_notices_without_stray_output():
    """Our trained decoder: causal by default, unknown words named in a notice, nothing else written."""
    at = run_app(model="tiny-gpt-stories", text="Lily found a quantum ball.")
    assert_clean(at)
    assert at.toggle(key="causal").value is True
    assert any("quantum" in m for m in messages(at.info) + messages(at.warning))
    assert "lily" in " ".join(layer_shown(at).rows)


def test_long_example_on_the_16k_model_is_an_overview_of_every_token():
    """ "Try a long text" on tiny-random-gpt2: 16,384 tokens traced, a 256 × 256 overview, a grid of 4 heads."""
    at = run_app(model="tiny-random-gpt2")
    at.button(key="long_example").click().run()
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert at.number_input(key="max_tokens").value == 16_384
    assert any("**16384 tokens**" in c.value for c in at.caption), [c.value for c in at.caption][:2]
    shown = assert_head_and_grid(at, n_heads=4)
    values = shown.z
    assert values.shape == (256, 256)
    assert shown.rows[-1] == "16320–16383"  # blocks of 64 tokens
    assert np.isnan(values[0, 1:]).all(), "blocks wholly above the diagonal are masked (causal)"
    assert np.isfinite(np.diag(values)).all() and (np.diag(values) > 0).all()
    # MiniLM reads 512 of them, and says so
    at.selectbox(key="model").set_value("minilm").run()
    assert_clean(at)
    assert any("at most 512 tokens" in w for w in messages(at.warning)), messages(at.warning)


def test_a_paste_past_the_character_cap_is_cut_with_a_notice():
    """150,000 characters: kept in the box (no silent drop), read up to 100,000, both cuts said."""
    text = ("The quick brown fox jumps over the lazy dog. " * 3500)[:150_000]
    at = run_app()
    at.text_area(key="text").input(text).run()
    assert_clean(at)
    assert len(at.text_area(key="text").value) == 150_000
    notes = messages(at.warning)
    assert any("longer than 100,000 characters: only the first 100,000 were read" in w for w in notes), notes
    assert any("Those characters have" in w and "only the first 128 were traced" in w for w in notes), notes


def test_the_highlighted_token_links_to_what_made_its_strongest_score():
    """Under the view: Step by step's "What made this score?" for the highlighted query and the key the open head
    weighs most (the view holds the click until the server has its head: tests/e2e)."""
    from urllib.parse import parse_qsl

    at = run_app(focus=3, head=2)
    assert_clean(at)
    (link,) = [link for link in at.get("page_link") if link.proto.page == "step_by_step"]
    key = int(np.argmax(trace_of(at).pattern(0, 2)[3]))
    want = {"layer": "0", "head": "2", "step_query": "3", "step_key": str(key), "step_parts": "1"}
    assert dict(parse_qsl(link.proto.query_string)) == want
    assert link.proto.label.startswith("What made this score?")


def test_each_head_of_the_layer_is_checked_against_its_corpus_role():
    """ "Is each head doing its job?": each head known for a role over the head finder's corpus, its shipped corpus
    average and its share on the typed sentence (head_finder.sentence_metrics, checked by hand in
    tests/unit/test_head_finder.py); no repeated token: a one-click edit repeats the sentence, and the induction
    model's head 1.2 then does its job."""
    import json

    from app.views.explore.jobs import ROLES, role_of
    from engine.analysis.head_finder import sentence_metrics

    text = "qwertyuiop"
    at = run_app(model="induction-2l-attn-only", text=text, layer=1, explore_tab="Is each head doing its job?")
    assert_clean(at)
    doc = json.loads((ROOT / "assets" / "heads" / "induction-2l-attn-only.json").read_text())
    means = {r: np.mean([h[r] for h in doc["heads"]]) for r in ROLES}
    heads = {f"1.{h['head']}": h for h in doc["heads"] if h["layer"] == 1 and role_of(h, means)}
    table = at.dataframe[0].value
    assert list(table["head"]) == list(heads) and "1.2" in heads and role_of(heads["1.2"], means) == "induction"
    row = table[table["head"] == "1.2"].iloc[0]
    assert row["role"] == "Induction" and row["over the corpus"] == heads["1.2"]["induction"]
    assert np.isnan(row["on your sentence"]) and row["verdict"] == "no repeated token here"
    at.button(key="explore_jobs_repeat").click().run()
    assert_clean(at)
    assert at.text_area(key="text").value == f"{text} {text}"
    row = at.dataframe[0].value.set_index("head").loc["1.2"]
    import engine

    want = sentence_metrics(engine.trace(engine.load("induction-2l-attn-only"), f"{text} {text}"), 1)["induction"][2]
    assert row["on your sentence"] == pytest.approx(want) and row["verdict"] == "doing it"
