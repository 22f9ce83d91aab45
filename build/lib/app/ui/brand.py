"""The app's favicon, drawn at start-up (a ``:material/…:`` icon would be fetched from Google's font CDN)."""

from __future__ import annotations

from functools import lru_cache

from PIL import Image, ImageDraw


@lru_cache(maxsize=1)
def favicon() -> Image.Image:
    """A 32×32 picture of a tiny attention heatmap: a 4×4 grid, darker on the diagonal."""
    img = Image.new("RGB", (32, 32), "white")
    draw = ImageDraw.Draw(img)
    for row in range(4):
        for col in range(4):
            weight = 1.0 if row == col else (0.45 if col == row - 1 else 0.12)
            shade = tuple(int(255 - weight * (255 - c)) for c in (31, 95, 191))  # the theme's primary colour
            draw.rectangle([col * 8 + 1, row * 8 + 1, col * 8 + 7, row * 8 + 7], fill=shade)
    return img
