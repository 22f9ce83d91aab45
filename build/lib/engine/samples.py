"""Sample images for the Vision Transformer page, all available offline.

- digits: scikit-learn's bundled ``load_digits`` (8×8, values 0–16); ``tiny-vit-digits`` never trained on
  a stratified 20% of them (``digit_split``: the same ``train_test_split`` its recipe uses),
- shapes: drawn here, white on black, from a few formulas on a pixel grid::

      circle  r(y, x) = √((y − c)² + (x − c)²) ≤ R          ring    |r − R| ≤ w
      square  max(|y − c|, |x − c|) ≤ R                    cross   |y − c| ≤ w  or  |x − c| ≤ w
      diagonal |y − x| ≤ w                                  triangle  y ≥ top and |x − c| ≤ (y − top)/2

- photos: scikit-learn's bundled ``load_sample_images()`` (china.jpg, flower.jpg, 427×640 RGB).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

SHAPES = ("circle", "ring", "square", "cross", "diagonal", "triangle")
PHOTOS = ("china", "flower")
SOURCES = ("digit", "shape", "photo")


def _after_torch() -> None:
    """Wait for torch's import to finish before scikit-learn runs.

    scikit-learn calls scipy, whose array-API check reads ``sys.modules["torch"]`` without importing it:
    while the server's warm-up thread is still importing torch, that is a half-made module and the first
    visit to the ViT page failed. ``import torch`` waits on the module's import lock until it is whole
    (and costs nothing once it is); every page that shows these samples runs torch models anyway."""
    import torch  # noqa: F401


@lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    _after_torch()
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.images.astype(np.float32), data.target.astype(np.int64)


def n_digits() -> int:
    """How many digit samples there are (1797)."""
    return len(_digits()[1])


DIGIT_SPLIT_SEED = 0  # the held-out split of ``tiny-vit-digits`` is fixed, whatever the training seed
DIGIT_TEST_FRACTION = 0.2


@lru_cache(maxsize=4)
def digit_split(split_seed: int = DIGIT_SPLIT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the digits ``(train, held_out)``: 80/20, stratified by class, seeded.

    ``train_test_split`` draws the partition from the labels and the seed alone, so indexing the images
    with these gives exactly the arrays that splitting the images themselves gives.
    """
    _after_torch()
    from sklearn.model_selection import train_test_split

    labels = _digits()[1]
    train, held_out = train_test_split(
        np.arange(len(labels)), test_size=DIGIT_TEST_FRACTION, stratify=labels, random_state=split_seed
    )
    return train, held_out


def digit_held_out(index: int) -> bool:
    """True when ``tiny-vit-digits`` never trained on digit sample ``index`` (wrapped into range)."""
    return bool(np.isin(int(index) % n_digits(), digit_split()[1]))


def digit(index: int) -> tuple[np.ndarray, int]:
    """Digit sample ``index`` (wrapped into range): ``([8, 8] float32 in 0–16, true label)``."""
    images, labels = _digits()
    i = int(index) % len(labels)
    return images[i].copy(), int(labels[i])


def shape(name: str, size: int = 64) -> np.ndarray:
    """A white shape on black, ``[size, size]`` uint8.

    Raises:
        ValueError: an unknown shape name (see ``SHAPES``).
    """
    if name not in SHAPES:
        raise ValueError(f"unknown shape {name!r}; choose one of {', '.join(SHAPES)}")
    y, x = np.mgrid[0:size, 0:size].astype(np.float64) + 0.5
    c, radius, width = size / 2, 0.32 * size, 0.08 * size
    r = np.hypot(y - c, x - c)
    top = 0.15 * size
    masks = {
        "circle": r <= radius,
        "ring": np.abs(r - radius) <= width,
        "square": np.maximum(np.abs(y - c), np.abs(x - c)) <= radius,
        "cross": ((np.abs(y - c) <= width) | (np.abs(x - c) <= width))
        & (np.maximum(np.abs(y - c), np.abs(x - c)) <= radius + width),
        "diagonal": (np.abs(y - x) <= width) & (np.abs(y - c) <= radius + width),
        "triangle": (y >= top) & (y <= size - top) & (np.abs(x - c) <= (y - top) / 2),
    }
    return (masks[name] * 255).astype(np.uint8)


@lru_cache(maxsize=2)
def _photo(name: str) -> np.ndarray:
    _after_torch()
    from sklearn.datasets import load_sample_images

    bundle = load_sample_images()
    for filename, image in zip(bundle.filenames, bundle.images):
        if filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1] == f"{name}.jpg":
            return np.asarray(image, dtype=np.uint8)
    raise ValueError(f"scikit-learn ships no sample photo {name!r}")


def photo(name: str) -> np.ndarray:
    """A photo bundled with scikit-learn, ``[427, 640, 3]`` uint8 (``"china"`` or ``"flower"``).

    Raises:
        ValueError: an unknown photo name.
    """
    if name not in PHOTOS:
        raise ValueError(f"unknown photo {name!r}; choose one of {', '.join(PHOTOS)}")
    return _photo(name).copy()
