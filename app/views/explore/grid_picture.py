"""Explore's grid: one layer's heads as one palette PNG, thumbnails to compare shapes (the head is picked with pills,
:func:`app.ui.head_views.head_pills`), each cell a whole percent of its head's maximum."""

from __future__ import annotations

import functools
import io

import numpy as np
import plotly.colors

from app.ui import theme
from app.ui.head_views import FRAME, SHARE_LEVELS, share_levels

GRID_ALT = "Thumbnails of the {heads} heads of layer {layer}, head {head} framed in red"  # the picture's alt text
#: on a screen of ≥ 2 device pixels a CSS pixel the picture is drawn nearest-neighbour (sharp cells)
GRID_CSS = (
    "<style>@media (min-resolution: 2dppx) { img[alt^='"
    + GRID_ALT.split("{", 1)[0]
    + "'] { image-rendering: pixelated; } }</style>"
)
GRID_TILE_PX = 96  # about this many pixels a side per thumbnail at the default type size (whole pixels a cell)
GRID_MOST_PER_ROW = 8  # heads to a row at most on a wide screen (12 heads: two rows of 6)
GRID_PAD_PX = 6  # around each thumbnail: room for the chosen head's red frame
FRAME_PX = 3
EDGE_RGB = (200, 206, 214)  # a thumbnail's 1 px edge: the scale's lightest shade meets a white page
# palette indices of a grid picture: 0–100 the share of the head's maximum, then these
_PAPER, _FRAME, _TEXT, _EDGE = SHARE_LEVELS + 1, SHARE_LEVELS + 2, SHARE_LEVELS + 3, SHARE_LEVELS + 4


def grid_per_row(n_heads: int, most: int = GRID_MOST_PER_ROW) -> int:
    """Heads to a row of the grid picture: rows as even as can be, at most ``most`` to a row."""
    rows = -(-max(n_heads, 1) // most)
    return -(-max(n_heads, 1) // rows)


def _rgb(colour: str) -> tuple[int, int, int]:
    """A Plotly colour ("#rrggbb" or "rgb(r, g, b)") as three bytes."""
    if colour.startswith("#"):
        return tuple(int(c) for c in plotly.colors.hex_to_rgb(colour))
    return tuple(int(round(float(c))) for c in plotly.colors.unlabel_rgb(colour))


@functools.lru_cache(maxsize=8)
def grid_palette(colors: tuple[str, ...], paper: str, text: str) -> bytes:
    """A grid picture's 256-colour palette: the scale at 0 … 100 %, then paper, frame, text and edge colours."""
    scale = plotly.colors.sample_colorscale(list(colors), [i / SHARE_LEVELS for i in range(SHARE_LEVELS + 1)])
    table = np.zeros((256, 3), dtype=np.uint8)
    table[: SHARE_LEVELS + 1] = [_rgb(c) for c in scale]
    table[_PAPER], table[_FRAME], table[_TEXT], table[_EDGE] = _rgb(paper), _rgb(FRAME), _rgb(text), EDGE_RGB
    return table.tobytes()


@functools.lru_cache(maxsize=32)
def _label_pixels(n_heads: int, per_row: int, cell: tuple[int, int], size: int) -> tuple[np.ndarray, np.ndarray]:
    """The (rows, columns) of the pixels of a grid picture's labels ("H0", "H1" …): drawn once, then stamped."""
    from PIL import Image, ImageDraw, ImageFont

    cell_h, cell_w = cell
    rows = -(-n_heads // per_row)
    mask = Image.new("L", (per_row * cell_w, rows * cell_h), 0)
    draw = ImageDraw.Draw(mask)
    font = ImageFont.load_default(size=size)  # Pillow's own font (FreeType); a bitmap font without it
    for h in range(n_heads):
        r, c = divmod(h, per_row)
        draw.text((c * cell_w + GRID_PAD_PX - 1, r * cell_h + 2), f"H{h}", fill=255, font=font)
    ys, xs = np.nonzero(np.asarray(mask) >= 128)
    ys.flags.writeable = xs.flags.writeable = False
    return ys, xs


def grid_png(tiles: np.ndarray, head: int, per_row: int) -> bytes:
    """One layer's heads ``[1, heads, s, t]`` as one palette PNG (Explore's grid): ``per_row`` named thumbnails to a
    row, each coloured to its own maximum, ``head`` framed in red."""
    from PIL import Image

    look = theme.current()
    shares = np.asarray(tiles[0], dtype=np.float32)
    n_heads, s, t = shares.shape
    # larger with the type on a projector; a phone keeps the default size (three a row fit its width)
    tile_px = GRID_TILE_PX * (1 if look.compact else look.tick_px / theme.DEFAULT.tick_px)
    scale = max(1, round(tile_px / max(s, t)))  # whole screen pixels a cell
    label_px = look.tick_px + 5
    tile_h, tile_w = s * scale, t * scale
    cell_h, cell_w = label_px + tile_h + 2 * GRID_PAD_PX, tile_w + 2 * GRID_PAD_PX
    rows = -(-n_heads // per_row)
    levels = share_levels(shares, off=_PAPER)  # a cell that is not a weight shows the page
    # each head's cell of the picture: its label strip, padding, a 1 px edge and the thumbnail, whole pixels a cell
    cells = np.full((rows * per_row, cell_h, cell_w), _PAPER, dtype=np.uint8)
    y, x = label_px + GRID_PAD_PX, GRID_PAD_PX
    cells[:n_heads, y - 1 : y + tile_h + 1, x - 1 : x + tile_w + 1] = _EDGE
    cells[:n_heads, y : y + tile_h, x : x + tile_w] = levels.repeat(scale, axis=1).repeat(scale, axis=2)
    f = FRAME_PX + 1  # the chosen head's frame: in the padding, outside the thumbnail's edge
    ring = cells[min(max(head, 0), n_heads - 1), y - f : y + tile_h + f, x - f : x + tile_w + f]
    ring[: f - 1], ring[-(f - 1) :], ring[:, : f - 1], ring[:, -(f - 1) :] = _FRAME, _FRAME, _FRAME, _FRAME
    canvas = cells.reshape(rows, per_row, cell_h, cell_w).transpose(0, 2, 1, 3).reshape(rows * cell_h, -1)
    canvas[_label_pixels(n_heads, per_row, (cell_h, cell_w), look.tick_px)] = _TEXT
    picture = Image.frombuffer("P", (canvas.shape[1], canvas.shape[0]), np.ascontiguousarray(canvas), "raw", "P", 0, 1)
    picture.putpalette(grid_palette(tuple(look.colors), look.paper, look.text))
    out = io.BytesIO()
    picture.save(out, format="PNG", compress_level=1)
    return out.getvalue()
