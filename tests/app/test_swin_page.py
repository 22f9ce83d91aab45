"""A Swin on the Vision Transformer page (AppTest): a tiny random Swin saved locally, typed into the model field
inside the folder the server allows (``AP_MODEL_DIRS``). The window map drawn is the engine's own
``window_row`` of a separate trace of the same image; the page shows stage, block and head pickers instead of
[CLS], rollout and occlusion, and its caption explains the shifted windows."""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pytest

import engine
from apptest_helpers import assert_clean, decode, figures, messages, open_page, title
from engine import samples
from engine.traces.vision import window_row
from tests.swin_helpers import save_tiny_swin


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny_swin(tmp_path_factory.mktemp("allowed") / "swin", window=2)


@pytest.fixture(scope="module")
def reference(folder):
    return engine.trace(engine.load(str(folder)), samples.photo("china"))


def _window_figure(at, start: str) -> dict:
    found = [f for f in figures(at) if title(f).startswith(start)]
    assert found, [title(f) for f in figures(at)]
    return found[0]


def _drawn(fig: dict) -> np.ndarray:
    return decode([t for t in fig["data"] if t.get("name") == "attention"][0]["z"])


def _check(fig: dict, reference, stage: int, block: int, head: int, patch: int):
    row = window_row(reference.block_at(stage, block), head, patch)
    drawn = _drawn(fig)
    assert drawn.shape == row.weights.shape
    np.testing.assert_array_equal(np.isnan(drawn), ~row.visible)  # only the patches the query may see
    np.testing.assert_allclose(drawn[row.visible], row.weights[row.visible], atol=1e-6)
    return row


def test_the_window_of_a_patch_in_a_shifted_block(folder, reference, monkeypatch):
    monkeypatch.setenv("AP_MODEL_DIRS", str(folder.parent))
    at = open_page("vit", vit_hub_id=str(folder), vit_source="photo", vit_swin_block=1, vit_swin_head=1)
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert [at.selectbox(key=k).value for k in ("vit_swin_stage", "vit_swin_block", "vit_swin_head")] == [0, 1, 1]
    assert not [f for f in figures(at) if title(f).startswith(("[CLS]", "Rollout"))], "a Swin has no [CLS]"
    fig = _window_figure(at, "Patch 0 → its window, stage 0, block 1, head 1")
    row = _check(fig, reference, 0, 1, 1, 0)
    # patch 0 sits in the wrapped corner window: four pieces, three of them hidden by the mask (dashed)
    dashed = [s for s in fig["layout"]["shapes"] if s["type"] == "rect" and s["line"].get("dash") == "dash"]
    assert len(row.pieces) == 4 and len(dashed) == 3
    captions = " ".join(messages(at.caption))
    assert "Shifted windows" in captions and "opposite edge" in captions, captions
    assert "no [CLS] token" in captions


def test_the_pickers_move_the_query_and_its_window(folder, reference, monkeypatch):
    monkeypatch.setenv("AP_MODEL_DIRS", str(folder.parent))
    at = open_page("vit", vit_hub_id=str(folder), vit_source="photo")
    assert_clean(at)
    _check(_window_figure(at, "Patch 0 → its window, stage 0, block 0, head 0"), reference, 0, 0, 0, 0)
    at.number_input(key="vit_swin_patch").set_value(27).run()
    assert_clean(at)
    row = _check(_window_figure(at, "Patch 27 → its window, stage 0, block 0, head 0"), reference, 0, 0, 0, 27)
    assert row.visible.sum() == 4 and row.pieces == ((2, 4, 2, 4),)  # patch (3, 3): the window of rows/cols 2–3
    at.selectbox(key="vit_swin_stage").set_value(1).run()
    at.selectbox(key="vit_swin_head").set_value(3).run()
    assert_clean(at)
    assert at.number_input(key="vit_swin_patch").value == 15  # stage 1 has 4×4 patches: 27 is kept inside
    _check(_window_figure(at, "Patch 15 → its window, stage 1, block 0, head 3"), reference, 1, 0, 3, 15)
    captions = " ".join(messages(at.caption))
    assert "next block shifts these windows" in captions, captions


def test_bertviz_sends_a_swin_to_the_vision_transformer_page(folder, monkeypatch):
    """bertviz draws one token-to-token map per head; a Swin has windows instead: a calm note and a link that
    opens the Vision Transformer page on the same model."""
    monkeypatch.setenv("AP_MODEL_DIRS", str(folder.parent))
    at = open_page("bertviz_views", hub_id=str(folder))
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert any("This is a Swin" in m for m in messages(at.info)), messages(at.info)
    assert not at.get("iframe")
    links = [link.proto for link in at.get("page_link")]
    swin = [p for p in links if "Swin" in p.label]
    assert swin and swin[0].page == "vit", [p.label for p in links]
    assert swin[0].query_string == urlencode({"vit_hub_id": str(folder)}), swin[0].query_string
