"""Shared AppTest helpers for every page's tests (``from apptest_helpers import ...``).

AppTest runs the real script with no browser (no JavaScript, nothing drawn): it checks what the page
sends to the browser. Model and trace caches are shared by every AppTest in one pytest process.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from engine.views.layer_view import decode as decode_view

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app" / "streamlit_app.py"  # absolute: AppTest resolves relative paths against the caller
TIMEOUT = 60  # seconds per run: the first run loads MiniLM (7–10 s, more on a busy 2-core machine)

_DTYPES = {"f8": "<f8", "f4": "<f4", "i1": "<i1", "u1": "<u1", "i2": "<i2", "u2": "<u2", "i4": "<i4", "u4": "<u4"}


def decode(value) -> np.ndarray:
    """A Plotly JSON array as numpy: either a (nested) list or ``{"dtype", "bdata", "shape"}``."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=_DTYPES.get(value["dtype"], value["dtype"]))
        shape = value.get("shape")
        if shape is not None:
            if isinstance(shape, str):
                shape = [int(s) for s in shape.split(",")]
            arr = arr.reshape(shape)
        return arr.astype(float)
    # plain JSON: NaN is written as null
    return np.array(value, dtype=float)  # None → nan


def run_app(*, query: dict[str, str] | None = None, **state) -> AppTest:
    """A fresh session of the app, after one run (``query`` in its URL and ``state`` in session_state first)."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update(query or {})
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    return at


def png_bytes(array: np.ndarray) -> bytes:
    """``array`` (``uint8``, grey or RGB) as the bytes of a PNG file, for an upload."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def figures(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def main_figure(at: AppTest) -> dict:
    figs = figures(at)
    assert figs, "no plotly chart on the page"
    return figs[0]


@dataclass(frozen=True)
class Shown:
    """What an in-browser layer view (``app/ui/layer_view.py``) was sent: its header and every head's weights
    ``[layers, heads, rows, cols]`` (NaN: blocked) as the view shows them (3 decimals)."""

    header: dict
    values: np.ndarray

    @property
    def title(self) -> str:  # as the view's heading reads
        return f"Layer {self.header['layer']}, head {self.header['head']}{self.header['suffix']}"

    @property
    def z(self) -> np.ndarray:  # the open head
        return self.values[self.header["layers"].index(self.header["layer"]), self.header["head"]]

    @property
    def rows(self) -> list[str]:
        return self.header["q"]


def layer_shown(at: AppTest, index: int = 0) -> Shown:
    """The ``index``-th in-browser layer view of the last run."""
    views = at.get("bidi_component")
    assert len(views) > index, "no in-browser layer view on the page"
    return Shown(*decode_view(views[index].proto.bytes))


def y_labels(fig: dict) -> list[str]:
    return list(fig["layout"]["yaxis"]["ticktext"])


def title(fig: dict) -> str:
    t = fig["layout"].get("title", {})
    return t.get("text", "") if isinstance(t, dict) else str(t)


def z(fig: dict) -> np.ndarray:
    return decode(fig["data"][0]["z"])


def grid_tiles(fig: dict) -> list[tuple[int, np.ndarray]]:
    """A shapes-only grid's tiles (``head_views.share_tiles``): ``(x0, z)`` of each heatmap trace, in order."""
    return [(int(t.get("x0", 0)), decode(t["z"])) for t in fig["data"] if t.get("type") == "heatmap"]


def assert_clean(at: AppTest) -> None:
    """No uncaught exception on the page (nor one the page's guard caught: app/ui/guard.py), and
    nothing written by Streamlit's "magic" by accident."""
    from app.ui.guard import MESSAGE

    assert not at.exception, [e.value for e in at.exception]
    assert not any(MESSAGE in shown(str(e.value)) for e in at.error), (
        "the page's guard caught an exception (see the log)"
    )
    assert not at.get("help"), "an expression statement was rendered by st.help magic"


def shown(markdown: str) -> str:
    """What the browser shows for a markdown source: backslash escapes of punctuation and the invisible word
    joiners the app puts into would-be links and the direction isolates around typed text removed."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).translate({0x2060: None, 0x2068: None, 0x2069: None})


def messages(elements) -> list[str]:
    """The text of messages/captions as shown (user text inside them is markdown-escaped by the app)."""
    return [shown(str(e.value)) for e in elements]


def assert_not_an_image(at: AppTest, uploader_key: str) -> None:
    """A text file named ``notes.png`` put in the uploader ``uploader_key``: the page runs cleanly, its error names the
    file and says it is not an image, and no chart is drawn."""
    text = ("notes.png", b"just some text, not a picture\n" * 5, "image/png")
    at.file_uploader(key=uploader_key).set_value(text).run()
    assert_clean(at)
    errors = messages(at.error)
    assert any("notes.png" in e and "not an image" in e for e in errors), errors
    assert not at.get("plotly_chart")


def open_page(page: str, **state) -> AppTest:
    """A fresh session switched to ``app/views/<page>/page.py`` (state preset before the first run)."""
    at = run_app(**state)
    at.switch_page(str(ROOT / "app" / "views" / page / "page.py"))
    at.run()
    return at


def forge(at: AppTest, key: str, **value) -> AppTest:
    """Run ``at`` once as a client that sends its own value for the widget ``key`` over the websocket: ``value`` is
    one field of Streamlit's WidgetState (``double_value=math.nan``, ``string_value="x"``, ``double_array_value=[…]``);
    every other widget keeps the value the page sent. AppTest has no public way to send a value its widget classes
    would not make, hence its internal ``_tree`` and ``_run``."""
    from streamlit.proto.WidgetStates_pb2 import WidgetStates

    (target,) = [w.id for w in at._tree if getattr(w, "key", None) == key and hasattr(w, "_widget_state")]
    states = WidgetStates()
    for state in at._tree.get_widget_states().widgets:
        if state.id != target:
            states.widgets.add().CopyFrom(state)
    forged = states.widgets.add()
    forged.id = target
    ((field, data),) = value.items()
    if field.endswith("_array_value"):
        getattr(forged, field).data.extend(data)
    else:
        setattr(forged, field, data)
    return at._run(states)


def run_until(at: AppTest, condition, timeout: float = 120.0, what: str = "the page") -> AppTest:
    """Rerun ``at`` until ``condition(at)`` holds: a long job (engine.jobs) ends in its own thread and the
    page's polling fragment does not tick under AppTest, so each ``run()`` plays one poll."""
    import time

    deadline = time.monotonic() + timeout
    while not condition(at):
        assert not at.exception, [e.value for e in at.exception]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
        at.run()
    return at


def assert_head_and_grid(at: AppTest, n_heads: int | None = None) -> Shown:
    """Explore drew its default view: the layer's heads in the browser view (no Plotly map, no picture), each head a
    pattern of the open layer; returns what the view was sent."""
    assert not at.get("plotly_chart") and not at.get("image"), [c.key for c in at.get("plotly_chart")]
    shown = layer_shown(at)
    assert len(at.get("bidi_component")) == 1 and shown.header["layer"] in shown.header["layers"]
    assert n_heads is None or shown.header["n_heads"] == n_heads
    return shown
