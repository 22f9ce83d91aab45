"""The chart path every page uses: a figure themed as a JSON dict, sent by ``st.plotly_chart`` as it is.

``theme.style`` writes the theme into ``fig.to_dict()`` with plain dict merges; the reference here is
Plotly's own validated ``update_layout`` / ``update_xaxes`` / ``update_yaxes`` / ``trace.update``
calls (how the theme was applied before), on figures of every shape the pages draw: a titled heatmap,
bars, subplots, a figure without axes, annotations. A :class:`ReadyFigure` must reach the browser
exactly as built, and a shared one must never change when a session outlines a token on it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots
from streamlit.testing.v1 import AppTest

from app.ui import charts, theme


def plotly_styled(fig: go.Figure, t: theme.Theme) -> dict:
    """The theme written through Plotly's validated update calls: the independent reference."""
    tick = {"size": t.tick_px, "color": t.text}
    axis = {"tickfont": tick, "title": {"font": {"size": t.axis_title_px, "color": t.text}}, "color": t.text}
    fig.update_layout(
        font={"color": t.text, "size": t.tick_px},
        paper_bgcolor=t.paper,
        legend={"font": {"size": t.legend_px, "color": t.text}},
        hoverlabel={"font": {"size": max(13, t.tick_px - 2)}},
    )
    if fig.layout.title is not None and fig.layout.title.text:
        fig.update_layout(title={"font": {"size": t.title_px, "color": t.text}})
    fig.update_xaxes(**axis)
    fig.update_yaxes(**axis)
    for trace in fig.data:
        if getattr(trace, "type", "") in {"heatmap", "histogram2d", "contour"} and trace.showscale is not False:
            trace.update(colorbar={"tickfont": tick, "title": {"font": {"size": t.axis_title_px, "color": t.text}}})
    if t.stack:
        for note in fig.layout.annotations or ():
            note.update(font={"size": max(t.tick_px, note.font.size or 0), "color": t.text})
    return fig.to_dict()


def figures() -> dict[str, go.Figure]:
    heat = go.Figure(
        go.Heatmap(z=np.eye(3, dtype=np.float32), colorbar={"title": {"text": "weight"}}),
        layout={"title": {"text": "Layer 0, head 1"}, "height": 400},
    )
    bars = go.Figure(go.Bar(x=["a", "b"], y=[0.2, 0.8]), layout={"legend": {"x": 0.1}})
    grid = make_subplots(1, 2)
    grid.add_trace(go.Heatmap(z=[[1, 2]], showscale=False), 1, 1)
    grid.add_trace(go.Scatter(y=[1, 2]), 1, 2)
    pie = go.Figure(go.Pie(values=[1, 2]))
    notes = go.Figure(
        go.Heatmap(z=[[0.5]]),
        layout={"annotations": [{"text": "L0 H0", "font": {"size": 9}}, {"text": "L0 H1", "font": {"size": 30}}]},
    )
    return {"heatmap": heat, "bars": bars, "subplots": grid, "no axes": pie, "annotations": notes}


@pytest.mark.parametrize("look", [theme.DEFAULT, theme.PRESENTER], ids=lambda t: t.name)
@pytest.mark.parametrize("name", list(figures()))
def test_style_on_the_dict_equals_plotly_updates(name, look):
    fig = figures()[name]
    reference = plotly_styled(go.Figure(fig), look)
    assert theme.style(fig.to_dict(), look) == reference


def test_with_shapes_leaves_the_shared_figure_alone():
    shared = charts.ready(figures()["heatmap"], theme.DEFAULT)
    before = copy.deepcopy(shared.spec)
    framed = charts.with_shapes(shared, [{"type": "rect", "x0": 0, "x1": 1, "y0": 0, "y1": 1}])
    assert shared.spec == before and "shapes" not in shared.spec["layout"]
    assert len(framed.spec["layout"]["shapes"]) == 1 and framed.spec["data"] is shared.spec["data"]
    assert charts.with_shapes(shared, []) is shared


def test_file_name_and_size_read_from_a_ready_figure():
    fig = charts.ready(figures()["heatmap"], theme.DEFAULT)
    assert charts.file_stem(fig, "k") == "Layer_0_head_1"
    assert charts.chart_config(fig, "k")["toImageButtonOptions"]["height"] == 400


def _script() -> None:
    import numpy as np
    import plotly.graph_objects as go

    from app.ui import charts, theme

    fig = go.Figure(go.Heatmap(z=np.arange(6, dtype=np.float32).reshape(2, 3)), layout={"title": {"text": "t"}})
    charts.show_chart(charts.ready(fig, theme.PRESENTER), key="ready")
    charts.show_chart(fig, key="plain")


def test_plotly_chart_sends_the_ready_figure_exactly():
    at = AppTest.from_function(_script, default_timeout=30).run()
    assert not at.exception
    sent = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    fig = go.Figure(go.Heatmap(z=np.arange(6, dtype=np.float32).reshape(2, 3)), layout={"title": {"text": "t"}})
    built = json.loads(json.dumps(charts.ready(fig, theme.PRESENTER).spec))
    full = built["layout"].pop("template")
    lean = sent[0]["layout"].pop("template")
    assert sent[0] == built  # all but the template exactly as built
    assert lean == {**full, "data": {"heatmap": full["data"]["heatmap"]}}  # its layout and its heatmaps' defaults
    assert sent[0]["layout"]["xaxis"]["tickfont"]["size"] == theme.PRESENTER.tick_px
    assert sent[1]["layout"]["xaxis"]["tickfont"]["size"] == theme.DEFAULT.tick_px  # a plain figure: themed on the way
    assert sent[0]["data"][0]["z"]["bdata"]  # typed arrays, not lists of numbers


def _json(fig: charts.ReadyFigure) -> dict:
    return json.loads(json.dumps(fig.spec))


@pytest.mark.parametrize("look", [theme.DEFAULT, theme.PRESENTER], ids=lambda t: t.name)
def test_a_plain_dict_is_sent_as_plotly_would_send_the_figure(look, monkeypatch):
    """``ready(spec)`` (no go.Figure built) equals ``ready(go.Figure(spec))`` for the map builders."""
    from app.ui.head_views import model_view_spec
    from app.ui.heatmap import map_spec
    from app.ui.map_data import exact_map

    monkeypatch.setattr(theme, "current", lambda: look)
    rng = np.random.default_rng(0)
    weights = rng.random((6, 6)).astype(np.float32)
    weights[0, 3:] = np.nan  # blocked cells
    tokens = ["[CLS]", "<b>", "it", "it", "&", "[SEP]"]
    tiles = rng.random((2, 3, 4, 4)).astype(np.float32)
    for build in (
        lambda: map_spec(exact_map(weights, tokens, tokens), title="Layer 0, head 1", scale="linear"),
        lambda: map_spec(exact_map(weights, tokens, tokens), scale="log"),
        lambda: model_view_spec(tiles, selected=(1, 2)),
        lambda: model_view_spec(tiles, layer_names=["L3", "L4"], per_tile=True),
    ):
        assert _json(charts.ready(build(), look)) == _json(charts.ready(go.Figure(build()), look))


def test_typed_arrays_write_what_plotlys_encoder_writes():
    """``charts.typed_arrays`` (the fast walk ``ready`` uses) against Plotly's own ``convert_to_base64`` on a spec
    with every kind of value: arrays of each plain dtype, 2-d and sliced (not contiguous) ones, int64 (Plotly
    narrows it), bool and empty arrays (left as they are), byte-swapped ones, arrays under skipped keys, in lists of
    traces and nested dicts, and label lists."""
    import copy

    from _plotly_utils.utils import convert_to_base64

    rng = np.random.default_rng(3)
    grid = rng.random((5, 7))
    spec = {
        "data": [
            {
                "type": "heatmap",
                "z": grid.astype(np.float32),
                "customdata": grid[:, ::2],  # float64, not contiguous
                "x": np.arange(7),  # int64: narrowed to int8
                "y": np.arange(5, dtype=np.uint16),
                "text": ["<b>", "a", "é"],
                "marker": {"color": rng.integers(-300, 300, 4), "size": np.array([], dtype=np.float32)},
                "selectedpoints": np.array([True, False]),
                "big": np.array([2**40, -(2**40)]),
                "swapped": grid[0].astype(">f8"),
            },
            {"type": "scatter", "x": [1, 2, 3], "y": (np.ones(3, dtype=np.int8),), "range": np.arange(2)},
        ],
        "layout": {"xaxis": {"range": np.array([0.0, 1.0]), "tickvals": np.arange(3.0)}, "title": {"text": "t"}},
    }
    ours, plotlys = copy.deepcopy(spec), copy.deepcopy(spec)
    charts.typed_arrays(ours)
    convert_to_base64(plotlys)
    assert _plain(ours) == _plain(plotlys)
    assert ours["data"][0]["z"]["dtype"] == "f4" and ours["data"][0]["z"]["shape"] == "5, 7"


def _plain(obj):
    """``obj`` with numpy arrays as (dtype, list) pairs: comparable with ``==``."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return ("array", obj.dtype.str, obj.tolist())
    return obj


def test_shared_build_builds_a_figure_once_per_content():
    from app.figures import shared_build
    from app.ui.charts import ReadyFigure, content_key

    calls = []

    def bars(values, *, title=""):
        calls.append(title)
        return {"data": [{"type": "bar", "y": values}], "layout": {"title": {"text": title}}}

    values = np.arange(4, dtype=np.float32)
    first = shared_build(bars, values, title="t")
    assert isinstance(first, ReadyFigure) and calls == ["t"]
    assert shared_build(bars, values.copy(), title="t") is first and calls == ["t"]  # equal numbers: the same figure
    assert shared_build(bars, values + 1, title="t") is not first  # other numbers
    assert shared_build(bars, values, title="u") is not first  # another argument
    assert len(calls) == 3
    assert content_key(values) == content_key(values.copy()) != content_key(values.astype(np.float64))
    assert content_key(values) != content_key(values.reshape(2, 2))  # the shape is part of it
    assert len(content_key(np.zeros((224, 224, 3)))[2]) == 16  # a digest, not the array's bytes
    words = np.array(["the", "cat"], dtype=object)  # bytes that are pointers: keyed by the items
    assert content_key(words) == content_key(np.array(["the", "cat"], dtype=object)) != content_key(words[::-1].copy())

    @dataclasses.dataclass(frozen=True, eq=False)  # as a caption's view: no value equality, arrays inside
    class View:
        weights: np.ndarray
        words: tuple

    key = content_key((values, View(values, ("a",))))  # the arguments of a shared_build call
    hash(key)  # a dataclass inside the arguments is keyed by its fields, not by the object
    assert (
        key
        == content_key((values.copy(), View(values.copy(), ("a",))))
        != content_key((values, View(values + 1, ("a",))))
    )


def test_the_template_sent_keeps_the_defaults_of_the_trace_types_drawn_only():
    """plotly.js styles a trace from ``template.data.<its type>`` alone: the rest of the default template (candlestick,
    sankey, table, … defaults) is cut from what is sent, and so are its colours where every trace is a heatmap with
    a colour scale of its own. A figure with a template of its own, and the shared figure the lean one was made
    from, are left as they are."""
    default = go.Figure().to_dict()["layout"]["template"]
    for name, fig in figures().items():
        shared = charts.ready(fig, theme.DEFAULT)
        before = copy.deepcopy(shared.spec)
        sent = charts.lean_template(shared).spec
        types = {trace.get("type", "scatter") for trace in sent["data"]}
        assert set(sent["layout"]["template"]["data"]) == types & set(default["data"]), name
        for kind, defaults in sent["layout"]["template"]["data"].items():
            assert defaults == default["data"][kind], (name, kind)
        assert sent["layout"]["template"]["layout"] == default["layout"], name
        assert {k: v for k, v in sent["layout"].items() if k != "template"} == {
            k: v for k, v in shared.spec["layout"].items() if k != "template"
        }
        assert shared.spec == before, name  # the shared figure is unchanged
    # heatmaps that all bring their own colour scale (the attention maps) read none of the template's colours,
    # nor do markers in one colour of their own (the grid's click targets)
    scale = [[0, "#ffffff"], [1, "#08306b"]]
    marks = go.Scatter(x=[0], y=[0], mode="markers", marker={"color": "rgba(0,0,0,0.01)"})
    maps = charts.ready(
        go.Figure([go.Heatmap(z=[[1]], colorscale=scale), go.Heatmap(z=[[2]], colorscale=scale), marks])
    )
    template = charts.lean_template(maps).spec["layout"]["template"]
    assert template["layout"] == {k: v for k, v in default["layout"].items() if k not in charts._TRACE_COLOURS}
    heatmap = [{k: v for k, v in default["data"]["heatmap"][0].items() if k != "colorscale"}]
    assert template["data"] == {"heatmap": heatmap, "scatter": default["data"]["scatter"]}
    assert not re.search(r"#0000\d\d", json.dumps(template))  # no placeholder left for the browser to swap
    for mixed in (
        go.Figure([go.Heatmap(z=[[1]], colorscale=scale), go.Heatmap(z=[[2]])]),  # one takes the default scale
        go.Figure([go.Heatmap(z=[[1]], colorscale=scale, coloraxis="coloraxis")]),  # a shared colour axis
        go.Figure([go.Heatmap(z=[[1]], colorscale=scale), go.Scatter(y=[1])]),  # a line: the colorway
        go.Figure([go.Heatmap(z=[[1]], colorscale=scale), go.Scatter(y=[1], mode="markers")]),  # markers: too
    ):
        template = charts.lean_template(charts.ready(mixed)).spec["layout"]["template"]
        assert template["layout"] == default["layout"]
        assert template["data"]["heatmap"] == default["data"]["heatmap"]
    own = charts.ready(go.Figure(go.Bar(y=[1]), layout={"template": "plotly_dark"}), theme.DEFAULT)
    assert charts.lean_template(own) is own
    heat = figures()["heatmap"]
    assert (
        len(json.dumps(charts.lean_template(charts.ready(heat)).spec))
        < len(json.dumps(theme.style(heat.to_dict(), theme.DEFAULT))) - 1500  # the figure with the whole template
    )  # Streamlit's template: ~1.9 kB less for a heatmap
