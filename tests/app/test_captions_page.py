"""The Captions page through AppTest: every number drawn is the captioner's own, checked against a separate
engine trace of the same picture (greedy and beam search), the scene grammar's caption of a drawing, and the
held-out scenes the model gets wrong (re-captioned here one by one)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from app.views.captions.keys import Captions
from apptest_helpers import assert_clean, assert_not_an_image, decode, figures, messages, open_page, png_bytes, title
from engine.corpora.scenes import draw_scene, make_scenes
from engine.training.recipes.captioner import HELD_OUT, HELD_OUT_SEED

MODEL = "scene-captioner"
ROOT = Path(__file__).resolve().parents[2]
GAP = 1  # the word panels' mosaic: one cell of gap between thumbnails (as the ViT page's head grid)
PER_ROW = 5  # word panels a row


@pytest.fixture(scope="module")
def captioner():
    return engine.load(MODEL)


def held_out(k: int) -> np.ndarray:
    return make_scenes(k + 1, seed=HELD_OUT_SEED)[k]


def reference(model, image: np.ndarray, beam: int = 1):
    """The engine's own trace of ``image``, made here (not through the app's services)."""
    return model.adapter.trace(model, image, beam=beam)


def by_title(at: AppTest, start: str) -> dict:
    found = [f for f in figures(at) if title(f).startswith(start)]
    assert found, [title(f) for f in figures(at)]
    return found[0]


def layer(fig: dict, name: str, field: str = "z") -> np.ndarray:
    return decode(next(t for t in fig["data"] if t.get("name") == name)[field])


def panel_maps(fig: dict, n: int, grid: int = 8) -> np.ndarray:
    """The word panels' weights (the mosaic's hover data), back as ``[word, L, L]``."""
    mosaic = layer(fig, "attention", "customdata")
    pitch = grid + GAP
    return np.stack(
        [
            mosaic[
                (t // PER_ROW) * pitch : (t // PER_ROW) * pitch + grid,
                (t % PER_ROW) * pitch : (t % PER_ROW) * pitch + grid,
            ]
            for t in range(n)
        ]
    )


def shown_text(at: AppTest) -> str:
    return " ".join(messages(at.markdown))


def test_a_held_out_scene_renders_with_the_traces_numbers(captioner):
    at = open_page("captions")
    assert_clean(at)
    assert not at.error and not at.warning, messages(at.error) + messages(at.warning)
    ref = reference(captioner, held_out(Captions.DEFAULTS[Captions.scene]).image)
    n = len(ref.words)
    assert ref.caption in shown_text(at)
    maps = panel_maps(by_title(at, "Where it looks for each word"), n)
    np.testing.assert_allclose(maps, ref.alphas, atol=1e-6)
    np.testing.assert_allclose(maps.reshape(n, -1).sum(axis=1), 1.0, atol=1e-5)  # every word's map sums to 1
    large = by_title(at, f"α for word 0, “{ref.words.strings[0]}”")
    np.testing.assert_allclose(layer(large, "attention"), ref.alphas[0], atol=1e-6)
    bars = by_title(at, "β: how much each word uses the image")["data"][0]
    np.testing.assert_allclose(decode(bars["y"]), ref.betas, atol=1e-6)
    assert len(at.dataframe) == 2


def test_step_through_the_words_and_read_a_cell(captioner):
    at = open_page("captions", cap_scene=7)
    ref = reference(captioner, held_out(7).image)
    word = 3
    at.select_slider(key="cap_word").set_value(word).run()
    at.number_input(key="cap_cell").set_value(27).run()
    assert_clean(at)
    large = by_title(at, f"α for word {word}, “{ref.words.strings[word]}”")
    np.testing.assert_allclose(layer(large, "attention"), ref.alphas[word], atol=1e-6)
    panels = by_title(at, "Where it looks for each word")
    assert f"▶ {word} · {ref.words.strings[word]}" in [
        a["text"].replace("<b>", "").replace("</b>", "") for a in panels["layout"]["annotations"]
    ]
    per_word, per_cell = at.dataframe[0].value, at.dataframe[1].value
    np.testing.assert_allclose(per_word["α at this cell"].to_numpy(), ref.alphas[:, 3, 3], atol=1e-6)
    np.testing.assert_allclose(per_word["β"].to_numpy(), ref.betas, atol=1e-6)
    np.testing.assert_allclose(per_cell.to_numpy(), ref.alphas[word], atol=1e-6)
    np.testing.assert_allclose(per_cell.to_numpy().sum(), 1.0, atol=1e-5)


def test_beam_search_shows_the_best_beam(captioner):
    at = open_page("captions", cap_scene=11)
    at.radio(key="cap_search").set_value("beam").run()
    at.slider(key="cap_beam").set_value(4).run()
    assert_clean(at)
    ref = reference(captioner, held_out(11).image, beam=4)
    assert "the best of a beam of 4" in shown_text(at) and ref.caption in shown_text(at)
    maps = panel_maps(by_title(at, "Where it looks for each word"), len(ref.words))
    np.testing.assert_allclose(maps, ref.alphas, atol=1e-6)


def test_a_drawn_scene_and_one_the_grammar_cannot_caption(captioner):
    at = open_page("captions", cap_source="draw")
    assert_clean(at)
    assert not at.error and not at.warning, messages(at.error) + messages(at.warning)
    scene = draw_scene([("square", "blue", "large", 18, 20), ("circle", "red", "small", 46, 22)])
    assert scene.caption == "a large blue square above a small red circle"
    assert scene.caption in shown_text(at)  # the grammar's caption, as the reference
    ref = reference(captioner, scene.image)
    maps = panel_maps(by_title(at, "Where it looks for each word"), len(ref.words))
    np.testing.assert_allclose(maps, ref.alphas, atol=1e-6)
    # the circle moved onto the square: no relation the grammar can name, a message and no charts
    at.slider(key="cap_row_1").set_value(20).run()
    at.slider(key="cap_col_1").set_value(22).run()
    assert_clean(at)
    assert any("cannot be captioned" in w for w in messages(at.warning)), messages(at.warning)
    assert not at.get("plotly_chart")


def test_upload_a_picture_and_a_bad_file():
    at = open_page("captions", cap_source="upload")
    assert_clean(at)
    assert any("Choose a picture" in m for m in messages(at.info))
    picture = np.full((90, 120, 3), 230, dtype=np.uint8)
    picture[30:60, 50:80] = (30, 60, 220)  # a blue square on a light page
    at.file_uploader(key="cap_upload").upload("shapes.png", png_bytes(picture), "image/png").run()
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert any("shrunk to 64×64" in m for m in messages(at.info)), messages(at.info)
    assert figures(at)
    assert_not_an_image(at, "cap_upload")


def test_the_mistakes_are_the_held_out_scenes_it_gets_wrong(captioner):
    at = open_page("captions", cap_view="mistakes")
    assert_clean(at)
    table = at.dataframe[0].value
    card = json.loads((ROOT / "assets/checkpoints/scene-captioner.json").read_text())["metadata"]["final_metrics"]
    assert len(table) == round(HELD_OUT * (1 - card["held-out exact match"]))
    scenes = make_scenes(HELD_OUT, seed=HELD_OUT_SEED)
    for k, row in list(table.iterrows())[:3]:  # re-captioned one by one here
        ref = reference(captioner, scenes[row["scene"]].image)
        assert row["reference"] == scenes[row["scene"]].caption != ref.caption == row["written"]
    at.selectbox(key="cap_mistake").set_value(1).run()
    assert_clean(at)
    chosen = int(table["scene"].iloc[1])
    assert title(by_title(at, f"Scene {chosen}")) == f"Scene {chosen}"
    at.button(key="cap_open_mistake").click().run()
    assert_clean(at)
    assert at.session_state["cap_scene"] == chosen and at.session_state["cap_view"] == "caption"
    assert str(table["written"].iloc[1]) in shown_text(at)


def test_forged_settings_are_kept_in_bounds():
    at = open_page("captions", cap_scene=10_000, cap_word=99, cap_cell=-5, cap_source="nowhere", cap_search="psychic")
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert figures(at)


def test_a_forged_drawing_is_drawn_from_allowed_values(captioner):
    at = open_page(
        "captions",
        cap_source="draw",
        cap_count=9,
        cap_shape_0="hexagon",
        cap_colour_1="ultraviolet",
        cap_size_0="huge",
        cap_row_1=999,
        cap_col_0=-40,
    )
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert at.radio(key="cap_count").value == 1  # one object: the first option
    assert at.selectbox(key="cap_shape_0").value == "circle" and at.selectbox(key="cap_size_0").value == "small"
    assert at.slider(key="cap_col_0").value == 0
    scene = draw_scene([("circle", "blue", "small", 18, 0)])
    assert scene.caption in shown_text(at)
    ref = reference(captioner, scene.image)
    np.testing.assert_allclose(
        panel_maps(by_title(at, "Where it looks for each word"), len(ref.words)), ref.alphas, atol=1e-6
    )
