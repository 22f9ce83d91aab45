"""The Captions page's engine calls: pictures, one shared trace per request, its figure data, the held-out scenes
the model gets wrong and the lesson's "where will it look?" answer. One :class:`CaptionRequest` (our captioner or a
pretrained one) is the cache key of all of it: a class on one scene computes each once."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import streamlit as st

from app.runtime.caches import TRACES, shared_map
from app.runtime.models import get_model, model_pass, policy, trained_model
from app.views.captions.map_data import REGIONS, CaptionView, caption_view
from engine.corpora.scenes import draw_scene, make_scenes
from engine.images import read_image
from engine.records import EngineError
from engine.text import quote_input
from engine.traces.caption import CaptionTrace, PatchCaptionTrace

CAPTION_MODEL = "scene-captioner"
SOURCES = ("scene", "draw", "upload")
HELD_OUT_SCENES = 500  # the card's held-out scenes (engine.training.recipes.captioner.HELD_OUT)
CAPTION_IMAGE_SIZE = 64  # the shipped captioner's input side (its config's image_size)
CAPTION_MAX_BEAM = 5  # widest beam the page offers (the engine accepts up to 10)
PRETRAINED_UPLOAD_SIZE = 384  # an upload for a pretrained captioner is fitted to this side (BLIP's input)
UPLOAD_SIZES = (CAPTION_IMAGE_SIZE, PRETRAINED_UPLOAD_SIZE)


@dataclass(frozen=True)
class DrawnObject:
    """One object of a drawn scene: a shape, a colour, a size word and its centre in pixels (row, column)."""

    shape: str
    colour: str
    size: str
    row: int
    col: int


@dataclass(frozen=True)
class CaptionRequest:
    """The picture (a held-out ``scene``, a ``drawing``, ``upload`` bytes from :func:`read_caption_upload`), the
    decoding (``beam`` 1: greedy) and the captioner."""

    source: str = "scene"
    scene: int = 0
    drawing: tuple[DrawnObject, ...] = ()
    textured: bool = False
    upload: bytes = b""
    beam: int = 1
    model_id: str = CAPTION_MODEL

    @property
    def picture_key(self) -> tuple:
        """What decides the picture (not the decoding)."""
        if self.source == "scene":
            return ("scene", int(self.scene))
        if self.source == "draw":
            return ("draw", self.drawing, bool(self.textured))
        return ("upload", hashlib.blake2b(self.upload, digest_size=16).hexdigest())

    @property
    def trace_key(self) -> tuple:
        """The trace cache's key: the picture, the decoding, the model, a session's own model and the rules."""
        return ("caption", self.model_id, self.picture_key, int(self.beam), trained_model(self.model_id), policy())


@dataclass(frozen=True, eq=False)
class CaptionPicture:
    """``image`` ``[S, S, 3]`` in 0–1, a few words that name it, the grammar's caption (None for an upload) and each
    object's ``(shape word, (top, left, bottom, right))``."""

    image: np.ndarray
    described: str
    reference: str | None
    boxes: tuple[tuple[str, tuple[int, int, int, int]], ...] = ()

    @property
    def nbytes(self) -> int:
        return int(self.image.nbytes)


@dataclass(frozen=True)
class Mistake:
    """A held-out scene captioned wrongly (greedy): its number, the true caption and the written one."""

    scene: int
    reference: str
    written: str


def _scene_picture(scene, described: str) -> CaptionPicture:
    """A generated scene (``engine.corpora.scenes.Scene``) with its grammar caption and true boxes."""
    return CaptionPicture(scene.image, described, scene.caption, tuple((obj.shape, obj.box) for obj in scene.objects))


def caption_picture(request: CaptionRequest) -> CaptionPicture:
    """The picture ``request`` names (shared, read-only); ``EngineError`` for one that cannot be made."""

    def build() -> CaptionPicture:
        if request.source == "scene":
            from engine.training.recipes.captioner import HELD_OUT_SEED

            if not 0 <= (index := int(request.scene)) < HELD_OUT_SCENES:
                raise EngineError(f"held-out scenes are numbered 0 to {HELD_OUT_SCENES - 1}, not {request.scene}")
            scene = make_scenes(index + 1, seed=HELD_OUT_SEED)[index]  # the same draws as the card's held-out set
            return _scene_picture(scene, f"held-out scene {index}")
        if request.source == "draw":
            objects = [(o.shape, o.colour, o.size, o.row, o.col) for o in request.drawing]
            try:
                scene = draw_scene(objects, textured=request.textured)
            except ValueError as err:
                raise EngineError(f"This drawing cannot be captioned by the grammar: {err}") from err
            return _scene_picture(scene, "your drawing")
        if request.source == "upload":
            pixels = np.frombuffer(request.upload, dtype=np.uint8)
            side = next((n for n in UPLOAD_SIZES if pixels.size == n * n * 3), None)
            if side is None:
                raise EngineError("The uploaded picture was not read: choose the file again.")
            image = pixels.reshape(side, side, 3).astype(np.float32) / 255.0
            return CaptionPicture(image, "your picture", None)
        raise EngineError(f"Unknown picture source {request.source!r}: one of {', '.join(SOURCES)}.")

    return shared_map(("caption-picture", request.picture_key), build)


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)
def read_caption_upload(data: bytes, side: int = CAPTION_IMAGE_SIZE) -> tuple[bytes, tuple[str, ...]]:
    """Uploaded bytes read by ``engine.images.read_image``, their middle square resized to ``side``×``side`` RGB
    (64: our captioner; 384: a pretrained one): its ``uint8`` bytes and notices for the page."""
    from PIL import Image

    decoded = read_image(data)
    pixels = decoded.pixels if decoded.pixels.ndim == 3 else np.repeat(decoded.pixels[..., None], 3, axis=2)
    if side not in UPLOAD_SIZES:
        raise EngineError(f"An upload is fitted to one of {UPLOAD_SIZES} pixels a side, not {side!r}.")
    h, w = pixels.shape[:2]
    square_side = min(h, w)
    top, left = (h - square_side) // 2, (w - square_side) // 2
    square = Image.fromarray(np.ascontiguousarray(pixels[top : top + square_side, left : left + square_side]))
    fitted = np.asarray(square.resize((side, side), Image.Resampling.BILINEAR), dtype=np.uint8)
    notices = [*decoded.notices]
    if (h, w) != (side, side):
        cut = " cut to its middle square and" if h != w else ""
        how = "shrunk" if square_side >= side else "enlarged"
        reads = ", the size the captioner reads." if side == CAPTION_IMAGE_SIZE else "."
        notices.append(f"Your {w}×{h} picture was{cut} {how} to {side}×{side} pixels{reads}")
    return fitted.tobytes(), tuple(notices)


def caption_trace(request: CaptionRequest) -> CaptionTrace | PatchCaptionTrace:
    """The request's picture captioned (greedy, or the best of a beam) with every word's α map and β, shared."""
    if not isinstance(request.beam, int) or not 1 <= request.beam <= CAPTION_MAX_BEAM:
        raise EngineError(f"The beam width must be a whole number from 1 to {CAPTION_MAX_BEAM}, got {request.beam!r}.")

    def compute() -> CaptionTrace:
        picture, model = caption_picture(request), _captioner(request.model_id)
        with model_pass():
            return model.adapter.trace(model, picture.image, beam=request.beam)

    return TRACES.get(request.trace_key, compute)


def caption_attention(request: CaptionRequest, layer: int | None = None, head: int | None = None) -> CaptionView:
    """The caption's figure data, shared: our captioner's α maps and β; a pretrained one's cross-attention on the
    patches of decoder ``layer`` (None: the last) and ``head`` (None: their mean), its weight on [CLS] as ``rest``."""

    def build() -> CaptionView:
        trace = caption_trace(request)
        if not isinstance(trace, PatchCaptionTrace):
            return caption_view(trace.words.strings, trace.alphas, trace.betas, trace.image.shape[0])
        chosen = trace.n_layers - 1 if layer is None else layer
        if not 0 <= chosen < trace.n_layers or not (head is None or 0 <= head < trace.n_heads):
            raise EngineError(f"This captioner has layers 0–{trace.n_layers - 1} and heads 0–{trace.n_heads - 1}.")
        maps, rest = trace.patch_maps(chosen, head), trace.prefix_weight(chosen, head)
        return caption_view(trace.words.strings, maps, None, trace.image.shape[0], rest=rest)

    return shared_map(("caption-view", request.trace_key, layer, head), build)


def caption_layers(trace) -> tuple[int, int] | None:
    """``(decoder layers, heads)`` of a pretrained captioner's trace; None for ours (one additive attention)."""
    return (trace.n_layers, trace.n_heads) if isinstance(trace, PatchCaptionTrace) else None


def _captioner(model_id: str):
    """The shared model ``model_id``; ``EngineError`` when it is not an image captioner."""
    model = get_model(model_id)
    if model.spec.family != "captioner":
        raise EngineError(f"{quote_input(model_id)} is not an image captioner (it is a {model.spec.family} model).")
    return model


def is_pretrained_captioner(model_id: str) -> bool:
    """Whether ``model_id`` is a pretrained captioner (ViT + GPT-2, BLIP), not ours (loads it)."""
    from engine.families.hf_caption import HFCaptionAdapter

    return isinstance(_captioner(model_id).adapter, HFCaptionAdapter)


def as_seen(picture: CaptionPicture, trace) -> CaptionPicture:
    """``picture`` as the model saw it: the trace's image (a processor may resize it), the boxes scaled to it."""
    side, own = trace.image.shape[0], picture.image.shape[0]
    if side == own:
        return picture
    f = side / own
    boxes = tuple(
        (name, (round(t * f), round(lf * f), round((b + 1) * f) - 1, round((r + 1) * f) - 1))
        for name, (t, lf, b, r) in picture.boxes
    )
    return CaptionPicture(trace.image, picture.described, picture.reference, boxes)


def caption_mistakes(model_id: str = CAPTION_MODEL) -> tuple[Mistake, ...]:
    """The held-out scenes whose greedy caption differs from the grammar's, measured as the card's figures were
    (``caption_metrics.evaluate``), once per server process."""

    def compute() -> tuple[Mistake, ...]:
        from engine.training.caption_metrics import evaluate
        from engine.training.recipes.captioner import held_out_scenes

        scenes = held_out_scenes(HELD_OUT_SCENES)
        model = get_model(model_id)
        with model_pass():
            scores, _device, _notice = model.run(lambda module, _dev: evaluate(module, scenes, model.tokenizer))
        return tuple(
            Mistake(k, scene.caption, " ".join(words))
            for k, (scene, words) in enumerate(zip(scenes, scores.captions))
            if words != scene.words
        )

    return shared_map(("caption-mistakes", model_id, trained_model(model_id), policy()), compute)


@dataclass(frozen=True, eq=False)
class Peak:
    """Where the captioner looks when it writes ``word`` (its index in the greedy ``caption``) of a held-out scene:
    the ``region`` (index into :data:`REGIONS`) of its attention peak (the lesson's check)."""

    picture: CaptionPicture
    view: CaptionView
    word: int
    region: int
    caption: str

    @property
    def peak(self) -> tuple[int, int]:
        """``(row, column)`` of the peak cell."""
        return self.view.cell(self.view.peaks[self.word])

    @property
    def region_name(self) -> str:
        return REGIONS[self.region]


def where_it_looks(scene: int, word: str, model_id: str = CAPTION_MODEL) -> Peak:
    """The model's attention peak for ``word`` (first occurrence) in its greedy caption of held-out ``scene``;
    ``EngineError`` when it does not write that word."""
    request = CaptionRequest(source="scene", scene=scene, model_id=model_id)
    view, caption = caption_attention(request), caption_trace(request).caption
    if word not in view.words:
        raise EngineError(f"The captioner does not write “{word}” for held-out scene {scene}: it writes “{caption}”.")
    t = view.words.index(word)
    return Peak(picture=caption_picture(request), view=view, word=t, region=view.region(t), caption=caption)
