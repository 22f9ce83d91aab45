"""The room's screens (issue 21, item 7) as the server sends them: the projector's Explore, a phone's view and
the share box's full-screen QR code. What the browser draws of them (boxes, overlaps) is
tests/e2e/test_room_screens_e2e.py."""

from __future__ import annotations

import json

import numpy as np
from streamlit.testing.v1 import AppTest

from app.state import Look
from app.ui import share_box, theme
from app.ui.share_box import Share
from apptest_helpers import APP, TIMEOUT, assert_clean, decode, layer_shown

SHOWN = 5e-4 + 1e-6  # the view's weights travel to 3 decimals

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1"
)
ANDROID = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36"
)
DESKTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36"


def run(present: bool = False, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    if present:
        at.query_params["present"] = "1"
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert_clean(at)
    return at


def charts(at: AppTest) -> dict[str, tuple[dict, dict]]:
    """Every Plotly chart by its key: (figure, config)."""
    return {
        c.proto.id.rsplit("-", 1)[-1] if not c.key else c.key: (json.loads(c.proto.spec), json.loads(c.proto.config))
        for c in at.get("plotly_chart")
    }


def test_a_phone_is_told_from_its_user_agent():
    assert theme.is_phone(IPHONE) and theme.is_phone(ANDROID)
    assert not theme.is_phone(DESKTOP) and not theme.is_phone(None) and not theme.is_phone("")


def test_the_projector_shows_the_map_first():
    """The view draws its map as tall as the window allows and thins labels that would collide
    (tests/e2e/test_room_screens_e2e.py measures both); the server sends it the projector's font."""
    at = run(present=True)
    assert not at.title, "presenter mode: the view's own heading says what it shows"
    assert any(e.label.startswith("Sentence, model") for e in at.expander)
    assert [p.proto.popover.label for p in at.get("popover")] == ["Display options"]  # folded into one row
    shown = layer_shown(at)
    assert shown.header["font_px"] == theme.PRESENTER.tick_px > theme.DEFAULT.tick_px
    assert len(shown.rows) == 16 and not at.get("plotly_chart")  # every label sent: the browser thins them


def test_the_projector_sends_every_label_of_a_long_sentence():
    """A sentence too long for the projector's map: every label travels (the browser prints every k-th, the
    fewest dropped so that one em of the font fits each: tests/e2e/test_room_screens_e2e.py)."""
    at = run(present=True, text=" ".join(["word"] * 40))
    shown = layer_shown(at)
    assert len(shown.rows) == len(shown.header["k"]) == 42 and shown.header["font_px"] == theme.PRESENTER.tick_px


def test_the_default_view_is_unchanged_by_the_projector_code():
    at = run()
    assert at.title and at.title[0].value == "Explore attention"
    assert not at.get("popover")
    assert layer_shown(at).header["font_px"] == theme.DEFAULT.tick_px
    assert "query_row_bars" not in charts(at)


def test_a_phone_gets_the_view_and_the_row_as_bars_with_no_toolbar():
    at = run(**{Look.compact: True})
    assert at.toggle(key=Look.compact).value is True
    shown = charts(at)
    assert list(shown) == ["query_row_bars"]  # the view draws the map; the bars are what a phone can read
    assert all(c.get("displayModeBar") is False for _, c in shown.values())  # no toolbar over any title
    bars, _ = shown["query_row_bars"]
    trace = bars["data"][0]
    assert trace["type"] == "bar" and trace["orientation"] == "h"
    view = layer_shown(at)
    row = view.z[0]
    np.testing.assert_allclose(decode(trace["x"]), np.nan_to_num(row), atol=SHOWN)  # the first query's row
    assert abs(float(np.nansum(row)) - 1.0) < 17 * SHOWN
    assert view.header["n_heads"] == 12  # the layer's heads travel with it: a tap on one sends nothing


def test_the_picked_token_s_row_is_drawn_as_bars():
    at = run(**{Look.compact: True, "focus": 2})
    shown = charts(at)
    view = layer_shown(at)
    bars, _ = shown["query_row_bars"]
    np.testing.assert_allclose(decode(bars["data"][0]["x"]), np.nan_to_num(view.z[2]), atol=SHOWN)
    assert view.rows[2].split(" ", 1)[-1] in bars["layout"]["title"]["text"]


def test_the_qr_code_opens_full_screen_and_the_link_leaves_presenter_mode_out():
    at = run(present=True, share_open=True)
    link = at.sidebar.code[0].value
    assert "present" not in link  # a class's phones open the normal view
    at.checkbox(key=Share.present_link).check().run()
    assert at.sidebar.code[0].value.endswith("present=1")
    at.button(key=Share.qr_button).click().run()
    assert_clean(at)
    dialogs = at.get("dialog")
    assert len(dialogs) == 1 and len(dialogs[0].get("image")) == 1, "no QR image in the dialog"
    assert dialogs[0].get("caption")[0].value == at.sidebar.code[0].value  # the code of the link shown
    big = share_box.qr_png(at.sidebar.code[0].value, share_box.QR_BIG_SCALE)
    small = share_box.qr_png(at.sidebar.code[0].value)
    assert big is not None and small is not None and len(big) > len(small)


def test_heads_on_the_projector_folds_its_controls_into_one_row():
    at = run(present=True)
    at.switch_page("views/heads/page.py")
    at.run()
    assert_clean(at)
    assert not at.title
    assert [p.proto.popover.label for p in at.get("popover")] == ["Highlight a token"]
    assert any(e.label.startswith("Sentence, model") for e in at.expander)
    shown = layer_shown(at)  # the model view: every layer × head, drawn in the browser
    assert shown.header["grid"] and shown.header["layers"] == list(range(6)) and shown.title == "Layer 0, head 0"


def test_a_long_row_keeps_its_largest_weights_as_bars():
    at = run(**{Look.compact: True})
    at.text_area(key="text").input(" ".join(["the cat sat on the mat and looked at the dog"] * 6)).run()
    assert_clean(at)
    bars, _ = charts(at)["query_row_bars"]
    row = np.nan_to_num(layer_shown(at).z[0])
    shown = decode(bars["data"][0]["x"])
    assert row.size > 30 and shown.size == 30
    np.testing.assert_allclose(np.sort(shown), np.sort(row)[-30:], atol=SHOWN)  # the 30 largest of the row


def test_a_phone_opens_the_head_its_view_chose():
    at = run(**{Look.compact: True})
    at.session_state["head"] = 4  # a tap on the view's head 4, told the server with the next run (layer_view.take)
    at.run()
    assert_clean(at)
    assert layer_shown(at).title == "Layer 0, head 4"
    bars, _ = charts(at)["query_row_bars"]
    assert bars["layout"]["title"]["text"].startswith("Where")


def test_heads_on_a_phone_sends_one_layer_s_heads_and_opens_the_one_tapped():
    at = run(**{Look.compact: True})
    at.selectbox(key="layer").set_value(2).run()
    at.switch_page("views/heads/page.py")
    at.run()
    assert_clean(at)
    shown = layer_shown(at)
    assert shown.header["grid"] and shown.header["layers"] == [2] and shown.header["n_heads"] == 12  # fewer to tap
    at.session_state["head"] = 7  # a tap on the view's head 7, told the server with the next run (layer_view.take)
    at.run()
    assert_clean(at)
    assert layer_shown(at).title == "Layer 2, head 7"
    captions = " ".join(str(c.value) for c in at.caption)
    assert "The 12 heads of layer 2" in captions and "wider screen" in captions, captions
