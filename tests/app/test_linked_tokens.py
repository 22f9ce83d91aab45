"""Linked tokens: a token picked once is outlined (its row and its column) in every map of the page, and
follows the user to Heads and Step by step; long inputs outline the block that holds it."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.ui.linked_tokens import FOCUS_COLOR, column_of, outline, row_of
from app.ui.map_data import exact_map
from apptest_helpers import ROOT, assert_clean, run_app

SENTENCE = "The cat sat on the mat because it was warm."


def frames(fig: dict) -> list[dict]:
    return [s for s in fig["layout"].get("shapes", []) if s.get("line", {}).get("color") == FOCUS_COLOR]


def by_key(at, key: str) -> dict:
    import json

    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key == key)


def test_picking_a_token_outlines_its_row_and_column_on_explore():
    at = run_app(text=SENTENCE)
    assert_clean(at)
    assert not frames(by_key(at, "main_heatmap"))
    strings = at.session_state["explore_focus_pills"] if "explore_focus_pills" in at.session_state else None
    assert strings is None
    at.pills(key="explore_focus_pills").set_value(8).run()  # "it"
    assert_clean(at)
    assert at.session_state["focus"] == 8
    boxes = frames(by_key(at, "main_heatmap"))
    n = len(by_key(at, "main_heatmap")["layout"]["yaxis"]["ticktext"])
    assert {(b["y0"], b["y1"]) for b in boxes if b["x0"] == -0.5} == {(7.5, 8.5)}  # the row of "it"
    assert {(b["x0"], b["x1"]) for b in boxes if b["y0"] == -0.5} == {(7.5, 8.5)}  # its column
    assert all(b["x1"] == n - 0.5 or b["y1"] == n - 0.5 for b in boxes)
    at.session_state["explore_tab"] = "Causal mask off vs on"
    at.run()
    assert frames(by_key(at, "mask_False")) and frames(by_key(at, "mask_True"))  # the pair too
    assert at.query_params.get("focus") == "8"


def test_the_highlight_follows_to_heads_and_step_by_step():
    at = run_app(text=SENTENCE)
    at.pills(key="explore_focus_pills").set_value(3).run()
    at.switch_page(str(ROOT / "app" / "views" / "heads" / "page.py")).run()
    assert_clean(at)
    assert at.pills(key="heads_focus_pills").value == 3 and frames(by_key(at, "heads_large"))
    at.switch_page(str(ROOT / "app" / "views" / "step_by_step" / "page.py")).run()
    assert_clean(at)
    assert at.selectbox(key="step_query").value == 3  # the query token is the highlighted one
    at.selectbox(key="step_query").set_value(5).run()
    assert at.session_state["focus"] == 5  # and back: picking a query highlights it elsewhere


def test_clearing_the_highlight():
    at = run_app(text=SENTENCE, focus=2)
    at.pills(key="explore_focus_pills").set_value(None).run()
    assert_clean(at)
    assert at.session_state["focus"] is None and not frames(by_key(at, "main_heatmap"))


def test_row_and_column_of_a_pooled_map_are_the_blocks_that_hold_the_token():
    from app.ui.map_data import MapData

    data = MapData(
        values=np.zeros((4, 3), np.float32),
        q_labels=("a", "b", "c", "d"),
        k_labels=("x", "y", "z"),
        q_edges=np.array([10, 15, 20, 25, 30]),
        k_pos=np.array([0, 2, 3, 4, 7, 8]),
        k_edges=np.array([0, 2, 4, 6]),
        pooled=True,
    )
    assert row_of(data, 10) == 0 and row_of(data, 24) == 2 and row_of(data, 9) is None and row_of(data, 30) is None
    assert column_of(data, 0) == 0 and column_of(data, 2) == 0 and column_of(data, 3) == 1 and column_of(data, 8) == 2
    assert column_of(data, 1) is None  # a hidden key: no column to outline
    fig = outline(go.Figure(), data, 22)
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].y0 == 1.5  # row only: key 22 is not drawn


def test_exact_map_outline_positions():
    data = exact_map(np.eye(3), ["a", "b", "c"], ["a", "b", "c"])
    fig = outline(go.Figure(), data, 1)
    assert sorted((s.x0, s.x1, s.y0, s.y1) for s in fig.layout.shapes) == [(-0.5, 2.5, 0.5, 1.5), (0.5, 1.5, -0.5, 2.5)]
