"""Links that restore the view (``app/url_state.py``, table in ``app/url_params.py``), through AppTest.

A link is read before the page runs; the page's values go back into the URL (defaults left out) at the
end of each run and of each fragment; bad values are ignored calmly; ``hide=`` hides controls; the
sidebar's share box shows the full link and a QR code of exactly that link.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from apptest_helpers import APP, ROOT, TIMEOUT, assert_clean, figures, layer_shown, title  # noqa: E402

SENTENCE = "Lily found a red ball. She gave it to Tom."
STORIES = "tiny-gpt-stories"
STORIES_LABEL = "Tiny GPT trained on stories (own)"
HOST = "http://school.example:8501"


def app_with(params: dict[str, str], share: bool = False, **context) -> AppTest:
    """A fresh session opened from a link with ``params`` (a new tab, or a reload); ``share``: with the
    sidebar's Share box opened (closed, it builds nothing)."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update(params)
    if share:
        at.session_state["share_open"] = True
    if context:
        at.context = context
    at.run()
    assert_clean(at)
    return at


def keys(elements) -> set[str]:
    return {e.key for e in elements}


def test_a_link_restores_every_shared_control():
    at = app_with({"text": SENTENCE, "model": STORIES, "layer": "2", "head": "1", "causal": "0", "max_tokens": "64"})
    assert at.text_area(key="text").value == SENTENCE
    assert at.selectbox(key="model").value == STORIES
    assert (at.selectbox(key="layer").value, at.session_state["head"]) == (2, 1)
    assert at.toggle(key="causal").value is False  # the stories model masks by itself: the link turned it off
    assert at.number_input(key="max_tokens").value == 64
    assert layer_shown(at).title == "Layer 2, head 1"  # the view opens on the link's head
    # the page writes back the same link (nothing else, nothing lost)
    assert at.query_params == {
        "text": SENTENCE,
        "model": STORIES,
        "layer": "2",
        "head": "1",
        "causal": "0",
        "max_tokens": "64",
    }


def test_the_model_is_named_by_id_and_an_old_label_link_still_works():
    at = app_with({"model": STORIES_LABEL})
    assert at.selectbox(key="model").value == STORIES
    # the address bar keeps the link as it came (it names this view: rewriting it would add a browser
    # history entry, and Back would need two presses); the next change writes the model as its id
    assert at.query_params["model"] == STORIES_LABEL
    at.selectbox(key="layer").set_value(1).run()
    assert at.query_params["model"] == STORIES


def test_a_fresh_page_writes_no_defaults_and_each_change_is_written():
    at = app_with({})
    assert at.query_params == {}
    at.selectbox(key="layer").set_value(3).run()
    assert at.query_params == {"layer": "3"}
    at.text_area(key="text").input(SENTENCE).run()
    at.toggle(key="causal").set_value(True).run()
    assert at.query_params == {"layer": "3", "text": SENTENCE, "causal": "1"}
    at.selectbox(key="layer").set_value(0).run()  # back to the default: left out again
    assert "layer" not in at.query_params
    assert_clean(at)


def test_a_change_after_opening_a_link_is_not_undone_by_the_link():
    """The URL still holds the link's value when the widget reruns: only what came from outside is applied."""
    at = app_with({"layer": "2"})
    at.selectbox(key="layer").set_value(1).run()
    assert at.selectbox(key="layer").value == 1
    assert at.query_params["layer"] == "1"


def test_a_late_url_does_not_undo_a_change():
    """A rerun the browser sent before our last write reached it still carries the value before: not a link."""
    at = app_with({})
    at.selectbox(key="layer").set_value(3).run()
    at.selectbox(key="layer").set_value(1).run()
    at.query_params["layer"] = "3"  # the address bar had not caught up yet
    at.session_state["head"] = 2  # the view's head button (layer_view.take)
    at.run()
    assert (at.selectbox(key="layer").value, at.query_params["layer"]) == (1, "1")


def test_a_link_inside_a_running_session_is_applied_like_page_link():
    """``st.page_link(..., query_params=...)`` (a lesson linking to a view): new values in the URL of a page."""
    at = app_with({})
    at.selectbox(key="layer").set_value(3).run()
    at.query_params.update({"text": SENTENCE, "layer": "1", "heads_tab": "metrics"})
    at.switch_page(str(ROOT / "app" / "views" / "heads" / "page.py"))
    at.run()
    assert_clean(at)
    assert at.selectbox(key="layer").value == 1
    assert at.text_area(key="text").value == SENTENCE
    assert at.session_state["heads_tab"] == "Per-head metrics"
    assert at.query_params["heads_tab"] == "metrics"


def test_the_sentence_survives_a_page_switch_and_is_in_the_next_pages_link():
    at = app_with({})
    at.text_area(key="text").input(SENTENCE).run()
    at.query_params.clear()  # the sidebar's navigation drops the query string
    at.switch_page(str(ROOT / "app" / "views" / "step_by_step" / "page.py"))
    at.run()
    assert at.text_area(key="text").value == SENTENCE
    assert at.query_params["text"] == SENTENCE


@pytest.mark.parametrize(
    "bad",
    [
        {"layer": "NaN", "head": "-1", "max_tokens": "1e99", "causal": "maybe"},
        {"model": "no/such-model", "hub_id": "x\x00y", "explore_tab": "nonsense", "explore_block": "<b>"},
        {"text": "abc\x00def", "layer": "99999999999999999999", "hide": "everything,,,"},
        {"text": "x" * 100_001, "max_tokens": "", "head": "2.5"},
    ],
)
def test_bad_link_values_are_ignored_calmly(bad: dict[str, str]):
    at = app_with(bad)
    assert not at.error and not at.warning, [e.value for e in (*at.error, *at.warning)]
    assert at.selectbox(key="model").value == "minilm"
    assert (at.selectbox(key="layer").value, layer_shown(at).header["head"]) == (0, 0)
    assert at.number_input(key="max_tokens").value == 128
    assert at.text_area(key="text").value.startswith("The animal")
    assert at.query_params == {}  # nothing of the bad link is written back


def test_hide_flags_hide_the_controls_and_keep_the_links_values():
    at = app_with(
        {"model": STORIES, "causal": "0", "layer": "1", "text": SENTENCE, "hide": "model,causal,text,layer,max_tokens"}
    )
    assert not at.text_area and "causal" not in keys(at.toggle)
    assert "model" not in keys(at.selectbox) and "layer" not in keys(at.selectbox)
    assert "max_tokens" not in keys(at.number_input)
    assert layer_shown(at).title == "Layer 1, head 0"  # layer 1 of the stories model, mask off
    assert at.query_params["hide"] == "model,causal,text,layer,max_tokens"  # as the link spelled it
    at.session_state["head"] = 2  # the view's heads still work (layer_view.take); the lock stays in the link
    at.run()
    assert layer_shown(at).title == "Layer 1, head 2"
    assert at.query_params["hide"] == "text,model,layer,causal,max_tokens"


def test_hidden_tabs_show_only_the_tab_the_link_names():
    at = app_with({"explore_tab": "mask", "hide": "tabs"})
    assert not at.tabs
    assert not [bar for bar in at.segmented_control if bar.key == "explore_tab"]  # no row of section buttons
    assert [title(f) for f in figures(at)] == ["Causal mask OFF", "Causal mask ON"]
    assert layer_shown(at).title == "Layer 0, head 0"


def test_a_write_more_request_is_carried_by_the_link():
    """Explore's "Write more" (and an encoder-decoder's decoding): the request, kept while the sentence and
    model stay, is in the link; opening it writes the same continuation, repeatably with its seed."""
    at = app_with({"model": STORIES, "text": "lily found a", "explore_tab": "write"})
    at.radio(key="write_mode").set_value("Sampled").run()  # outside the form: enables the sampling controls
    at.number_input(key="write_tokens").set_value(6)
    at.number_input(key="write_top_k").set_value(5)
    at.number_input(key="write_seed").set_value(11)
    at.button(key="FormSubmitter:write_form-Write more").click().run()
    assert at.query_params["write_request"] == "6,1,1,5,1,11"
    written = [m.value for m in at.markdown if ":orange-background[" in m.value]
    assert len(written) == 1
    fresh = app_with(dict(at.query_params))
    assert [m.value for m in fresh.markdown if ":orange-background[" in m.value] == written
    fresh.text_area(key="text").input("lily found a big").run()  # another sentence: the request is dropped
    assert "write_request" not in fresh.query_params


def _fragment_script() -> None:
    import sys

    import streamlit as st

    sys.path.insert(0, st.session_state["root"])
    from app import sidebar, url_state

    url_state.restore("explore")

    @st.fragment
    @sidebar.synced
    def panel() -> None:
        st.selectbox("Layer", range(4), key="layer")

    panel()  # no sync after it: only the fragment writes the link


def test_a_fragment_writes_the_link_itself():
    """Explore's and Heads' panels are fragments: a layer change there reruns neither the page nor the entry
    point, so the fragment's own ``sync`` must write the URL (AppTest reruns all; here only it syncs)."""
    at = AppTest.from_function(_fragment_script, default_timeout=30)
    at.session_state["root"] = str(ROOT)
    at.run()
    assert at.query_params == {}
    at.selectbox(key="layer").set_value(2).run()
    assert at.query_params == {"layer": "2"}
    assert not at.exception


# ---------------------------------------------------------------- the share box


def _qr_modules(png: bytes, n_modules: int) -> np.ndarray:
    """Read a QR code's modules back from its PNG (dark = True), sampling the centre of each module."""
    from PIL import Image

    from app.ui.share_box import QR_BORDER, QR_SCALE

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
    centres = (np.arange(n_modules) + QR_BORDER) * QR_SCALE + QR_SCALE // 2
    return pixels[np.ix_(centres, centres)] < 128


def test_the_share_box_shows_the_full_link_and_a_qr_code_of_exactly_it(monkeypatch):
    import segno

    from app.ui import share_box

    drawn: list[tuple[str, bytes | None]] = []
    real = share_box.qr_png

    def recording(link: str):
        png = real(link)
        drawn.append((link, png))
        return png

    monkeypatch.setattr(share_box, "qr_png", recording)
    closed = app_with({"text": SENTENCE, "layer": "2"}, url=f"{HOST}/")
    assert not closed.sidebar.code and not closed.sidebar.get("image") and not drawn  # lazy while closed
    at = app_with({"text": SENTENCE, "layer": "2"}, share=True, url=f"{HOST}/")
    link = at.sidebar.code[0].value
    assert link == f"{HOST}/?text=Lily+found+a+red+ball.+She+gave+it+to+Tom.&layer=2"
    assert at.sidebar.get("image"), "no QR code drawn"
    qr_link, png = drawn[-1]
    assert qr_link == link
    expected = np.array(segno.make(link, error="l", micro=False, boost_error=False).matrix, dtype=bool)
    assert np.array_equal(_qr_modules(png, expected.shape[0]), expected)

    # a teacher locks the model in the shared link; their own page keeps its controls
    at.multiselect(key="share_lock").set_value(["model", "causal"]).run()
    assert at.sidebar.code[0].value.endswith("&hide=model%2Ccausal")
    assert "model" in keys(at.selectbox)


def test_the_share_box_names_the_page():
    at = app_with({}, share=True, url=f"{HOST}/")
    at.switch_page(str(ROOT / "app" / "views" / "bahdanau" / "page.py"))
    at.query_params.update({"bahdanau_variant": "dot", "bahdanau_text": "the cat is small"})
    at.run()
    assert_clean(at)
    assert at.radio(key="bahdanau_variant").value == "dot"
    assert at.sidebar.code[0].value == f"{HOST}/bahdanau?bahdanau_text=the+cat+is+small&bahdanau_variant=dot"


def test_a_link_too_long_for_a_qr_code_says_so():
    at = app_with({"text": "word " * 1200}, share=True)
    assert any("too long for a QR code" in str(c.value) for c in at.sidebar.caption)
    assert not at.sidebar.get("image")


# ---------------------------------------------------------------- the other pages: link → page → same link

PAGE_LINKS = {
    "vit": {
        "vit_source": "shape",
        "vit_shape": "ring",
        "vit_layer": "1",
        "vit_head": "2",
        "vit_fusion": "max",
        "vit_discard": "0.3",
    },
    "bahdanau": {"bahdanau_text": "the red cars are small", "bahdanau_tf_layer": "1", "bahdanau_tf_head": "0"},
    "train": {
        "train_task": "sort",
        "train_n_layers": "3",
        "train_n_heads": "2",
        "train_d_model": "32",
        "train_pos_encoding": "rope",
        "train_causal": "0",
        "train_steps": "300",
        "train_batch_size": "32",
        "train_seed": "7",
        "train_lr": "0.01",
    },
    "positional": {"pos_tab": "rope"},
    "bertviz_views": {"bertviz_view": "model", "text": SENTENCE, "layer": "1"},
    "heads": {"heads_tab": "similarity", "head": "3"},
    "pretraining": {"pretraining_tab": "cost", "cost_n": "64", "cost_d": "32"},
    "head_finder": {
        "finder_model": "induction-2l-attn-only",
        "finder_x": "self",
        "finder_colour": "sink",
        "finder_head": "0.1",
        "text": "qwhkzqwhkz",
    },
}


def test_presenter_mode_is_carried_by_the_link():
    at = app_with({})
    assert "present" not in at.query_params
    at.toggle(key="present").set_value(True).run()
    assert_clean(at)
    assert at.query_params.get("present") == "1"
    fresh = app_with({"present": "1"})
    assert fresh.session_state["present"] is True and fresh.toggle(key="present").value


def test_a_fill_in_the_blank_link_restores_the_sentence():
    at = app_with({})
    at.switch_page(str(ROOT / "app" / "views" / "pretraining" / "page.py"))
    at.query_params.update({"fill_text": "tom saw [MASK] ."})
    at.run()
    assert_clean(at)
    assert at.text_input(key="fill_text").value == "tom saw [MASK] ."


@pytest.mark.parametrize("page", list(PAGE_LINKS))
def test_every_page_reads_its_link_and_writes_the_same_link(page: str):
    at = app_with({})
    at.switch_page(str(ROOT / "app" / "views" / page / "page.py"))
    at.run()
    assert_clean(at)
    assert at.query_params == {}, f"{page}: a fresh page wrote {at.query_params} (defaults must be left out)"
    fresh = AppTest.from_file(str(APP), default_timeout=TIMEOUT)  # the link opened in a new tab
    fresh.run()
    fresh.switch_page(str(ROOT / "app" / "views" / page / "page.py"))
    fresh.query_params.update(PAGE_LINKS[page])
    fresh.run()
    assert_clean(fresh)
    assert fresh.query_params == PAGE_LINKS[page]
    from app.url_state import BY_NAME

    kinds = ("selectbox", "radio", "slider", "number_input", "toggle", "text_area", "text_input", "select_slider")
    widgets = {e.key: e.value for kind in kinds for e in getattr(fresh, kind) if e.key}
    for name, raw in PAGE_LINKS[page].items():
        if name in widgets:  # the control on screen shows the link's value (tabs: the query string above)
            assert BY_NAME[name].write(widgets[name]) == raw, (name, widgets[name], raw)


def test_a_link_that_names_the_view_is_left_as_it_came():
    """Issue 20: a link spelled otherwise than the app writes it (defaults named, ``causal=true``, a tab's
    label) is not rewritten when it opens: Streamlit's frontend pushes a history entry for every query string
    the app writes, so Back needed two presses. The share box still offers the app's own spelling."""
    link = {"text": SENTENCE, "model": "minilm", "layer": "0", "causal": "true", "explore_tab": "Causal mask off vs on"}
    at = app_with(link, share=True, url=f"{HOST}/")
    assert at.toggle(key="causal").value is True
    assert at.query_params == link
    assert (
        at.sidebar.code[0].value == f"{HOST}/?text=Lily+found+a+red+ball.+She+gave+it+to+Tom.&causal=1&explore_tab=mask"
    )
    at.run()  # a rerun does not take the link's spelling for a new link (the user's changes survive)
    at.toggle(key="causal").set_value(False).run()
    assert at.toggle(key="causal").value is False
    assert at.query_params == {"text": SENTENCE, "explore_tab": "mask"}
    bad = app_with({"layer": "0", "head": "x"})  # a value the page refuses still leaves the address bar
    assert bad.query_params == {}


def test_train_lives_tab_is_in_the_link_so_a_share_or_lesson_step_opens_induction_heads():
    """Train live's tab bar is a plain ``st.tabs``: its tab was not a link parameter, so a share link or an "Add
    this view to my lesson" step made on the Induction heads tab opened "Your own model" instead."""
    from app.views.train.keys import TABS as TRAIN_TABS

    at = app_with({})
    at.switch_page(str(ROOT / "app" / "views" / "train" / "page.py"))
    at.session_state["train_tab"] = TRAIN_TABS["induction"]  # the teacher opens the tab
    at.run()
    assert_clean(at)
    assert at.query_params == {"train_tab": "induction"}
    assert at.button(key="train_ind_start")  # the induction tab's button is drawn, the own model's is not
    assert not [b for b in at.button if b.key == "train_start"]

    fresh = AppTest.from_file(str(APP), default_timeout=TIMEOUT)  # the link opened in a new tab
    fresh.run()
    fresh.switch_page(str(ROOT / "app" / "views" / "train" / "page.py"))
    fresh.query_params.update({"train_tab": "induction"})
    fresh.run()
    assert_clean(fresh)
    assert fresh.session_state["train_tab"] == TRAIN_TABS["induction"]
    assert fresh.button(key="train_ind_start")
    assert fresh.query_params == {"train_tab": "induction"}


def test_an_old_link_to_explores_grid_tab_is_left_as_it_came():
    """``explore_tab=heads`` named the grid of heads' tab, now the view itself: it opens no section and the address
    bar keeps the link (a rewrite would push a history entry, and Back would need two presses)."""
    at = app_with({"explore_tab": "heads", "layer": "2"})
    assert at.session_state["explore_tab"] is None and at.selectbox(key="layer").value == 2
    assert at.query_params == {"explore_tab": "heads", "layer": "2"}
