r"""Generated scenes for the image captioner: seeded pictures of shapes with captions and true boxes.

Each scene is a small RGB image (64×64 by default) on a plain or textured background holding one or two
objects. An object is a shape (circle, square, triangle), a colour and a size (small or large) at some
position. The generator knows everything it drew, so every scene comes with

* its caption, from a small grammar::

      caption  = object | object relation object
      object   = "a" size colour shape             ("a small red circle")
      relation = "above" | "below" | "left of" | "right of"

  where the relation says where the *first* object lies with respect to the second (the axis along which
  their centres are further apart; scenes where that is unclear are not drawn). The order is fixed by the
  picture, so one caption is right: a large object before a small one, and of two the same size the one
  above or left of the other (such pairs are always "above" or "left of");
* the true bounding box of every object, in pixels (``(top, left, bottom, right)``, inclusive), measured
  from the pixels it painted.

:func:`parse_caption` reads a caption back into ``(objects, relation)`` so tests and the captioner's
evaluation can check a written caption against the scene; :func:`draw_scene` draws one to order (the Captions
page's "draw one"). Pure numpy; nothing downloaded.

Example:
    >>> scenes = make_scenes(100, seed=0)
    >>> scenes[4].caption
    'a large red square left of a small yellow circle'
    >>> scenes[4].objects[1].box                          # (top, left, bottom, right)
    (33, 28, 42, 37)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHAPES: tuple[str, ...] = ("circle", "square", "triangle")
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.88, 0.12, 0.10),
    "green": (0.10, 0.62, 0.16),
    "blue": (0.12, 0.25, 0.90),
    "yellow": (0.95, 0.80, 0.05),
}
SIZES: dict[str, tuple[int, int]] = {"small": (5, 6), "large": (9, 11)}  # half-width in pixels, low–high
RELATIONS: tuple[str, ...] = ("above", "below", "left of", "right of")
IMAGE_SIZE = 64
#: every word a caption can use, in a fixed order (the captioner's vocabulary)
WORDS: tuple[str, ...] = ("a", *SIZES, *COLOURS, *SHAPES, "above", "below", "left", "right", "of")

Box = tuple[int, int, int, int]  # (top, left, bottom, right), inclusive pixel indices


@dataclass(frozen=True)
class SceneObject:
    """One drawn object.

    Attributes:
        shape: one of :data:`SHAPES`.
        colour: one of :data:`COLOURS`.
        size: ``"small"`` or ``"large"``.
        box: the pixels it painted, ``(top, left, bottom, right)`` inclusive.
    """

    shape: str
    colour: str
    size: str
    box: Box

    @property
    def words(self) -> tuple[str, ...]:
        return ("a", self.size, self.colour, self.shape)

    @property
    def centre(self) -> tuple[float, float]:
        """``(row, column)`` of the box's centre."""
        top, left, bottom, right = self.box
        return (top + bottom) / 2, (left + right) / 2


@dataclass(frozen=True, eq=False)
class Scene:
    """One image with its objects (in caption order) and the relation between them.

    Attributes:
        image: ``[H, W, 3]`` float32 in 0–1.
        objects: one or two :class:`SceneObject`, in the order the caption names them.
        relation: where the first object lies relative to the second; None with one object.
        textured: whether the background is textured.
    """

    image: np.ndarray
    objects: tuple[SceneObject, ...]
    relation: str | None
    textured: bool

    @property
    def words(self) -> list[str]:
        """The caption as words (``"left of"`` is two words)."""
        words = list(self.objects[0].words)
        if self.relation is not None:
            words += self.relation.split() + list(self.objects[1].words)
        return words

    @property
    def caption(self) -> str:
        return " ".join(self.words)


def relation_of(first: Box, second: Box) -> str | None:
    """Where box ``first`` lies relative to ``second``: the axis where the centres are further apart, or
    None when the two offsets are too close to call (less than 1.5 times apart) or the boxes overlap."""
    (t1, l1, b1, r1), (t2, l2, b2, r2) = first, second
    if not (b1 < t2 or b2 < t1 or r1 < l2 or r2 < l1):
        return None
    dy = (t1 + b1) / 2 - (t2 + b2) / 2
    dx = (l1 + r1) / 2 - (l2 + r2) / 2
    if abs(dy) >= 1.5 * abs(dx):
        return "above" if dy < 0 else "below"
    if abs(dx) >= 1.5 * abs(dy):
        return "left of" if dx < 0 else "right of"
    return None


def _mask(shape: str, cy: float, cx: float, half: int, size: int) -> np.ndarray:
    """Boolean ``[size, size]`` mask of one shape centred at ``(cy, cx)`` with half-width ``half``."""
    rows, cols = np.mgrid[0:size, 0:size].astype(np.float32)  # (S, S) each
    dy, dx = rows - cy, cols - cx
    if shape == "circle":
        return dy**2 + dx**2 <= half**2
    if shape == "square":
        return (np.abs(dy) <= half * 0.85) & (np.abs(dx) <= half * 0.85)
    # an upright triangle: apex at the top, base at the bottom; |dx| grows linearly with the row
    inside_rows = (dy >= -half) & (dy <= half)
    return inside_rows & (np.abs(dx) <= (dy + half) / 2)


def _box(mask: np.ndarray) -> Box:
    rows, cols = np.nonzero(mask)
    return int(rows.min()), int(cols.min()), int(rows.max()), int(cols.max())


def _background(rng: np.random.Generator, size: int, textured: bool) -> np.ndarray:
    base = rng.uniform(0.72, 0.95) + rng.uniform(-0.04, 0.04, size=3)  # a light, slightly tinted grey
    image = np.broadcast_to(base, (size, size, 3)).copy()
    if textured:
        rows, cols = np.mgrid[0:size, 0:size]
        period, angle = rng.uniform(4, 10), rng.uniform(0, np.pi)
        stripes = 0.05 * np.sin((rows * np.sin(angle) + cols * np.cos(angle)) * 2 * np.pi / period)
        image += stripes[..., None] + rng.normal(0, 0.025, size=(size, size, 1))
    return image


def make_scene(rng: np.random.Generator, *, size: int = IMAGE_SIZE, two_objects: float = 0.7) -> Scene:
    """Draw one scene from ``rng``.

    Args:
        rng: the random source (the scene is a function of its state).
        size: image side in pixels.
        two_objects: probability of two objects (else one).
    """
    textured = bool(rng.random() < 0.5)
    image = _background(rng, size, textured)
    count = 2 if rng.random() < two_objects else 1
    while True:  # resample until the objects are apart and their relation is clear
        drawn = []
        for _ in range(count):
            shape, colour = SHAPES[rng.integers(len(SHAPES))], list(COLOURS)[rng.integers(len(COLOURS))]
            size_word = list(SIZES)[rng.integers(len(SIZES))]
            low, high = SIZES[size_word]
            half = int(rng.integers(low, high + 1))
            cy, cx = rng.uniform(half + 1, size - half - 2, size=2)
            mask = _mask(shape, cy, cx, half, size)
            drawn.append((shape, colour, size_word, mask))
        drawn, relation = _caption_order(drawn)
        if count == 1 or relation is not None:
            break
    return _paint(rng, image, drawn, relation, textured)


def _caption_order(drawn: list) -> tuple[list, str | None]:
    """The objects in the order the caption names them, and their relation (None: one object, or unclear).

    The order follows from the picture: the large object first; of two the same size, the one above or left
    of the other."""
    if len(drawn) == 1:
        return drawn, None
    relation = relation_of(_box(drawn[0][3]), _box(drawn[1][3]))
    sizes = [d[2] for d in drawn]
    if sizes == ["small", "large"] or (sizes == sizes[::-1] and relation in ("below", "right of")):
        drawn = drawn[::-1]
        relation = relation_of(_box(drawn[0][3]), _box(drawn[1][3]))
    return drawn, relation


def _paint(rng: np.random.Generator, image: np.ndarray, drawn: list, relation: str | None, textured: bool) -> Scene:
    """Paint ``drawn`` ``(shape, colour, size word, mask)`` onto ``image`` (each in a slightly jittered tint)."""
    objects = []
    for shape, colour, size_word, mask in drawn:
        tint = np.asarray(COLOURS[colour]) + rng.uniform(-0.05, 0.05, size=3)
        image[mask] = tint
        objects.append(SceneObject(shape, colour, size_word, _box(mask)))
    image = np.clip(image, 0.0, 1.0).astype(np.float32)
    return Scene(image=image, objects=tuple(objects), relation=relation, textured=textured)


def draw_scene(
    objects: list[tuple[str, str, str, float, float]], *, textured: bool = False, seed: int = 0, size: int = IMAGE_SIZE
) -> Scene:
    """A scene drawn to order (the Captions page's "draw one").

    Args:
        objects: one or two ``(shape, colour, size word, row, column)``, the centre in pixels; a centre too
            close to the edge is moved in until the whole shape fits (as :func:`make_scene` places them).
            A size word draws the middle of its range of half-widths (:data:`SIZES`).
        textured: striped, noisy background instead of a plain one.
        seed: the background's shade and texture and the colours' small jitter.
        size: image side in pixels.

    Returns:
        The :class:`Scene`, objects in caption order (a large one first, else the one above or left of the
        other), so its ``caption`` is the grammar's one right caption.

    Raises:
        ValueError: an unknown word, not one or two objects, or two objects the grammar cannot relate
            (overlapping, or about as far apart across as down); the message says which.
    """
    if len(objects) not in (1, 2):
        raise ValueError(f"a scene holds one or two objects, not {len(objects)}")
    rng = np.random.default_rng(seed)
    image = _background(rng, size, textured)
    drawn = []
    for shape, colour, size_word, row, col in objects:
        if shape not in SHAPES or colour not in COLOURS or size_word not in SIZES:
            raise ValueError(f"not a shape, colour and size of the scenes: {shape!r}, {colour!r}, {size_word!r}")
        low, high = SIZES[size_word]
        half = (low + high) // 2
        cy, cx = (float(np.clip(v, half + 1, size - half - 2)) for v in (row, col))
        drawn.append((shape, colour, size_word, _mask(shape, cy, cx, half, size)))
    drawn, relation = _caption_order(drawn)
    if len(drawn) == 2 and relation is None:
        raise ValueError(
            "the two objects overlap, or one is about as far across from the other as down: no "
            "caption of the grammar says where one is. Move one further left, right, up or down."
        )
    return _paint(rng, image, drawn, relation, textured)


def make_scenes(n: int, seed: int, **kwargs) -> list[Scene]:
    """``n`` scenes from ``numpy.random.default_rng(seed)`` (the same seed gives the same scenes)."""
    rng = np.random.default_rng(seed)
    return [make_scene(rng, **kwargs) for _ in range(n)]


def parse_caption(words: list[str] | str) -> tuple[tuple[tuple[str, str, str], ...], str | None]:
    """Read a caption back: ``((size, colour, shape), …)`` in order, and the relation (None for one object).

    Raises:
        ValueError: the words are not a sentence of the grammar (the message quotes them).
    """
    words = words.split() if isinstance(words, str) else list(words)

    def one(at: int) -> tuple[str, str, str]:
        part = words[at : at + 4]
        if len(part) != 4 or part[0] != "a" or part[1] not in SIZES or part[2] not in COLOURS or part[3] not in SHAPES:
            raise ValueError(f"not a caption of the scene grammar: {' '.join(words)!r}")
        return part[1], part[2], part[3]

    first = one(0)
    if len(words) == 4:
        return (first,), None
    width = 2 if words[4:5] in (["left"], ["right"]) else 1
    relation = " ".join(words[4 : 4 + width])
    if relation not in RELATIONS:
        raise ValueError(f"not a caption of the scene grammar: {' '.join(words)!r}")
    second = one(4 + width)
    if len(words) != 8 + width:
        raise ValueError(f"not a caption of the scene grammar: {' '.join(words)!r}")
    return (first, second), relation


def object_word_positions(words: list[str]) -> list[int]:
    """Indices of the shape nouns in ``words`` (the n-th names the caption's n-th object)."""
    return [i for i, w in enumerate(words) if w in SHAPES]
