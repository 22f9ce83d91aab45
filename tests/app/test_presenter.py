"""Presenter mode, the chart theme, chart downloads and the JSON of a view.

Unit tests check the numbers the theme promises (tick sizes, contrast ≥ 4.5:1 by the WCAG formula) and
the JSON records (rows of the pattern sum to 1, a link is present) on small synthetic traces; AppTests
check that ``?present=1`` and the toggle switch the figures the pages send, and that every chart carries
its download settings. The browser side (rendered font size, downloads) is tests/e2e/test_presenter_e2e.py.
"""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from app import links
from app.state import Look
from app.ui import charts, export, theme
from app.ui.map_data import MapView, head_map
from apptest_helpers import assert_clean, layer_shown, open_page, run_app
from engine.analysis.stepwise import query_steps
from engine.traces.attention import AttentionTrace
from tests.trace_helpers import random_trace


def contrast(fg: str, bg: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours."""

    def lum(hex_color: str) -> float:
        rgb = [int(hex_color.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


# ---------------------------------------------------------------- theme values


@pytest.mark.parametrize("t", [theme.DEFAULT, theme.PRESENTER], ids=lambda t: t.name)
def test_text_contrast_is_at_least_4_5(t):
    assert contrast(t.text, t.paper) >= 4.5
    assert contrast("#808495", "#ffffff") < 4.5  # Streamlit's own tick grey, which the theme overrides


def test_presenter_type_is_large_and_the_scale_colour_blind_safe():
    p = theme.PRESENTER
    assert p.tick_px >= 16 and p.title_px > p.axis_title_px >= p.tick_px
    assert p.colorscale in {"Cividis", "Viridis"} and len(p.colors) >= 8
    assert p.stack and "font-size" in p.css
    assert theme.DEFAULT.tick_px >= 12 and not theme.DEFAULT.stack


def test_style_writes_fonts_and_colours_into_the_layout():
    fig = go.Figure(go.Heatmap(z=[[0, 1], [1, 0]]), layout={"title": {"text": "t"}})
    spec = theme.style(fig.to_dict(), theme.PRESENTER)
    lay = spec["layout"]
    assert lay["xaxis"]["tickfont"] == {"size": 18, "color": "#000000"}
    assert lay["yaxis"]["tickfont"]["size"] == 18 and lay["title"]["font"]["size"] == 26
    assert lay["paper_bgcolor"] == "#ffffff" and spec["data"][0]["colorbar"]["tickfont"]["size"] == 18


def test_chart_config_names_the_file_and_keeps_the_download_button():
    fig = go.Figure(layout={"title": {"text": "Layer 2, head 3 · causal"}, "height": 500})
    config = charts.chart_config(fig, "main", {"displayModeBar": False})
    opts = config["toImageButtonOptions"]
    assert opts["filename"] == "Layer_2_head_3_causal" and opts["format"] in theme.DOWNLOAD_FORMATS
    assert opts["height"] == 500 and "displayModeBar" not in config  # the bar holds the download button


# ---------------------------------------------------------------- JSON records


def head_json(tr: AttentionTrace, **fields) -> dict:
    """:func:`export.head_record` of layer 0's self-attention in model "m" (``fields``: the rest), as its JSON reads."""
    return json.loads(export.to_json(export.head_record(model_id="m", att=tr, layer=0, block="self", **fields)))


def test_head_record_rows_sum_to_one_and_carry_the_link():
    tr = random_trace(7, causal=True)
    link = links.page_link("http://host:8501/explore", {"text": "a b", "layer": 0, "present": True})
    region = ((0, tr.n_queries), (0, tr.n_keys))
    shown = head_map(tr, MapView(0, 1))
    data = head_json(tr, page="explore", head=1, region=region, settings={"causal": True}, link=link, shown=shown)
    pattern = np.array(data["pattern"], dtype=float)
    np.testing.assert_allclose(pattern.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(pattern, tr.pattern(0, 1), atol=1e-7)
    assert np.all(pattern[np.triu_indices(tr.n_queries, 1)] == 0)  # the causal mask's zeros
    assert data["tokens"]["query"] == list(tr.tokens.strings) and data["layer"] == 0 and data["head"] == 1
    assert data["link"] == "http://host:8501/explore?text=a+b&layer=0&present=1"
    assert "shown" not in data  # the map drawn is the exact pattern: not repeated


def test_head_record_of_a_zoomed_region_and_hidden_columns():
    tr = random_trace(9)
    shown = head_map(tr, MapView(0, 0, q_range=(2, 5), hide_sinks=True))
    data = head_json(tr, page="heads", head=0, region=((2, 5), (0, 9)), settings={}, link="/heads", shown=shown)
    assert data["positions"]["query"] == [2, 5] and len(data["pattern"]) == 3
    np.testing.assert_allclose(np.sum(data["pattern"], axis=1), 1.0, atol=1e-5)
    assert data["shown"]["key_positions"] == list(range(1, 8))  # [CLS] and [SEP] hidden


def test_steps_record_writes_minus_infinity_as_text():
    tr = random_trace(6, causal=True)
    steps = query_steps(tr, 0, 1, 2)
    data = json.loads(
        export.to_json(
            export.steps_record(
                model_id="m", att=tr, layer=0, head=1, block="self", query=2, steps=steps, settings={}, link="/x"
            )
        )
    )
    assert abs(sum(data["pattern"][0]) - 1) < 1e-9 and data["scores"]["softmax_input"][5] == "-inf"
    np.testing.assert_allclose(data["pattern"][0], tr.pattern(0, 1)[2], atol=1e-6)


# ---------------------------------------------------------------- the app


def test_present_in_the_url_turns_presenter_mode_on():
    at = run_app(query={"present": "1"})
    assert_clean(at)
    assert at.toggle(key=Look.present).value is True
    look = layer_shown(at).header  # the map is drawn in the browser with the projector's font and colours
    assert look["font_px"] >= 16 and look["colors"] == list(theme.PRESENTER.colors)  # Cividis
    assert any(e.label.startswith("Sentence, model") for e in at.expander)  # controls folded away


def test_default_view_has_dark_ticks_and_json_download():
    at = run_app()
    assert_clean(at)
    assert at.toggle(key=Look.present).value is False
    for chart in at.get("plotly_chart"):
        fig = json.loads(chart.proto.spec)
        assert contrast(fig["layout"]["xaxis"]["tickfont"]["color"], fig["layout"]["paper_bgcolor"]) >= 4.5
        config = json.loads(chart.proto.config)
        assert config["toImageButtonOptions"]["format"] == "png"
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the numbers as JSON" in labels


def test_svg_setting_reaches_every_chart():
    at = run_app(**{Look.download: "svg", "explore_tab": "Causal mask off vs on"})
    assert_clean(at)
    assert layer_shown(at).header["download"] == "svg"  # the view's own button saves an SVG too
    configs = [json.loads(c.proto.config) for c in at.get("plotly_chart")]
    assert configs and all(c["toImageButtonOptions"]["format"] == "svg" for c in configs)


@pytest.mark.parametrize("page", ["heads", "step_by_step"])
def test_presenter_mode_and_json_on_heads_and_step_by_step(page):
    at = open_page(page, **{Look.present: True})
    assert_clean(at)
    assert any(e.label.startswith("Sentence") for e in at.expander)  # the sentence/model controls folded away
    assert all(json.loads(c.proto.spec)["layout"]["xaxis"]["tickfont"]["size"] >= 16 for c in at.get("plotly_chart"))
    assert "Download the numbers as JSON" in [b.proto.label for b in at.get("download_button")]


def _zmax(at: AppTest, key: str) -> float:
    chart = next(c for c in at.get("plotly_chart") if c.key == key)
    return json.loads(chart.proto.spec)["data"][0]["zmax"]


def test_maps_compared_side_by_side_share_one_colour_scale():
    at = run_app()
    at.session_state["explore_tab"] = "Causal mask off vs on"
    at.run()
    assert_clean(at)
    assert _zmax(at, "mask_False") == _zmax(at, "mask_True")
    heads = open_page("heads")
    heads.session_state["heads_tab"] = "Compare"
    heads.run()
    assert_clean(heads)
    assert _zmax(heads, "heads_cmp_A") == _zmax(heads, "heads_cmp_B")
    assert _zmax(heads, "heads_sent_A") == _zmax(heads, "heads_sent_B")


def test_head_similarity_labels_are_full_size():
    at = open_page("heads")
    at.session_state["heads_tab"] = "Head similarity"
    at.run()
    assert_clean(at)
    chart = next(c for c in at.get("plotly_chart") if c.key == "heads_similarity")
    fig = json.loads(chart.proto.spec)
    assert fig["layout"]["yaxis"]["tickfont"]["size"] >= 13 and fig["layout"]["xaxis"]["tickfont"]["size"] >= 13
    n_rows = len(fig["layout"]["yaxis"]["tickvals"])
    assert n_rows * 15 <= fig["layout"]["height"] - 140  # a full line of type per printed label (MiniLM: 72 heads)
