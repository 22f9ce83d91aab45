"""Number boxes and sliders that survive forged values: a client can send any value for any widget over the
websocket (NaN, ±inf, a string, a list where a number belongs), and Streamlit reads every widget's value when a run
starts, before any page code could catch what it raises. :func:`guard_number_widgets` makes the reading of every
``st.number_input`` and ``st.slider`` fall back to the widget's default when it cannot use the value (Streamlit
itself already does so for a finite number out of range), so the page runs and later runs are not broken.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from streamlit.elements.widgets.number_input import NumberInputSerde
from streamlit.elements.widgets.slider import SliderSerde

GUARDED = (NumberInputSerde, SliderSerde)  # how st.number_input and st.slider read a value the browser sent
UNREADABLE = (TypeError, ValueError, OverflowError)  # int("x"), int(nan), int(inf), "x" < 0, len(3.0)


def _or_default(read: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    @functools.wraps(read)
    def guarded(serde: Any, ui_value: Any) -> Any:
        try:
            return read(serde, ui_value)
        except UNREADABLE:
            return read(serde, None)  # no value from the browser: the widget's default

    guarded.guards_forged_values = True
    return guarded


def guard_number_widgets() -> None:
    """Install the fallback (once per process; every later call does nothing)."""
    for serde in GUARDED:
        if not getattr(serde.deserialize, "guards_forged_values", False):
            serde.deserialize = _or_default(serde.deserialize)
