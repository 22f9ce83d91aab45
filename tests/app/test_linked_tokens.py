"""Linked tokens: a token picked once is outlined (its row and its column) in every map of the page, and
follows the user to Heads and Step by step; long inputs outline the block that holds it."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.ui.linked_tokens import FOCUS_COLOR, column_of, outline, row_of
from app.ui.map_data import exact_map
from apptest_helpers import ROOT, assert_clean, layer_shown, run_app

SENTENCE = "The cat sat on the mat because it was warm."


def frames(fig: dict) -> list[dict]:
    return [s for s in fig["layout"].get("shapes", []) if s.get("line", {}).get("color") == FOCUS_COLOR]


def by_key(at, key: str) -> dict:
    import json

    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key == key)


def test_picking_a_token_outlines_its_row_and_column_on_explore():
    """The view draws the outline itself (a row clicked there: ``layer_view.take`` leaves it in session state as
    below); the server's maps (the mask pair) outline the same token and the link keeps it."""
    at = run_app(text=SENTENCE)
    assert_clean(at)
    assert layer_shown(at).header["focus"] is None
    at.session_state["focus"] = 8  # "it"
    at.run()
    assert_clean(at)
    header = layer_shown(at).header
    assert header["focus"] == 8 and header["q"][8].endswith(" it") and header["square"]
    assert header["q_first"][8] == header["k_first"][8] == 8  # a row and a column a token: the 9th of each
    at.session_state["explore_tab"] = "Causal mask off vs on"
    at.run()
    assert frames(by_key(at, "mask_False")) and frames(by_key(at, "mask_True"))  # the pair too
    assert at.query_params.get("focus") == "8"


def test_the_highlight_follows_to_heads_and_step_by_step():
    at = run_app(text=SENTENCE)
    at.session_state["focus"] = 3
    at.run()
    at.switch_page(str(ROOT / "app" / "views" / "heads" / "page.py")).run()
    assert_clean(at)
    assert at.pills(key="heads_focus_pills").value == 3 and layer_shown(at).header["focus"] == 3
    at.switch_page(str(ROOT / "app" / "views" / "step_by_step" / "page.py")).run()
    assert_clean(at)
    assert at.selectbox(key="step_query").value == 3  # the query token is the highlighted one
    at.selectbox(key="step_query").set_value(5).run()
    assert at.session_state["focus"] == 5  # and back: picking a query highlights it elsewhere
    at.switch_page(str(ROOT / "app" / "views" / "explore" / "page.py")).run()
    assert layer_shown(at).header["focus"] == 5


def test_clearing_the_highlight():
    at = run_app(text=SENTENCE, focus=2)
    assert layer_shown(at).header["focus"] == 2
    at.session_state["focus"] = None
    at.run()
    assert_clean(at)
    assert layer_shown(at).header["focus"] is None and "focus" not in at.query_params


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
