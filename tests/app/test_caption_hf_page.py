"""Pretrained captioners on the Captions page (AppTest): tiny random ViT + GPT-2 and BLIP folders saved locally, typed
into the model field inside the folder the server allows (``AP_MODEL_DIRS``). The drawn maps are the engine's own
cross-attention of a separate trace of the same picture, for the layer and head picked (or the heads' mean)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import engine
from app.views.captions.keys import Captions
from apptest_helpers import assert_clean, decode, figures, messages, open_page, title
from engine.corpora.scenes import make_scenes
from engine.training.recipes.captioner import HELD_OUT_SEED
from tests.caption_hf_helpers import save_tiny_blip, save_tiny_ved

GAP, PER_ROW, GRID = 1, 5, 4  # the word panels' mosaic (as the scene captioner's test); the tiny models' 4×4 patches


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("allowed")
    return {"ved": save_tiny_ved(root / "ved"), "blip": save_tiny_blip(root / "blip")}


def _png(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def _scene(k: int) -> np.ndarray:
    return make_scenes(k + 1, seed=HELD_OUT_SEED)[k].image


def _reference(folder, image: np.ndarray):
    """The engine's own trace of ``image``, made here (not through the app's services)."""
    model = engine.load(str(folder))
    return model.adapter.trace(model, image)


def _figure(at, start: str) -> dict:
    found = [f for f in figures(at) if title(f).startswith(start)]
    assert found, [title(f) for f in figures(at)]
    return found[0]


def _weights(fig: dict, field: str = "z") -> np.ndarray:
    return decode(next(t for t in fig["data"] if t.get("name") == "attention")[field])


def _panels(fig: dict, n: int) -> np.ndarray:
    mosaic, pitch = _weights(fig, "customdata"), GRID + GAP
    return np.stack(
        [
            mosaic[
                (t // PER_ROW) * pitch : (t // PER_ROW) * pitch + GRID,
                (t % PER_ROW) * pitch : (t % PER_ROW) * pitch + GRID,
            ]
            for t in range(n)
        ]
    )


@pytest.mark.parametrize("kind", ["ved", "blip"])
def test_a_pretrained_captioner_shows_its_cross_attention_on_the_patches(folders, kind, monkeypatch):
    monkeypatch.setenv("AP_MODEL_DIRS", str(folders[kind].parent))
    at = open_page("captions", cap_hub_id=str(folders[kind]))
    assert_clean(at)
    assert not at.error and not at.warning, messages(at.error) + messages(at.warning)
    ref = _reference(folders[kind], _scene(Captions.DEFAULTS[Captions.scene]))
    assert at.selectbox(key=Captions.layer).value == 1  # the last decoder layer
    assert at.selectbox(key=Captions.head).value == Captions.MEAN_HEADS
    assert ref.caption in " ".join(messages(at.markdown))
    n = len(ref.words)
    np.testing.assert_allclose(_panels(_figure(at, "Where it looks for each word"), n), ref.patch_maps(1), atol=1e-6)
    large = _figure(at, f"α for word 0, “{ref.words.strings[0]}”")
    np.testing.assert_allclose(_weights(large), ref.patch_maps(1)[0], atol=1e-6)
    bars = _figure(at, "Weight on [CLS]")["data"][0]
    np.testing.assert_allclose(decode(bars["y"]), ref.prefix_weight(1), atol=1e-6)
    assert not [f for f in figures(at) if title(f).startswith("β")], "a pretrained captioner has no β"
    captions = " ".join(messages(at.caption))
    assert "Decoder layer 1, the mean over its heads" in captions and "less the word's weight on [CLS]" in captions
    per_word, per_cell = at.dataframe[0].value, at.dataframe[1].value
    np.testing.assert_allclose(per_word["α on [CLS]"].to_numpy(), ref.prefix_weight(1), atol=1e-6)
    np.testing.assert_allclose(per_cell.to_numpy().sum() + ref.prefix_weight(1)[0], 1.0, atol=1e-5)


def test_layer_and_head_pickers_choose_the_map(folders, monkeypatch):
    monkeypatch.setenv("AP_MODEL_DIRS", str(folders["ved"].parent))
    at = open_page("captions", cap_hub_id=str(folders["ved"]), cap_scene=9)
    at.selectbox(key=Captions.layer).set_value(0).run()
    at.selectbox(key=Captions.head).set_value(2).run()
    at.select_slider(key=Captions.word).set_value(1).run()
    assert_clean(at)
    ref = _reference(folders["ved"], _scene(9))
    large = _figure(at, f"α for word 1, “{ref.words.strings[1]}”")
    np.testing.assert_allclose(_weights(large), ref.patch_maps(0, 2)[1], atol=1e-6)
    np.testing.assert_allclose(
        at.dataframe[1].value.to_numpy(), ref.cross.pattern(0, 2)[1, 1:].reshape(4, 4), atol=1e-6
    )
    assert "Decoder layer 0, head 2" in " ".join(messages(at.caption))


def test_an_upload_is_fitted_for_the_pretrained_model_and_mistakes_need_the_scene_captioner(folders, monkeypatch):
    monkeypatch.setenv("AP_MODEL_DIRS", str(folders["blip"].parent))
    at = open_page("captions", cap_hub_id=str(folders["blip"]), cap_source="upload")
    waiting = messages(at.info)
    assert any("Choose a picture" in m for m in waiting) and not any("flat shapes" in m for m in waiting), waiting
    picture = np.full((90, 120, 3), 230, dtype=np.uint8)
    picture[30:60, 50:80] = (30, 60, 220)
    at.file_uploader(key=Captions.upload).set_value(("square.png", _png(picture), "image/png")).run()
    assert_clean(at)
    assert not at.error, messages(at.error)
    infos = " ".join(messages(at.info))
    assert "enlarged to 384×384 pixels" in infos and "resized to 32×32 pixels" in infos, infos
    assert not at.warning, "the scene captioner's warning is not for a pretrained model"
    at.radio(key=Captions.view).set_value("mistakes").run()
    assert_clean(at)
    assert any("only the scene captioner" in m for m in messages(at.info)), messages(at.info)
    assert not at.dataframe


def test_an_offline_hub_id_gives_the_engines_message():
    at = open_page("captions", cap_hub_id="Salesforce/blip-not-a-real-captioner-xyz")
    assert_clean(at)
    errors = messages(at.error) + messages(at.warning)
    assert any("not downloaded on this machine" in e for e in errors), errors
    assert not at.get("plotly_chart")


def test_a_link_opens_the_captioner_on_its_layer_and_head(folders, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from apptest_helpers import APP, ROOT, TIMEOUT

    monkeypatch.setenv("AP_MODEL_DIRS", str(folders["blip"].parent))
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update({"cap_hub_id": str(folders["blip"]), "cap_layer": "0", "cap_head": "3"})
    at.run()
    at.switch_page(str(ROOT / "app" / "views" / "captions" / "page.py"))
    at.run()
    assert_clean(at)
    assert (at.selectbox(key=Captions.layer).value, at.selectbox(key=Captions.head).value) == (0, 3)
    assert "Decoder layer 0, head 3" in " ".join(messages(at.caption))
    at.selectbox(key=Captions.head).set_value(Captions.MEAN_HEADS).run()
    assert "cap_head" not in at.query_params and "cap_model" not in at.query_params  # defaults are left out
    assert at.query_params["cap_layer"] == "0" and at.query_params["cap_hub_id"] == str(folders["blip"])
