"""The charts a running job's page redraws on every poll are plain figure dicts (no Plotly validation per poll).

The reference is Plotly's own validator: each dict must build a ``go.Figure`` unchanged in what it draws (the
same traces, values and axes), and the head-score table must equal pandas' pivot of the long rows it replaced.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.views.pretraining.finetune import running_figure
from app.views.train.charts import accuracy_chart, attention_grid, head_score_chart, loss_chart, score_frame


def snapshots(n: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(step=12 * (i + 1)) for i in range(n)]


def test_score_frame_equals_the_pivot_of_long_rows():
    rng = np.random.default_rng(0)
    scores = [rng.random((2, 3)) for _ in range(5)]
    snaps = snapshots(5)
    long = pd.DataFrame(
        [
            {"step": s.step, "head": f"L{layer} H{head}", "score": float(g[layer, head])}
            for s, g in zip(snaps, scores, strict=True)
            for (layer, head), _ in np.ndenumerate(g)
        ]
    )
    expected = long.pivot_table(index="step", columns="head", values="score", sort=False).reset_index()
    got = score_frame(snaps, scores)
    assert list(got.columns) == ["step", "L0 H0", "L0 H1", "L0 H2", "L1 H0", "L1 H1", "L1 H2"]
    pd.testing.assert_frame_equal(got, expected[got.columns], check_names=False, check_dtype=False)
    assert len(score_frame(snaps[:3], scores)) == 3  # fewer snapshots than scores: as zip did


def test_curves_are_valid_plotly_dicts_with_the_same_numbers():
    frame = pd.DataFrame(
        {
            "step": [12, 24, 36],
            "training loss": [2.0, 1.0, 0.5],
            "evaluation loss": [2.1, 1.2, 0.7],
            "exact match": [0.0, 0.4, 0.9],
            "token accuracy": [0.2, 0.6, 0.95],
        }
    )
    for spec, columns in (
        (loss_chart(frame, 24), ["training loss", "evaluation loss"]),
        (accuracy_chart(frame, "exact match"), ["exact match", "token accuracy"]),
    ):
        assert isinstance(spec, dict)
        fig = go.Figure(spec)  # Plotly's validator: raises on any property it does not know
        assert [t.name for t in fig.data] == columns
        for trace, column in zip(fig.data, columns, strict=True):
            np.testing.assert_array_equal(trace.x, frame["step"])
            np.testing.assert_allclose(trace.y, frame[column])
    assert go.Figure(loss_chart(frame, 24)).layout.shapes[0].x0 == 24  # the time-lapse rule
    wide = score_frame(snapshots(3), [np.full((1, 2), v) for v in (0.1, 0.5, 0.9)])
    fig = go.Figure(head_score_chart(wide, 36))
    assert [t.name for t in fig.data] == ["L0 H0", "L0 H1"]
    np.testing.assert_allclose(fig.data[1].y, [0.1, 0.5, 0.9])


def test_running_curve_is_a_valid_plotly_dict():
    fig = go.Figure(running_figure([25, 50], [0.4, 0.8], 200))
    np.testing.assert_allclose(fig.data[0].y, [0.4, 0.8])
    assert list(fig.layout.xaxis.range) == [0, 200]
    assert fig.layout.shapes[0].y0 == 0.5 and fig.layout.annotations[0].text == "chance"
    assert not go.Figure(running_figure([25], [0.4], 200, chance=None)).layout.shapes


def test_attention_grid_is_a_valid_plotly_dict_on_a_colour_scale_of_stops():
    rng = np.random.default_rng(1)
    patterns = rng.random((2, 3, 4, 4)).astype(np.float32)
    blocked = np.triu(np.ones((4, 4), dtype=bool), k=1)
    spec = attention_grid(patterns, ["a", "b", "c", "d"], ideal=np.eye(4), blocked=blocked)
    assert isinstance(spec, dict)
    scale = spec["data"][0]["colorscale"]
    assert isinstance(scale, list) and scale[0][0] == 0 and scale[-1][0] == 1  # never a name plotly.js reads otherwise
    fig = go.Figure(spec)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (2 * 5 - 1, 4 * 5 - 1)  # 2 layers x (3 heads + ideal), one empty cell between tiles
    np.testing.assert_allclose(z[0, :4], np.where(blocked[0], np.nan, patterns[0, 0, 0]), equal_nan=True)
    assert list(fig.layout.xaxis.ticktext) == ["H0", "H1", "H2", "ideal"]
