"""Untrusted image bytes in, a plain numpy image out — or an :class:`ImageError` that says why not.

What an upload must pass, in this order (nothing is written to disk; the bytes stay in memory)::

    bytes       non-empty, at most MAX_BYTES
    content     sniffed by Pillow from the bytes themselves (the file name/extension is ignored),
                one of ALLOWED_FORMATS
    header      width · height ≤ max_pixels, read from the header *before* any pixel is decoded
    bombs       Pillow's DecompressionBombWarning / DecompressionBombError become ImageError
    decode      a truncated or corrupt file becomes ImageError (never a half-grey image)
    frames      an animated GIF/PNG/WebP (or multi-page TIFF, MPO) keeps its first frame, with a notice
    rotation    the EXIF orientation tag is applied (phone photos come out upright)
    mode        1/L/RGB pass; P (palette) → RGB(A); CMYK, YCbCr, LAB, HSV → RGB;
                16/32-bit grey ("I;16", "I") → 8-bit; alpha (RGBA, LA, PA) composited, with a notice;
                anything else is refused
    size        a side longer than MAX_SIDE is shrunk (box filter), with a notice

The result is ``uint8`` ``[H, W]`` (grey) or ``[H, W, 3]`` (RGB), what ``engine.trace`` takes for a ViT.
:func:`to_unit_range` is the first step every image model's own preprocessing shares.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from engine.records import EngineError

MAX_BYTES = 10 * 1024 * 1024  # the app's upload limit (.streamlit/config.toml: maxUploadSize = 10)
MAX_PIXELS = 25_000_000  # a 25-megapixel photo; a header claiming more is refused before decoding
MAX_SIDE = 1024  # longer sides are shrunk: the models read 8×8 … 384×384 pixels anyway
ALLOWED_FORMATS = ("PNG", "JPEG", "GIF", "BMP", "WEBP", "TIFF")  # Pillow's JPEG opener also reads phones' MPO files


class ImageError(EngineError):
    """An uploaded file is not an image this app can read; ``str(err)`` is for the user."""


@dataclass(frozen=True, eq=False)
class DecodedImage:
    """A validated image.

    Attributes:
        pixels: ``uint8`` ``[H, W]`` (grey) or ``[H, W, 3]`` (RGB).
        format: what Pillow found in the bytes (``"PNG"``, ``"JPEG"``, …).
        original_size: ``(width, height)`` from the file header.
        notices: sentences for the UI (first frame only, transparency removed, shrunk, …).
    """

    pixels: np.ndarray
    format: str
    original_size: tuple[int, int]
    notices: tuple[str, ...] = field(default_factory=tuple)


def to_unit_range(arr: np.ndarray) -> np.ndarray:
    """Values to 0–1: uint8 and bool as usual; other types by their range (0–1, the digits' 0–16, 0–255)."""
    if arr.dtype == np.bool_:
        return arr.astype(np.float64)
    if arr.dtype == np.uint8:
        return arr.astype(np.float64) / 255.0
    x = arr.astype(np.float64)
    lo, hi = float(x.min()), float(x.max())
    if lo >= 0 and hi <= 1:
        return x
    if lo >= 0 and hi <= 16:
        return x / 16.0  # scikit-learn's digits: counts 0–16
    if lo >= 0 and hi <= 255:
        return x / 255.0
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def _bomb(err: Exception, n_bytes: int) -> ImageError:
    """Pillow's decompression-bomb error/warning (its message holds the pixel count) → ImageError."""
    found = re.search(r"\((\d+) pixels\)", str(err))
    size = f"{int(found.group(1)) / 1e6:,.0f} megapixels" if found else "far more megapixels than it stores"
    amount = f"{n_bytes:,} bytes" if n_bytes < 10_240 else f"{n_bytes / 1024:,.0f} kB"
    source = f" from a file of {amount}" if n_bytes else ""
    return ImageError(
        f"The image is too large: it would unpack to {size}{source}. It was refused before "
        "decoding (a possible 'decompression bomb')."
    )


def _open(data: bytes, max_pixels: int):
    """Open (header only) and check format and size; bombs and non-images become ImageError."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=list(ALLOWED_FORMATS))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise _bomb(err, len(data)) from None
    except UnidentifiedImageError:
        raise ImageError(
            "This file is not an image this app can read (PNG, JPEG, GIF, BMP, WebP or TIFF), whatever its name says."
        ) from None
    except (OSError, ValueError, SyntaxError) as err:
        raise ImageError(f"This image file is damaged and cannot be read ({type(err).__name__}).") from None
    width, height = image.size
    if width <= 0 or height <= 0:
        raise ImageError(f"The image has no pixels ({width}×{height}).")
    if width * height > max_pixels:
        raise ImageError(
            f"The image is too large: {width}×{height} pixels ({width * height / 1e6:.0f} megapixels); "
            f"the limit is {max_pixels / 1e6:.0f} megapixels. Shrink it and try again."
        )
    return image


def _decode(image, notices: list[str]):
    """Decode the first frame; truncated data and bombs become ImageError."""
    from PIL import Image

    if getattr(image, "is_animated", False) or getattr(image, "n_frames", 1) > 1:
        notices.append(
            f"The file holds {image.n_frames} frames (animated or multi-page): only the first frame is used."
        )
        image.seek(0)
    if image.format == "JPEG" and max(image.size) > 2 * MAX_SIDE:
        image.draft("RGB", (MAX_SIDE, MAX_SIDE))  # decode a JPEG at 1/2, 1/4 or 1/8 scale directly
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise _bomb(err, 0) from None
    except (OSError, ValueError, SyntaxError, EOFError) as err:
        detail = "it is cut off (truncated)" if "truncated" in str(err).lower() else type(err).__name__
        raise ImageError(f"This image file is damaged and cannot be read: {detail}.") from None
    return image


def _composite(rgba: np.ndarray, notices: list[str]) -> np.ndarray:
    """``[H, W, 2|4]`` uint8 with alpha → over white, or over black when the opaque strokes are light."""
    colour, alpha = rgba[..., :-1].astype(np.float64), rgba[..., -1:].astype(np.float64) / 255.0
    if np.all(alpha == 1.0):
        return rgba[..., :-1]
    opaque = alpha[..., 0] > 0.5
    light_strokes = opaque.any() and colour[opaque].mean() >= 128
    background = 0.0 if light_strokes else 255.0
    notices.append(f"Transparent parts were filled with {'black' if light_strokes else 'white'}.")
    out = alpha * colour + (1.0 - alpha) * background
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _to_array(image, notices: list[str]) -> np.ndarray:
    """Any supported Pillow mode → uint8 ``[H, W]`` or ``[H, W, 3]``."""
    mode = image.mode
    if mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
        mode = image.mode
    elif mode == "PA":
        image, mode = image.convert("RGBA"), "RGBA"
    if mode in ("L", "RGB"):
        return np.asarray(image, dtype=np.uint8).copy()
    if mode == "1":
        return np.asarray(image.convert("L"), dtype=np.uint8).copy()
    if mode in ("CMYK", "YCbCr", "LAB", "HSV"):
        notices.append(f"The {mode} image was converted to RGB.")
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()
    if mode in ("I;16", "I;16B", "I;16L", "I;16N", "I"):
        values = np.asarray(image, dtype=np.float64)
        top = 65535.0 if mode.startswith("I;16") or values.max() <= 65535 else float(values.max())
        notices.append("The 16-bit image was reduced to 8 bits per pixel.")
        return np.clip(np.rint(np.clip(values, 0, None) * 255.0 / top), 0, 255).astype(np.uint8)
    if mode in ("RGBA", "LA", "RGBa", "La"):
        if mode in ("RGBa", "La"):  # premultiplied alpha
            image = image.convert("RGBA" if mode == "RGBa" else "LA")
        out = _composite(np.asarray(image, dtype=np.uint8), notices)
        return out[..., 0] if out.shape[-1] == 1 else out
    raise ImageError(f"Images in Pillow's {mode!r} mode are not supported; save it as an ordinary RGB PNG or JPEG.")


def _upright(image, notices: list[str]):
    """Apply the EXIF orientation tag (a phone photo taken sideways is stored sideways)."""
    from PIL import ImageOps

    try:
        orientation = image.getexif().get(0x0112, 1)
    except Exception:  # noqa: BLE001 — Pillow's EXIF parsing of any photo has no one error type
        return image
    if orientation in (None, 1):
        return image
    notices.append("The photo was turned upright, as its camera orientation tag says.")
    return ImageOps.exif_transpose(image)


def _shrink(pixels: np.ndarray, notices: list[str]) -> np.ndarray:
    from PIL import Image

    height, width = pixels.shape[:2]
    if max(height, width) <= MAX_SIDE:
        return pixels
    scale = MAX_SIDE / max(height, width)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    notices.append(f"The image was shrunk from {width}×{height} to {size[0]}×{size[1]} pixels.")
    return np.asarray(Image.fromarray(pixels).resize(size, Image.Resampling.BOX), dtype=np.uint8)


def read_image(data: bytes, *, max_pixels: int = MAX_PIXELS, max_bytes: int = MAX_BYTES) -> DecodedImage:
    """Validate and decode untrusted image bytes (in memory only).

    Args:
        data: the file's bytes, as uploaded.
        max_pixels: refuse images whose header claims more pixels than this.
        max_bytes: refuse files bigger than this.

    Returns:
        A :class:`DecodedImage` (uint8 grey or RGB pixels, format, header size, notices).

    Raises:
        ImageError: empty, too big, not an image, damaged, a decompression bomb, an unsupported mode.

    Example:
        >>> img = read_image(open("cat.png", "rb").read())
        >>> img.pixels.shape   # (H, W, 3)
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ImageError(f"Expected the bytes of an image file, got {type(data).__name__}.")
    data = bytes(data)
    if not data:
        raise ImageError("The file is empty.")
    if len(data) > max_bytes:
        raise ImageError(f"The file is too big: {len(data) / 2**20:.1f} MB; the limit is {max_bytes / 2**20:.0f} MB.")
    image = _open(data, max_pixels)
    notices: list[str] = []
    original = (int(image.size[0]), int(image.size[1]))
    image = _decode(image, notices)
    fmt = str(image.format or "")
    pixels = _shrink(_to_array(_upright(image, notices), notices), notices)
    return DecodedImage(pixels=pixels, format=fmt, original_size=original, notices=tuple(notices))
