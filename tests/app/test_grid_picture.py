"""Explore's grid of heads as one picture (``grid_picture.grid_png``), read back from its pixels.

The grid was a Plotly chart of a dozen heatmaps, which cost Chromium 115–150 ms of every press; it is now one
palette PNG. These tests decode the PNG (``apptest_helpers.picture_tiles``: thumbnails found as rectangles of
level pixels) and check it against the weights by hand: each cell the whole percent of its head's maximum,
coloured by the theme's scale as Plotly samples it, the chosen head framed in red, every head named.
"""

from __future__ import annotations

import io

import numpy as np
import plotly.colors
import pytest
from PIL import Image

from app.ui import theme
from app.views.explore.grid_picture import GRID_TILE_PX, grid_per_row, grid_png
from apptest_helpers import FRAME_RGB, picture_tiles  # noqa: E402  (tests/app is on sys.path)


def three_heads() -> np.ndarray:
    """``[1, 3, 4, 4]``: head 0 a hand-made pattern, head 1 a diagonal at 0.2, head 2 all zero (no maximum)."""
    tiles = np.zeros((1, 3, 4, 4), dtype=np.float32)
    tiles[0, 0] = [[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.2, 0.3, 0.5, 0.0], [0.1, 0.2, 0.3, 0.4]]
    tiles[0, 1] = np.eye(4) * 0.2
    return tiles


def test_each_cell_is_its_share_of_the_head_s_maximum_and_the_chosen_head_is_framed():
    png = grid_png(three_heads(), head=1, per_row=2)
    tiles, framed, palette = picture_tiles(png, 4, 4)
    assert len(tiles) == 3 and framed == 1
    # by hand: head 0's maximum is 1.0 (shares as written, in percent); head 1's is 0.2 (its diagonal is 100 %)
    assert tiles[0].tolist() == [[100, 0, 0, 0], [50, 50, 0, 0], [20, 30, 50, 0], [10, 20, 30, 40]]
    assert tiles[1].tolist() == (np.eye(4, dtype=int) * 100).tolist()
    assert tiles[2].tolist() == np.zeros((4, 4), dtype=int).tolist(), "a head with no weight is all 0 %, not NaN"
    # the levels are the theme's scale as Plotly samples it: 0 % its first colour, 100 % its last
    look = theme.DEFAULT
    sampled = plotly.colors.sample_colorscale(list(look.colors), [0.0, 0.5, 1.0])
    assert [palette[i] for i in (0, 50, 100)] == [
        tuple(round(float(c)) for c in plotly.colors.unlabel_rgb(x)) for x in sampled
    ]
    # two to a row: two rows, cells of whole pixels about GRID_TILE_PX a side
    picture = Image.open(io.BytesIO(png))
    scale = round(GRID_TILE_PX / 4)
    assert picture.width < 2 * (4 * scale + 20) and picture.height > 2 * 4 * scale


def test_every_head_is_named_above_its_thumbnail_and_an_empty_slot_is_not():
    png = grid_png(three_heads(), head=0, per_row=2)
    picture = Image.open(io.BytesIO(png))
    pixels = np.asarray(picture)
    palette = picture.getpalette()
    text = [i for i in range(256) if tuple(palette[3 * i : 3 * i + 3]) == (0x1B, 0x24, 0x30)]  # the theme's text
    assert text, "no pixel in the text colour"
    written = np.isin(pixels, text)
    half_w, half_h = picture.width // 2, picture.height // 2
    # the label strip above each thumbnail: rows above the first level pixel of that quarter
    for rows, cols, named in [
        (slice(0, half_h), slice(0, half_w), True),
        (slice(0, half_h), slice(half_w, None), True),
        (slice(half_h, None), slice(0, half_w), True),
        (slice(half_h, None), slice(half_w, None), False),  # three heads, two a row: the last slot is empty
    ]:
        assert written[rows, cols].any() == named


def test_the_presenter_theme_colours_the_grid_with_its_own_scale_and_draws_it_larger():
    with theme.looking(theme.PRESENTER):
        png = grid_png(three_heads(), head=2, per_row=3)
    tiles, framed, palette = picture_tiles(png, 4, 4)
    assert framed == 2 and len(tiles) == 3
    with theme.looking(theme.DEFAULT):
        default = grid_png(three_heads(), head=2, per_row=3)
    wider = Image.open(io.BytesIO(png)).width / Image.open(io.BytesIO(default)).width
    assert 1.2 < wider < 1.6, "the projector's thumbnails grow with its type (18 px against 13)"
    first, last = (plotly.colors.hex_to_rgb(c) for c in (theme.PRESENTER.colors[0], theme.PRESENTER.colors[-1]))
    assert palette[0] == tuple(first) and palette[100] == tuple(last)
    assert FRAME_RGB in palette


def test_a_cell_that_is_not_a_weight_is_drawn_as_the_page_not_as_a_level():
    tiles = three_heads()
    tiles[0, 0, 0, 1] = np.nan
    png = grid_png(tiles, head=0, per_row=3)
    picture = Image.open(io.BytesIO(png))
    pixels = np.asarray(picture)
    paper = int(pixels[0, 0])  # the corner: the page's background
    assert tuple(picture.getpalette()[3 * paper : 3 * paper + 3]) == (255, 255, 255)
    first_row = np.flatnonzero((pixels <= 100).any(axis=1))[0]
    first_col = np.flatnonzero((pixels <= 100).any(axis=0))[0]
    scale = round(GRID_TILE_PX / 4)
    assert pixels[first_row, first_col + scale] == paper, "the NaN cell is a hole in the thumbnail"
    assert pixels[first_row, first_col] == 100, "the rest keeps its shares"


@pytest.mark.parametrize(
    ("heads", "per_row"), [(1, 1), (4, 4), (8, 8), (9, 5), (12, 6), (16, 8), (32, 8), (40, 8), (20, 7)]
)
def test_rows_are_as_even_as_they_can_be_with_at_most_eight_heads(heads, per_row):
    assert grid_per_row(heads) == per_row


def test_cross_attention_tiles_keep_their_shape():
    """An encoder-decoder's cross-attention: 3 output steps reading 5 source tokens, each tile 3 × 5 cells."""
    tiles = np.arange(2 * 3 * 5, dtype=np.float32).reshape(1, 2, 3, 5)
    found, framed, _ = picture_tiles(grid_png(tiles, head=1, per_row=2), 3, 5)
    assert framed == 1 and [t.shape for t in found] == [(3, 5), (3, 5)]
    assert found[1].tolist() == np.rint(100 * tiles[0, 1] / tiles[0, 1].max()).astype(int).tolist()
