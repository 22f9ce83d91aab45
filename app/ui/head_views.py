"""Whole-model head views: every layer × head in one plot, each cell a whole percent of its head's maximum, each tile
with a marker naming its head (Explore's grid picture: ``app/views/explore/grid_picture.py``)."""

from __future__ import annotations

import numpy as np

from app.ui.charts import frame
from app.ui.heatmap import colorscale_stops, label_axis, label_margin

GAP = 1  # empty cells between tiles
FRAME = "#d62728"  # the chosen head's outline


def tile_centres(n_layers: int, n_heads: int, s: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    xs = np.arange(n_heads) * (t + GAP) + (t - 1) / 2
    ys = np.arange(n_layers) * (s + GAP) + (s - 1) / 2
    return xs, ys


def tile_peak(tile: np.ndarray) -> float:
    """A tile's largest finite value, 0.0 when it has none."""
    finite = np.isfinite(tile)
    return float(np.max(tile[finite])) if finite.any() else 0.0


def mosaic(tiles: np.ndarray, fill: float) -> np.ndarray:
    """``[rows, cols, s, t]`` tiles as one array of their type, ``fill`` in the gaps between them."""
    n_rows, n_cols, s, t = tiles.shape
    out = np.full((n_rows, s + GAP, n_cols, t + GAP), fill, dtype=tiles.dtype)
    out[:, :s, :, :t] = tiles.transpose(0, 2, 1, 3)
    return np.ascontiguousarray(out.reshape(n_rows * (s + GAP), n_cols * (t + GAP))[:-GAP, :-GAP])


def tile_mosaic(tiles: np.ndarray, *, normalise: bool = False) -> np.ndarray:
    """``[rows, cols, s, t]`` tiles as one float32 array, NaN gaps between them; ``normalise``: each by its maximum."""
    tiles = np.asarray(tiles, dtype=np.float32)
    if normalise:
        peaks = [[tile_peak(tile) or 1.0 for tile in row] for row in tiles]
        tiles = tiles / np.asarray(peaks, dtype=np.float32)[:, :, None, None]
    return mosaic(tiles, np.nan)


SHARE_LEVELS = 100  # a head view's cells: whole percents of their head's maximum
#: a mosaic cell that is no head's (the gaps between tiles, a blocked cell): one byte above every share, drawn clear
OFF_TILE = 255


def share_levels(tiles: np.ndarray, off: int = OFF_TILE) -> np.ndarray:
    """Each ``[..., s, t]`` tile's cells as whole percents of its maximum (``uint8``), ``off`` where a cell is not a
    weight (not finite, or negative)."""
    tiles = np.asarray(tiles, dtype=np.float32)
    shown = np.isfinite(tiles) & (tiles >= 0.0)
    weights = np.where(shown, tiles, np.float32(0.0))
    peaks = weights.max(axis=(-2, -1), keepdims=True)
    levels = np.rint(weights / np.where(peaks > 0, peaks, np.float32(1.0)) * np.float32(SHARE_LEVELS))
    return np.where(shown, np.minimum(levels, SHARE_LEVELS), off).astype(np.uint8)


def share_tiles(tiles: np.ndarray) -> list[dict]:
    """``[rows, cols, s, t]`` tiles as one small heatmap trace each, every cell a whole percent of its tile's maximum
    (``uint8``; float with NaN holes where a cell is not a weight)."""
    n_rows, n_cols, s, t = tiles.shape
    levels = share_levels(tiles)
    holes = np.where(levels == OFF_TILE, np.float32(np.nan), levels)
    hover = "%{z:.0f}% of this head's max (exact weights: open the head large)<extra></extra>"
    common = dict(type="heatmap", colorscale=colorscale_stops(), zmin=0, zmax=SHARE_LEVELS, showscale=False)
    common |= dict(hoverongaps=False, hovertemplate=hover)
    return [
        {
            **common,
            "z": holes[r, c] if (levels[r, c] == OFF_TILE).any() else levels[r, c],
            "x0": c * (t + GAP),
            "y0": r * (s + GAP),
        }
        for r in range(n_rows)
        for c in range(n_cols)
    ]


def share_mosaic(tiles: np.ndarray) -> dict:
    """``[rows, cols, s, t]`` tiles as one ``uint8`` heatmap of whole percents, gaps :data:`OFF_TILE` (drawn clear);
    no hover of its own: the head's marker names it."""
    top = SHARE_LEVELS / OFF_TILE  # where the theme's scale ends on a 0–255 axis; above it, clear
    clear = "rgba(255,255,255,0)"
    stops = [[position * top, colour] for position, colour in colorscale_stops()]
    return {
        "type": "heatmap",
        "z": mosaic(share_levels(tiles), OFF_TILE),
        "colorscale": [*stops, [(SHARE_LEVELS + 0.5) / OFF_TILE, clear], [1.0, clear]],
        "zmin": 0,
        "zmax": OFF_TILE,
        "showscale": False,
        "hoverinfo": "skip",
    }


def model_view_spec(
    tiles: np.ndarray,
    selected: tuple[int, int] | None = None,
    width_px: int = 760,
    *,
    layer_names: list[str] | None = None,
    per_tile: bool = False,
) -> dict:
    """All heads ``tiles`` ``[layer, head, s, t]`` in a layer × head grid, ``selected`` outlined in red, sized for
    ``width_px``; ``per_tile``: one heatmap per tile (hover per cell) instead of one mosaic. The last trace is one
    clickable marker per head (``customdata = [layer, head]``)."""
    n_layers, n_heads, s, t = tiles.shape
    xs, ys = tile_centres(n_layers, n_heads, s, t)
    grid_x, grid_y = np.meshgrid(xs, ys)
    heads, layers = np.meshgrid(np.arange(n_heads), np.arange(n_layers))
    heatmaps = share_tiles(tiles) if per_tile else [share_mosaic(tiles)]
    marker = {"size": max(8, min(40, int(width_px / n_heads * 0.5))), "color": "rgba(0,0,0,0.01)", "symbol": "square"}
    markers = {  # invisible, one per tile: a click selects that head
        "type": "scatter",
        "x": grid_x.ravel(),
        "y": grid_y.ravel(),
        "mode": "markers",
        "showlegend": False,
        "marker": marker,
        "customdata": np.stack([layers.ravel(), heads.ravel()], axis=-1),
        "name": "heads",
        "hovertemplate": "layer %{customdata[0]}, head %{customdata[1]}<br>click to open it large (its exact "
        "weights)<extra></extra>",
    }
    shapes = []
    if selected is not None:
        r0, c0 = selected[0] * (s + GAP) - 0.5, selected[1] * (t + GAP) - 0.5
        shapes = [frame(c0, c0 + t, r0, r0 + s, FRAME)]
    tile_px = max(30, width_px // max(n_heads, 1))
    row_names = layer_names or [f"L{layer}" for layer in range(n_layers)]
    return {
        "data": [*heatmaps, markers],
        "layout": {
            "height": int(min(1400, max(200, tile_px * n_layers * s / max(t, 1) + 80))),
            "margin": {"l": label_margin(row_names, "layer"), "r": 10, "t": 40, "b": 10},
            "plot_bgcolor": "white",
            "clickmode": "event+select",
            "dragmode": False,
            **({"shapes": shapes} if shapes else {}),
            "xaxis": label_axis("head", xs.tolist(), [f"H{h}" for h in range(n_heads)], side="top"),
            # square tiles whatever the page width
            "yaxis": label_axis(
                "layer", ys.tolist(), row_names, autorange="reversed", scaleanchor="x", constrain="domain"
            ),
        },
    }
