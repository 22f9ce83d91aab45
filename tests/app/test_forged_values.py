"""Forged widget values (issue 44, item 7): a client may send any value for a number box or a slider over the
websocket; the page runs without an exception box, the widget reads its default, and the session keeps working.
Streamlit reads widget values before the page runs, so app/ui/forged_values.py guards how it reads them."""

from __future__ import annotations

import math

import pytest

from apptest_helpers import assert_clean, forge, open_page

#: what a mischievous client sends: NaN, ±inf, a string, a list where one number belongs and the reverse (a
#: slider's value is a list)
UNREADABLE = (
    {"double_value": math.nan},
    {"double_value": math.inf},
    {"double_value": -math.inf},
    {"string_value": "12; DROP TABLE"},
    {"double_array_value": [math.nan]},
    {"double_array_value": [math.inf, 1.0]},
    {"string_array_value": ["x"]},
)
OUT_OF_RANGE = ({"double_value": 1e308}, {"int_value": 2**62}, {"double_array_value": [-1e9]})
#: (page, widget key, kind, bounded, its default as Streamlit defines it: ``value=``, else ``min_value``, else 0; a page that
#: keeps its setting in session state, as Train does, reads and checks it on the server as it does any value)
WIDGETS = (
    ("step_by_step", "step_calc_tokens", "number_input", True, 3),  # a whole number in 3 … 5: its minimum
    ("step_by_step", "step_calc_scale_2", "slider", True, 0.0),  # a float slider from 0: its minimum
    ("step_by_step", "max_tokens", "number_input", True, 128),  # value=128
    ("train", "train_lr", "number_input", False, 0.0),  # a float box with no bounds
    ("train", "train_n_layers", "slider", True, 1),  # a whole-number slider from 1
    ("train", "train_steps", "number_input", False, 0),  # a whole-number box with no bounds
)


@pytest.mark.parametrize("page, key, kind, bounded, default", WIDGETS, ids=[w[1] for w in WIDGETS])
def test_a_forged_number_falls_back_to_the_widget_s_default(page, key, kind, bounded, default):
    """Without the guard, each unreadable value showed Streamlit's exception box, on this run and every later one."""
    at = open_page(page)
    assert_clean(at)
    for value in UNREADABLE + (OUT_OF_RANGE if bounded else ()):
        forge(at, key, **value)
        assert_clean(at)
        assert getattr(at, kind)(key=key).value == pytest.approx(default), value
        at.run()  # the session is not broken: the next run is clean too
        assert_clean(at)
