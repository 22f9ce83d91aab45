"""Upload validation (``engine.images.read_image``): every bad file gives a readable ImageError, odd
modes are converted to the values Pillow's own documented formulas give, and nothing touches disk."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from engine.images import MAX_SIDE, ImageError, read_image


def _save(image: Image.Image, fmt: str = "PNG", **kwargs) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format=fmt, **kwargs)
    return buf.getvalue()


def _png_header_claiming(width: int, height: int) -> bytes:
    """A 60-byte PNG: signature + an IHDR chunk with the given size (8-bit grey) + one tiny IDAT + IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00")) + chunk(b"IEND", b"")


def _gif_header_claiming(width: int, height: int) -> bytes:
    """A GIF89a logical screen + one image descriptor claiming ``width × height``, with almost no data."""
    screen = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    descriptor = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0)
    return screen + descriptor + b"\x02\x02\x44\x01\x00\x3b"


# ---------------------------------------------------------------- refused, with a message


@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
def test_text_bytes_named_png_are_not_an_image():
    with pytest.raises(ImageError, match="not an image"):
        read_image(b"Hello, I am a text file renamed to photo.png\n" * 10)


def test_empty_bytes():
    with pytest.raises(ImageError, match="empty"):
        read_image(b"")


def test_not_bytes():
    with pytest.raises(ImageError, match="bytes"):
        read_image("photo.png")  # type: ignore[arg-type]


@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_file(fmt: str):
    rng = np.random.default_rng(0)
    data = _save(Image.fromarray(rng.integers(0, 256, (120, 160, 3), dtype=np.uint8)), fmt)
    with pytest.raises(ImageError, match="damaged") as err:
        read_image(data[: len(data) // 2])
    assert "truncated" in str(err.value) or "Error" in str(err.value)


@pytest.mark.parametrize(
    "header", [_png_header_claiming(60_000, 60_000), _gif_header_claiming(65_000, 65_000)], ids=["png", "gif"]
)
@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
def test_header_claiming_a_huge_size_is_refused_before_decoding(header: bytes):
    assert len(header) < 100
    with pytest.raises(ImageError, match="too large") as err:
        read_image(header)
    assert "megapixels" in str(err.value)


def test_pixel_cap_is_a_parameter():
    data = _save(Image.new("L", (100, 100)))
    read_image(data, max_pixels=10_000)
    with pytest.raises(ImageError, match="100×100"):
        read_image(data, max_pixels=9_999)


@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
def test_too_many_bytes():
    with pytest.raises(ImageError, match="too big"):
        read_image(b"\x89PNG" + b"\0" * 2000, max_bytes=1000)


@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
def test_decompression_bomb_pillow_error_and_warning(monkeypatch):
    """A small file that unpacks to many pixels: Pillow's own bomb check, turned into ImageError."""
    data = _save(Image.new("L", (3000, 3000)))  # 9 Mpx of zeros compress to a few kB
    assert len(data) < 50_000
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1_000_000)  # > 2× → DecompressionBombError
    with pytest.raises(ImageError, match="decompression bomb"):
        read_image(data)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 6_000_000)  # 1–2× → DecompressionBombWarning
    with pytest.raises(ImageError, match="decompression bomb"):
        read_image(data)


def test_unsupported_mode_is_refused():
    data = _save(Image.new("F", (4, 4), 0.5), "TIFF")
    with pytest.raises(ImageError, match="'F' mode"):
        read_image(data)


# ---------------------------------------------------------------- converted, with checked values


def test_rgb_png_passes_unchanged():
    rgb = np.random.default_rng(1).integers(0, 256, (7, 9, 3), dtype=np.uint8)
    out = read_image(_save(Image.fromarray(rgb)))
    assert out.format == "PNG" and out.original_size == (9, 7) and out.notices == ()
    np.testing.assert_array_equal(out.pixels, rgb)


def test_cmyk_jpeg_becomes_rgb():
    # pure cyan (C=255) and white (0,0,0,0): Pillow's CMYK→RGB is R = 255 − C (no ICC profile)
    cmyk = np.zeros((16, 16, 4), dtype=np.uint8)
    cmyk[:8, :, 0] = 255
    data = _save(Image.fromarray(cmyk, mode="CMYK"), "TIFF")
    out = read_image(data)
    assert out.pixels.shape == (16, 16, 3) and out.pixels.dtype == np.uint8
    np.testing.assert_array_equal(out.pixels[0, 0], [0, 255, 255])
    np.testing.assert_array_equal(out.pixels[-1, -1], [255, 255, 255])
    assert any("CMYK" in n for n in out.notices)


def test_16_bit_grey_becomes_8_bit():
    values = np.array([[0, 257, 65535], [32896, 1000, 65280]], dtype=np.uint16)
    image = Image.fromarray(values)
    assert image.mode == "I;16"
    data = _save(image)
    out = read_image(data)
    expected = np.rint(values.astype(np.float64) * 255 / 65535).astype(np.uint8)
    np.testing.assert_array_equal(out.pixels, expected)
    assert out.pixels[0].tolist() == [0, 1, 255]
    assert any("16-bit" in n for n in out.notices)


def test_rgba_is_composited_over_white():
    rgba = np.zeros((2, 2, 4), dtype=np.uint8)
    rgba[0, 0] = [200, 0, 0, 255]  # opaque dark red
    rgba[0, 1] = [0, 0, 0, 128]  # half-transparent black
    rgba[1, :] = [10, 20, 30, 0]  # fully transparent
    out = read_image(_save(Image.fromarray(rgba, mode="RGBA")))
    a = 128 / 255
    np.testing.assert_array_equal(out.pixels[0, 0], [200, 0, 0])
    np.testing.assert_array_equal(out.pixels[0, 1], [round(255 * (1 - a))] * 3)
    np.testing.assert_array_equal(out.pixels[1, 0], [255, 255, 255])
    assert any("white" in n for n in out.notices)


def test_light_strokes_on_transparent_are_composited_over_black():
    la = np.zeros((4, 4, 2), dtype=np.uint8)
    la[1:3, 1:3] = [255, 255]  # white opaque square, rest transparent
    out = read_image(_save(Image.fromarray(la, mode="LA")))
    assert out.pixels.shape == (4, 4)
    assert out.pixels[1, 1] == 255 and out.pixels[0, 0] == 0
    assert any("black" in n for n in out.notices)


def test_palette_image_takes_its_palette_colours():
    p = Image.new("P", (3, 1))
    p.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * (256 * 3 - 9))
    p.putdata([0, 1, 2])
    out = read_image(_save(p))
    np.testing.assert_array_equal(out.pixels[0], [[255, 0, 0], [0, 255, 0], [0, 0, 255]])


def test_animated_gif_keeps_the_first_frame_with_a_notice():
    frames = [Image.new("L", (8, 8), v) for v in (40, 200, 120)]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    out = read_image(buf.getvalue())
    assert out.format == "GIF"
    assert out.pixels.ndim in (2, 3)
    grey = out.pixels if out.pixels.ndim == 2 else out.pixels[..., 0]
    assert np.all(grey == 40), np.unique(grey)
    assert any("3 frames" in n and "first" in n for n in out.notices)


def test_exif_orientation_turns_a_sideways_photo_upright():
    stored = np.zeros((20, 40, 3), dtype=np.uint8)  # 40 wide, 20 tall, as the sensor stored it
    stored[:, :20] = [250, 250, 250]  # left half white
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90° clockwise to display"
    out = read_image(_save(Image.fromarray(stored), "PNG", exif=exif.tobytes()))
    assert out.pixels.shape == (40, 20, 3)  # now tall
    assert out.pixels[2, 10].min() > 200 and out.pixels[-3, 10].max() < 50  # the white half is on top
    assert any("upright" in n for n in out.notices)


def test_phone_style_mpo_jpeg_is_read():
    frames = [Image.new("RGB", (16, 12), (200, 30, 30)), Image.new("RGB", (16, 12), (30, 200, 30))]
    buf = io.BytesIO()
    frames[0].save(buf, format="MPO", save_all=True, append_images=frames[1:])
    out = read_image(buf.getvalue())
    assert out.pixels.shape == (12, 16, 3)
    assert abs(int(out.pixels[6, 8, 0]) - 200) < 8 and out.pixels[6, 8, 1] < 60  # the first (red) frame


def test_big_photo_is_shrunk_with_a_notice():
    data = _save(Image.new("RGB", (3000, 1500), (10, 200, 30)), "PNG")
    out = read_image(data)
    assert max(out.pixels.shape[:2]) == MAX_SIDE and out.original_size == (3000, 1500)
    np.testing.assert_array_equal(out.pixels[5, 5], [10, 200, 30])
    assert any("shrunk" in n for n in out.notices)


@pytest.mark.reliability  # also part of the reliability suite (-m reliability)
def test_nothing_is_written_to_disk(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    read_image(_save(Image.new("RGB", (50, 40), (1, 2, 3)), "JPEG"))
    assert list(tmp_path.iterdir()) == []
