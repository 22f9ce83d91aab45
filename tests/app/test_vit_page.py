"""The Vision Transformer page through AppTest: the numbers drawn are the trace's, checked against the
engine's own trace of the same image (a separate call) and ``engine.analysis.rollout``."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from apptest_helpers import assert_clean, assert_not_an_image, decode, figures, messages, open_page, png_bytes, title
from engine import samples
from engine.analysis.rollout import rollout
from tests.hf_helpers import save_tiny_vit

MODEL = "tiny-vit-digits"
NOT_A_DIGIT = "only learned the hand-written digits"


@pytest.fixture(scope="module")
def vit():
    return engine.load(MODEL)


def by_title(at: AppTest, start: str) -> dict:
    found = [f for f in figures(at) if title(f).startswith(start)]
    assert found, [title(f) for f in figures(at)]
    return found[0]


def overlay_z(fig: dict) -> np.ndarray:
    layers = [t for t in fig["data"] if t.get("name") == "attention"]
    assert len(layers) == 1
    return decode(layers[0]["z"])


def expected_cls(trace, layer: int, head: int) -> np.ndarray:
    return trace.attention.pattern(layer, head)[0, 1:].reshape(4, 4)


@pytest.fixture(scope="module")
def default_page() -> AppTest:
    return open_page("vit")


def test_default_digit_renders_with_the_traces_numbers(default_page: AppTest, vit):
    at = default_page
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert len(at.get("plotly_chart")) == 7
    assert not any(NOT_A_DIGIT in w for w in messages(at.warning))
    reference = engine.trace(vit, samples.digit(1500)[0])
    np.testing.assert_allclose(
        overlay_z(by_title(at, "[CLS] → patches, layer 0, head 0")), expected_cls(reference, 0, 0), atol=1e-6
    )
    # the head grid: one overlay mosaic (a tile per head, one empty patch between tiles), each tile the CLS
    # row of that head; it is the figure whose annotations name the heads
    grid = [
        f
        for f in figures(at)
        if [a["text"] for a in f["layout"].get("annotations", [])][1:] == ["head 1", "head 2", "head 3"]
    ][0]
    mosaic = decode([t for t in grid["data"] if t.get("name") == "attention"][0]["customdata"])
    for h in range(4):
        np.testing.assert_allclose(mosaic[:4, h * 5 : h * 5 + 4], expected_cls(reference, 0, h), atol=1e-6)
    # the bar chart: probabilities of the trace, most likely first
    bars = by_title(at, "Prediction")["data"][0]
    np.testing.assert_allclose(decode(bars["x"]), np.sort(reference.probs)[::-1], atol=1e-6)
    assert bars["y"][0] == reference.prediction == str(samples.digit(1500)[1])


def test_layer_head_and_patch_choice(vit):
    at = open_page("vit", vit_layer=2, vit_head=3, vit_patch=6)
    assert_clean(at)
    reference = engine.trace(vit, samples.digit(1500)[0])
    np.testing.assert_allclose(
        overlay_z(by_title(at, "[CLS] → patches, layer 2, head 3")), expected_cls(reference, 2, 3), atol=1e-6
    )
    patch = overlay_z(by_title(at, "Patch 6 → patches, layer 2, head 3"))
    np.testing.assert_allclose(patch, reference.attention.pattern(2, 3)[7, 1:].reshape(4, 4), atol=1e-6)
    at.selectbox(key="vit_layer").set_value(1).run()
    at.number_input(key="vit_patch").set_value(15).run()
    assert_clean(at)
    patch = overlay_z(by_title(at, "Patch 15 → patches, layer 1, head 3"))
    np.testing.assert_allclose(patch, reference.attention.pattern(1, 3)[16, 1:].reshape(4, 4), atol=1e-6)


def test_rollout_controls_update_the_map(vit):
    at = open_page("vit")
    reference = engine.trace(vit, samples.digit(1500)[0])
    layers = [reference.attention.pattern(layer) for layer in range(3)]
    mean = overlay_z(by_title(at, "Rollout, heads fused by mean, discard 0.0"))
    np.testing.assert_allclose(mean, rollout(layers)[-1][0, 1:].reshape(4, 4), atol=1e-6)
    at.radio(key="vit_fusion").set_value("max").run()
    at.slider(key="vit_discard").set_value(0.5).run()
    assert_clean(at)
    maxed = overlay_z(by_title(at, "Rollout, heads fused by max, discard 0.5"))
    expected = rollout(layers, head_fusion="max", discard_ratio=0.5)[-1][0, 1:].reshape(4, 4)
    np.testing.assert_allclose(maxed, expected, atol=1e-6)
    assert not np.allclose(maxed, mean, atol=1e-3)
    last = overlay_z(by_title(at, "Raw attention of the last layer (2), max of heads"))
    np.testing.assert_allclose(last, layers[2].max(axis=0)[0, 1:].reshape(4, 4), atol=1e-6)
    captions = " ".join(str(c.value) for c in at.caption)
    assert "rule: all off-diagonal" in captions, captions  # the default rule, named under the map
    at.radio(key="vit_discard_rule").set_value("keep-class-token").run()
    assert_clean(at)
    kept = overlay_z(by_title(at, "Rollout, heads fused by max, discard 0.5 (class token kept)"))
    expected = rollout(layers, head_fusion="max", discard_ratio=0.5, discard_rule="keep-class-token")[-1]
    np.testing.assert_allclose(kept, expected[0, 1:].reshape(4, 4), atol=1e-6)
    assert not np.allclose(kept, maxed, atol=1e-3)
    captions = " ".join(str(c.value) for c in at.caption)
    assert "rule: keep attention to the class token" in captions, captions


def test_occlusion_table(vit):
    at = open_page("vit", vit_k=0)
    assert_clean(at)
    reference = engine.trace(vit, samples.digit(1500)[0])
    table = at.dataframe[0].value
    column = f"p({reference.prediction})"
    np.testing.assert_allclose(table[column].to_numpy(), reference.probs.max(), atol=1e-4)
    assert list(table["change"]) == [0.0, 0.0, 0.0]
    at.slider(key="vit_k").set_value(4).run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert [len(w.split(", ")) for w in table["which"]] == [4, 4, 4]


@pytest.mark.parametrize("source, key, value", [("shape", "vit_shape", "cross"), ("photo", "vit_photo", "flower")])
def test_shape_and_photo_render_with_the_not_a_digit_note(source, key, value):
    at = open_page("vit", vit_source=source, **{key: value})
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert len(at.get("plotly_chart")) == 7
    assert any(NOT_A_DIGIT in w for w in messages(at.warning)), messages(at.warning)


def test_upload_a_photo_and_a_bad_file():
    at = open_page("vit", vit_source="upload")
    assert_clean(at)
    assert any("Choose an image" in m for m in messages(at.info))
    assert not at.get("plotly_chart")
    rng = np.random.default_rng(3)
    photo = rng.integers(0, 256, (90, 120, 3), dtype=np.uint8)
    at.file_uploader(key="vit_upload").upload("holiday.png", png_bytes(photo), "image/png").run()
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert len(at.get("plotly_chart")) == 7
    assert any(NOT_A_DIGIT in w for w in messages(at.warning))

    assert_not_an_image(at, "vit_upload")


@pytest.mark.parametrize("hub_id", ["google/vit-base-patch16-224", "microsoft/swin-tiny-patch4-window7-224"])
def test_offline_hub_id_gives_the_engines_message(hub_id):
    at = open_page("vit", vit_hub_id=hub_id)
    assert_clean(at)
    errors = messages(at.error)
    assert any("not downloaded" in e or "Hub" in e for e in errors), errors
    assert not at.get("plotly_chart")


def test_out_of_range_settings_are_clamped():
    at = open_page("vit", vit_layer=99, vit_head=-4, vit_patch=1000, vit_k=500, vit_digit=99999)
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert at.selectbox(key="vit_layer").value == 2
    assert at.selectbox(key="vit_head").value == 0
    assert at.number_input(key="vit_patch").value == 15


def test_a_local_hugging_face_deit_folder_renders(tmp_path, monkeypatch):
    """A tiny random distilled DeiT saved locally, typed into the Hub-id field: [CLS] and [DIST] come
    before the 16 patches, so the overlay must skip both (checked against the engine's own trace).
    Typed folders load only inside the server's allowed model directories (off by default)."""
    monkeypatch.setenv("AP_MODEL_DIRS", str(tmp_path))
    save_tiny_vit(tmp_path, "deit")
    at = open_page("vit", vit_hub_id=str(tmp_path), vit_source="photo", vit_head=2)
    assert_clean(at)
    assert not at.error, messages(at.error)
    assert len(at.get("plotly_chart")) == 7
    assert not any(NOT_A_DIGIT in w for w in messages(at.warning))
    reference = engine.trace(engine.load(str(tmp_path)), samples.photo("china"))
    assert reference.attention.tokens.strings[:3] == ("[CLS]", "[DIST]", "p0")
    expected = reference.attention.pattern(0, 2)[0, 2:].reshape(4, 4)
    np.testing.assert_allclose(overlay_z(by_title(at, "[CLS] → patches, layer 0, head 2")), expected, atol=1e-6)


def test_a_text_model_in_the_hub_field_is_refused():
    at = open_page("vit", vit_hub_id="tiny-random-gpt2")
    assert_clean(at)
    assert any("not a Vision Transformer" in e for e in messages(at.error)), messages(at.error)
    assert not at.get("plotly_chart")


def test_the_caption_says_whether_the_digit_was_held_out():
    train, held_out = samples.digit_split()
    for index, phrase in (
        (int(held_out[0]), "held out: the own ViT never trained on it"),
        (int(train[0]), "one of the own ViT's training images"),
    ):
        at = open_page("vit", vit_digit=index)
        assert_clean(at)
        caption = [c for c in messages(at.caption) if c.startswith(f"Digit sample {index} ")]
        assert caption and phrase in caption[0], messages(at.caption)
        assert f"true label {samples.digit(index)[1]}" in caption[0]
