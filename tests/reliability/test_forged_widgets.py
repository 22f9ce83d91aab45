"""Forged widget values over Streamlit's own websocket protocol: no generic error box, no harm to others.

A mischievous student need not use the page: the browser sends each widget's value as a typed field of a
``WidgetState`` (``int_value``, ``double_value``, ``string_value``, …), and a hand-made client can send
any field with any value. For every widget of every page this test sends values of the wrong type
(NaN, infinity, a string with a NUL, a string list, broken JSON) from a session of its own and checks:

- a value of the widget's own type that the page never offers (an unknown option, a NUL in a text,
  an index out of range) never shows Streamlit's exception box ("This app has encountered an error"):
  the page copes, or its guard shows one calm message (``app/ui/guard.py``). The exceptions:
  a non-finite or out-of-range number in a number input or slider, and any value of another type,
  which Streamlit's own deserializer refuses in ``SessionState.on_script_will_rerun``, before the
  app's code runs (measured: ``number_input.deserialize`` raises ``cannot convert float NaN to
  integer``); the outside review accepted that box for the sender of a forged request;
- afterwards a fresh session still gets Explore with its charts, and the server is healthy.

The client is the load benchmarks' (``bench/st_client.py``); the server is started as the README says.
"""

from __future__ import annotations

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from bench.serve import healthy, running_server
from bench.st_client import Session
from tests.async_helpers import run_async

pytestmark = pytest.mark.reliability

PAGES = [
    "",
    "lessons",
    "step_by_step",
    "heads",
    "bertviz_views",
    "positional",
    "vit",
    "captions",
    "bahdanau",
    "train",
    "pretraining",
]
SKIP = {"plotly_chart", "file_uploader"}  # chart selections and uploads have their own tests


#: values of the type each widget kind sends (Streamlit's value_type), but ones the page never offers
IN_TYPE = {
    "text_area": [("a NUL and markup", "string_value", "abc\x00<b>[x](http://e.x)")],
    "text_input": [("a NUL and markup", "string_value", "abc\x00<b>[x](http://e.x)")],
    "selectbox": [("an option that does not exist", "string_value", "no such option")],
    "radio": [("an option that does not exist", "string_value", "no such option")],
    "number_input": [
        ("NaN", "double_value", float("nan")),
        ("infinity", "double_value", float("inf")),
        ("-1e300", "double_value", -1e300),
    ],
    "slider": [("NaN", "double_array_value", [float("nan")]), ("1e30", "double_array_value", [1e30, -1e30])],
    "checkbox": [("true", "bool_value", True)],
    "multiselect": [("unknown options", "string_array_value", ["no such option", ""])],
    "button_group": [("unknown options", "string_array_value", ["no such option"])],
    "button": [("a press", "trigger_value", True)],
}
#: widgets whose own deserializer raises on a non-finite or out-of-range number, before the app runs
STREAMLIT_REFUSES = ("number_input", "slider")
#: values of another type than the widget sends
OTHER_TYPE = [
    ("NaN", "double_value", float("nan")),
    ("a string", "string_value", "abc"),
    ("broken JSON", "json_value", "{not json"),
    ("a string list", "string_array_value", ["x", "y"]),
]


def forged_states(widget_id: str, forgeries) -> list[tuple[str, WidgetState]]:
    out = []
    for name, field, value in forgeries:
        state = WidgetState(id=widget_id)
        if field in ("string_array_value", "double_array_value"):
            getattr(state, field).data.extend(value)
        else:
            setattr(state, field, value)
        out.append((name, state))
    return out


async def forge_everything(url: str) -> tuple[dict[str, list[str]], list[str]]:
    """Every widget of every page, forged from a session of its own: failures by kind of forgery."""
    failures: dict[str, list[str]] = {"in type": [], "other type": []}
    widgets_seen: list[str] = []
    for page in PAGES:
        probe = Session(url, timeout_s=120)
        await probe.open()
        first = await probe.rerun({}, page_name=page)
        assert first.failure is None, f"{page or 'explore'} fails before any forgery: {first.failure}"
        widgets = [(kind, w) for kind, w in probe.widgets if kind not in SKIP]
        await probe.close()
        for kind, widget in widgets:
            label = f"{page or 'explore'} · {kind} {getattr(widget, 'label', '')!r}"
            widgets_seen.append(label)
            for which, forgeries in (("in type", IN_TYPE.get(kind, [])), ("other type", OTHER_TYPE)):
                forger = Session(url, timeout_s=120)  # a session per widget and kind: a forged value sticks to it
                await forger.open()
                await forger.rerun({}, page_name=page)
                for name, state in forged_states(widget.id, forgeries):
                    run = await forger.rerun({}, states=[state])
                    if run.failure not in (None, "error box"):
                        failures[which].append(f"{label} ← {name}: {run.failure}")
                await forger.close()
    return failures, widgets_seen


def test_forged_widget_values_never_crash_a_page():
    with running_server("streamlit", "reliability-forged.log") as server:
        failures, widgets = run_async(forge_everything(server.url))
        assert len(widgets) >= 40, f"too few widgets found to mean anything: {widgets}"
        ours = [f for f in failures["in type"] if not any(f" · {k} " in f for k in STREAMLIT_REFUSES)]
        assert not ours, "\n".join(ours)
        # the server is fine for everyone else
        assert healthy(server.url)

        async def fresh() -> tuple[str | None, int]:
            s = Session(server.url, timeout_s=120)
            run = await s.open()
            await s.close()
            return run.failure, run.messages

        failure, messages = run_async(fresh())
        assert failure is None and messages > 5
