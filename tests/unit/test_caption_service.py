"""The Captions page's service and figure data: the maps it draws are the trace's α, the regions of the lesson's
check follow the 3×3 split of the picture, and a drawn scene is captioned by the grammar."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from app.views.captions import data as service
from app.views.captions.map_data import REGIONS, caption_view, region_bounds, region_of
from engine.corpora.scenes import SHAPES, draw_scene, make_scenes, parse_caption
from engine.records import EngineError
from engine.training.recipes.captioner import HELD_OUT_SEED


@pytest.fixture(scope="module")
def captioner():
    return engine.load(service.CAPTION_MODEL)


def test_the_figure_data_is_the_traces_alphas(captioner):
    request = service.CaptionRequest(source="scene", scene=5)
    trace = service.caption_trace(request)
    view = service.caption_attention(request)
    assert view.words == tuple(trace.words.strings)
    np.testing.assert_array_equal(view.alphas, trace.alphas)
    np.testing.assert_array_equal(view.betas, trace.betas)
    # and both are the engine's own numbers for that held-out scene, traced here without the app
    scene = make_scenes(6, seed=HELD_OUT_SEED)[5]
    ref = captioner.adapter.trace(captioner, scene.image)
    np.testing.assert_allclose(view.alphas, ref.alphas, atol=1e-6)
    np.testing.assert_allclose(view.alphas.reshape(len(view.words), -1).sum(axis=1), 1.0, atol=1e-5)
    assert view.peaks == tuple(int(np.argmax(a)) for a in ref.alphas.reshape(len(view.words), -1))
    assert view.cell_px == 64 // ref.grid
    for cell in (0, 9, 63):
        np.testing.assert_array_equal(view.at_cell(cell), ref.alphas[:, cell // 8, cell % 8])
    assert not view.alphas.flags.writeable  # shared by every session
    assert service.caption_attention(request) is view  # one build per process


def test_beam_requests_are_traced_apart(captioner):
    greedy = service.caption_trace(service.CaptionRequest(scene=2))
    beam = service.caption_trace(service.CaptionRequest(scene=2, beam=3))
    assert (greedy.beam, beam.beam) == (1, 3)
    ref = captioner.adapter.trace(captioner, make_scenes(3, seed=HELD_OUT_SEED)[2].image, beam=3)
    assert beam.caption == ref.caption
    np.testing.assert_allclose(beam.alphas, ref.alphas, atol=1e-6)
    with pytest.raises(EngineError, match="beam width"):
        service.caption_trace(service.CaptionRequest(scene=2, beam=service.CAPTION_MAX_BEAM + 1))


def test_regions_split_the_grid_by_cell_centres():
    assert region_bounds(8) == [(0, 3), (3, 5), (5, 8)]
    assert region_bounds(9) == [(0, 3), (3, 6), (6, 9)]
    for grid in (3, 8, 9):
        for r in range(grid):
            for c in range(grid):
                third = [min(int(3 * (i + 0.5) / grid), 2) for i in (r, c)]  # the third the centre lies in
                assert region_of(r, c, grid) == 3 * third[0] + third[1]
    assert REGIONS[region_of(0, 7, 8)] == "top right" and REGIONS[region_of(4, 4, 8)] == "middle"


def test_where_it_looks_reads_the_models_peak(captioner):
    scenes = make_scenes(40, seed=HELD_OUT_SEED)
    traces = (captioner.adapter.trace(captioner, s.image) for s in scenes)
    k, ref = next((i, tr) for i, tr in enumerate(traces) if "circle" in tr.words.strings)
    words = list(ref.words.strings)
    look = service.where_it_looks(k, "circle")
    t = words.index("circle")
    r, c = np.unravel_index(int(np.argmax(ref.alphas[t])), ref.alphas[t].shape)
    assert look.word == t and look.peak == (r, c)
    assert look.region == region_of(int(r), int(c), ref.grid) and look.caption == ref.caption
    with pytest.raises(EngineError, match="does not write"):
        service.where_it_looks(k, "zebra")


def test_a_view_refuses_arrays_that_do_not_fit():
    with pytest.raises(ValueError, match="words need"):
        caption_view(("a", "red"), np.full((3, 8, 8), 1 / 64), np.ones(2), 64)


def test_draw_scene_puts_the_objects_in_caption_order():
    # the small one drawn first, below the large one: the caption names the large one first, "above"
    scene = draw_scene([("circle", "red", "small", 50, 30), ("triangle", "green", "large", 15, 28)], seed=3)
    assert scene.caption == "a large green triangle above a small red circle"
    assert parse_caption(scene.caption) == ((("large", "green", "triangle"), ("small", "red", "circle")), "above")
    for obj, centre in zip(scene.objects, ((15, 28), (50, 30))):
        top, left, bottom, right = obj.box
        assert top <= centre[0] <= bottom and left <= centre[1] <= right
        red, green, blue = scene.image[centre].tolist()
        assert (green > red) == (obj.colour == "green")
    assert scene.image.shape == (64, 64, 3) and scene.image.dtype == np.float32
    # a centre on the edge is moved in until the shape fits
    edge = draw_scene([("square", "blue", "large", 0, 63)])
    assert edge.objects[0].box[0] >= 0 and edge.objects[0].box[3] <= 63 and edge.caption == "a large blue square"
    assert set(SHAPES) >= {o.shape for o in scene.objects}


@pytest.mark.parametrize(
    "objects",
    [
        [("circle", "red", "small", 30, 30), ("square", "blue", "small", 32, 33)],  # overlapping
        [("circle", "red", "small", 15, 15), ("square", "blue", "small", 45, 45)],  # as far across as down
    ],
)
def test_draw_scene_refuses_what_the_grammar_cannot_say(objects):
    with pytest.raises(ValueError, match="no caption of the grammar"):
        draw_scene(objects)


def test_a_drawing_the_grammar_cannot_say_is_an_engine_error_for_the_page():
    bad = (
        service.DrawnObject("circle", "red", "small", 30, 30),
        service.DrawnObject("square", "blue", "small", 31, 31),
    )
    with pytest.raises(EngineError, match="cannot be captioned"):
        service.caption_picture(service.CaptionRequest(source="draw", drawing=bad))
