"""Our own ViT: hook names, lazy patterns equal the model's own, image preprocessing, checkpoints, and the
shipped ``tiny-vit-digits`` scoring what its card says on the held-out digits."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import engine
from engine.capture import capture, hook_point_names
from engine.checkpoint import load_checkpoint, save_checkpoint
from engine.families.vit.adapter import ViTAdapter, load_model, trace_vit
from engine.families.vit.images import preprocess
from engine.families.vit.network import ViT, ViTConfig
from engine.records import EngineError, ModelSpec
from engine.registry import CHECKPOINTS, own_checkpoints
from engine.traces.vision import VisionTrace
from engine.vocab import Vocab
from tests.golden_hooks import BLOCK, two_layers

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SHIPPED = "tiny-vit-digits"

GOLDEN_2_LAYERS = ["hook_embed", "hook_pos_embed", *two_layers(BLOCK)]
SMALL = ViTConfig(image_size=8, patch_size=2, d_model=16, n_layers=2, n_heads=2, d_mlp=32)


def _small_model(seed: int = 0, cfg: ViTConfig = SMALL) -> ViT:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ViT(cfg).eval()


def _digit_like(seed: int = 0) -> np.ndarray:
    """An 8×8 float image with the digits' 0–16 values: a bright ring on black."""
    yy, xx = np.mgrid[0:8, 0:8]
    r = np.hypot(yy - 3.5, xx - 3.5)
    noise = np.random.default_rng(seed).uniform(0, 2, (8, 8))
    return np.clip(16 * (np.abs(r - 2.5) < 1.0) + noise, 0, 16)


def _photo_like(height: int = 200, width: int = 300) -> np.ndarray:
    """A uint8 RGB 'photo': light grey paper with noise, a dark off-centre ring drawn on it."""
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[0:height, 0:width]
    ring = np.abs(np.hypot(yy - 90, xx - 170) - 45) < 8
    gray = np.where(ring, 40.0, 215.0) + rng.normal(0, 6, (height, width))
    rgb = np.stack([gray, gray * 0.97, gray * 0.9], axis=-1)
    return np.clip(rgb, 0, 255).astype(np.uint8)


# ---- the model ----------------------------------------------------------------------------------------


def test_hook_names_golden():
    assert hook_point_names(_small_model()) == GOLDEN_2_LAYERS


def test_config_round_trip_and_validation():
    cfg = ViTConfig.from_dict(json.loads(json.dumps(SMALL.to_dict())))
    assert cfg == SMALL and cfg.labels == tuple("0123456789") and cfg.n_tokens == 17 and cfg.patch_dim == 4
    for bad in (
        {"patch_size": 3},
        {"n_heads": 3},
        {"channels": 2},
        {"n_classes": 9},
        {"labels": ["a", "a"]},
        {"d_model": 0},
        {"image_size": True},
    ):
        with pytest.raises(ValueError, match="ViTConfig"):
            ViTConfig(**bad)
    with pytest.raises(ValueError, match="unknown key"):
        ViTConfig.from_dict({"vocab_size": 3})


def test_patchify_is_row_major():
    model = _small_model()
    images = torch.arange(2 * 64, dtype=torch.float32).reshape(2, 1, 8, 8)
    patches = model.patchify(images)  # (2, 16, 4)
    assert patches.shape == (2, 16, 4)
    for n in range(16):
        r, c = divmod(n, 4)
        torch.testing.assert_close(patches[:, n], images[:, 0, 2 * r : 2 * r + 2, 2 * c : 2 * c + 2].reshape(2, 4))


def test_sdpa_and_explicit_agree_and_shape_errors():
    model = _small_model()
    x = torch.rand(3, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(model(x), model(x, attn_impl="sdpa"), atol=1e-5, rtol=1e-5)
        assert model(x[:, 0]).shape == (3, 10)
        with pytest.raises(ValueError, match="ViT expects"):
            model(torch.rand(3, 1, 16, 16))


@pytest.mark.parametrize("seed", [0, 1])
def test_lazy_pattern_equals_hook_pattern(seed):
    model = _small_model(seed)
    tr = trace_vit(model, _digit_like(seed), model_id="small")
    att = tr.attention
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(att.n_layers)]
    with torch.no_grad(), capture(model, names=names) as acts:
        logits = model(torch.from_numpy(tr.image)[None, None], attn_impl="explicit")
    np.testing.assert_allclose(tr.probs, torch.softmax(logits[0], -1).numpy(), atol=1e-6)
    for layer, name in enumerate(names):
        for head in range(att.n_heads):
            pattern = att.pattern(layer, head)
            np.testing.assert_allclose(pattern, acts[name][0, head].numpy(), atol=1e-5)
            np.testing.assert_allclose(pattern.sum(-1), 1.0, atol=1e-5)


def test_trace_contents():
    model = _small_model()
    tr = trace_vit(model, _digit_like(), model_id="small")
    assert isinstance(tr, VisionTrace) and tr.model_id == "small"
    assert tr.grid == (4, 4) and tr.patch_size == 2 and tr.image.shape == (8, 8) and tr.image.dtype == np.float32
    att = tr.attention
    assert att.family == "vit" and not att.causal and att.n_layers == 2 and att.n_heads == 2
    assert att.tokens.strings == ("[CLS]", *(f"p{i}" for i in range(16)))
    assert att.tokens.special == (True,) + (False,) * 16
    assert att.pos_encoding.shape == (17, 16) and att.pos_encoding_kind == "learned"
    assert tr.probs.shape == (10,) and abs(float(tr.probs.sum()) - 1) < 1e-5
    assert tr.labels == tuple("0123456789") and tr.prediction in tr.labels
    assert any("unsure" in n for n in tr.notices)  # an untrained model is never confident


# ---- preprocessing -------------------------------------------------------------------------------------


def test_preprocess_digits_scale_is_exact():
    image = _digit_like()
    pixels, notices = preprocess(image)
    assert pixels.shape == (1, 8, 8) and pixels.dtype == torch.float32 and notices == ()
    np.testing.assert_allclose(pixels[0].numpy(), image / 16, atol=1e-7)
    same, _ = preprocess((image / 16).astype(np.float32))  # 0–1 floats are taken as they are
    torch.testing.assert_close(same, pixels)


def test_preprocess_uint8_rgb_and_float_gray():
    gray = (_digit_like() / 16 * 255).astype(np.uint8)
    rgb = np.repeat(gray[:, :, None], 3, axis=-1)
    from_rgb, notices = preprocess(rgb)
    from_gray, _ = preprocess(gray.astype(np.float64) / 255)
    torch.testing.assert_close(from_rgb, from_gray, atol=1e-5, rtol=0)
    assert any("grayscale" in n for n in notices)


def test_preprocess_rgba_canvas_black_strokes_on_transparent():
    """A drawing canvas: RGB all black, strokes opaque, background transparent → bright strokes on black."""
    canvas = np.zeros((160, 160, 4), dtype=np.uint8)
    canvas[30:130, 70:90, 3] = 255  # a vertical bar: a "1"
    pixels, notices = preprocess(canvas)
    assert pixels.shape == (1, 8, 8)
    assert any("inverted" in n for n in notices)
    assert float(pixels[0, :, 3:5].mean()) > 0.8 and float(pixels[0, :, :2].max()) < 0.05


def test_preprocess_photo_like_300x200():
    pixels, notices = preprocess(_photo_like())
    assert pixels.shape == (1, 8, 8) and 0 <= float(pixels.min()) and float(pixels.max()) == pytest.approx(1.0)
    assert any("inverted so strokes are bright like the training digits" in n for n in notices)
    assert any("cropped to its strokes" in n for n in notices)
    ring = pixels[0].numpy()
    assert ring[0].mean() > ring[3:5, 3:5].mean()  # the ring is bright, its centre dark (and centred)


def test_preprocess_blank_and_small_images():
    pixels, notices = preprocess(np.full((50, 50), 255, dtype=np.uint8))
    assert float(pixels.abs().max()) == 0 and any("blank" in n for n in notices)
    pixels, _ = preprocess(np.full((8, 8), -3.0))  # a constant outside every known range
    assert float(pixels.abs().max()) == 0
    pixels, _ = preprocess(np.eye(4, dtype=bool))
    assert pixels.shape == (1, 8, 8)
    huge = np.full((3000, 2000), 255, dtype=np.uint8)
    huge[500:2500, 900:1100] = 0  # a dark bar on white: a "1"
    pixels, _ = preprocess(huge)  # read every 3rd pixel first
    assert float(pixels[0, :, 3:5].mean()) > 0.8 and float(pixels[0, :, :2].max()) < 0.05


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.arange(10.0), "shape"),
        (np.zeros((0, 8)), "empty"),
        (np.zeros((8, 8, 2)), "shape"),
        (np.full((8, 8), np.nan), "NaN"),
        (np.array([["a"] * 8] * 8), "numbers"),
        ("a cat", "image"),
    ],
)
def test_preprocess_rejects_with_readable_errors(bad, message):
    with pytest.raises(EngineError, match=message):
        preprocess(bad)


# ---- checkpoints and the engine path --------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ckpt")
    model = _small_model(3)
    save_checkpoint(
        folder,
        "small-vit",
        model,
        kind="vit",
        config=SMALL.to_dict(),
        vocab=Vocab.from_words(SMALL.labels),
        card={"family": "vit", "label": "small", "steps": 0},
    )
    return folder, model


def test_checkpoint_round_trip(small_checkpoint):
    folder, model = small_checkpoint
    loaded, _vocab, document = load_checkpoint(folder, "small-vit")
    assert isinstance(loaded, ViT) and loaded.cfg == SMALL and document["kind"] == "vit"
    x = torch.rand(4, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))
    assert own_checkpoints(folder)["small-vit"][0].family == "vit"


def test_load_model_and_engine_trace(small_checkpoint):
    from PIL import Image

    folder, _model = small_checkpoint
    model = load_model(ModelSpec("small-vit", "vit", "small", True), folder, device=torch.device("cpu"))
    assert model.tokenizer == SMALL.labels and model.max_positions == 17 and isinstance(model.adapter, ViTAdapter)
    assert not model.module.training and not any(p.requires_grad for p in model.module.parameters())
    tr = engine.trace(model, _photo_like(), causal=True, max_tokens=3)  # both ignored
    assert isinstance(tr, VisionTrace) and tr.attention.device == "cpu" and len(tr.attention.tokens) == 17
    from_pil = engine.trace(model, Image.fromarray(_photo_like()))
    np.testing.assert_array_equal(from_pil.image, tr.image)
    assert engine.trace(model, Image.fromarray(_photo_like()).convert("P")).image.shape == (8, 8)
    for bad in ("a cat", None, [[0, 1], [1, 0]]):
        with pytest.raises(EngineError, match="numpy array"):
            engine.trace(model, bad)


# ---- the shipped checkpoint ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    return engine.load(SHIPPED)


@pytest.fixture(scope="module")
def held_out():
    pytest.importorskip("sklearn")
    from engine.training.recipes.vit import digits_split

    card = json.loads((CHECKPOINTS / f"{SHIPPED}.json").read_text())["metadata"]
    _x, _y, x_test, y_test = digits_split(card["split_seed"])
    return x_test, y_test, card


def test_shipped_is_listed_as_vit():
    spec = {s.id: s for s in engine.list_models()}[SHIPPED]
    assert spec.family == "vit" and spec.offline and spec.label == "Tiny ViT on 8×8 digits (own)"
    assert own_checkpoints()[SHIPPED][1] == "vit"


def test_shipped_scores_what_its_card_says(shipped, held_out):
    """The model cards' figures match what the checkpoints score: ≥ 95% on the held-out 20%."""
    from engine.training.recipes.vit import ACCURACY_KEY, evaluate, to_tensor

    x_test, y_test, card = held_out
    accuracy, _ = evaluate(shipped.module, to_tensor(x_test), torch.from_numpy(y_test))
    assert accuracy >= 0.95
    assert abs(accuracy - card["final_metrics"][ACCURACY_KEY]) <= 0.01
    assert card["final_metrics"]["held-out images"] == len(y_test) == 360
    # the public path (raw 0–16 images through engine.trace) predicts the same
    predictions = [int(engine.trace(shipped, image).prediction) for image in x_test]
    assert np.mean(np.array(predictions) == y_test) == pytest.approx(accuracy, abs=1e-9)


def test_shipped_reads_big_dark_on_light_digits(shipped, held_out):
    """Held-out digits drawn large, dark on light paper, off-centre on a 300×200 canvas, still read."""
    x_test, y_test, _card = held_out
    right = []
    for image, label in zip(x_test[:60], y_test[:60]):
        canvas = np.full((200, 300), 230.0)
        big = np.kron(image / 16, np.ones((20, 20)))  # 160×160, nearest-neighbour upscale
        canvas[25:185, 110:270] -= 200 * big
        right.append(engine.trace(shipped, canvas.astype(np.uint8)).prediction == str(label))
    assert np.mean(right) >= 0.85


def test_shipped_pattern_equals_hook_pattern(shipped, held_out):
    tr = engine.trace(shipped, held_out[0][0])
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(tr.attention.n_layers)]
    with torch.no_grad(), capture(shipped.module, names=names) as acts:
        shipped.module(torch.from_numpy(tr.image)[None, None].to(shipped.device))
    for layer, name in enumerate(names):
        np.testing.assert_allclose(tr.attention.pattern(layer), acts[name][0].cpu().numpy(), atol=1e-5)


def test_the_digit_split_the_page_names_is_the_recipes():
    """``samples.digit_split`` (indices) gives the same partition as ``train_test_split`` on the images."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from engine import samples
    from engine.training.recipes.vit import digits_split

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.images, digits.target, test_size=0.2, stratify=digits.target, random_state=0
    )
    train, held_out = samples.digit_split()
    assert len(held_out) == len(y_test) == 360 and not set(train) & set(held_out)
    np.testing.assert_array_equal(digits.images[held_out], x_test)
    np.testing.assert_array_equal(digits.images[train], x_train)
    for got, want in zip(digits_split(), (x_train, y_train, x_test, y_test)):
        np.testing.assert_array_equal(got, want)
    flags = [samples.digit_held_out(i) for i in range(samples.n_digits())]
    assert sum(flags) == 360 and all(flags[i] for i in held_out) and not any(flags[i] for i in train)
