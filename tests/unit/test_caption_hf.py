"""Pretrained captioners (ViT + GPT-2 VisionEncoderDecoder, BLIP) through the engine, on tiny random local models.

References are transformers' own: the cross-attention weights of an eager pass with ``output_attentions=True`` on
the written ids (teacher-forced), and ``generate`` for the greedy ids.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import engine
from engine.records import ModelUnavailableError
from engine.traces import Trace
from engine.traces.caption import PatchCaptionTrace
from tests.caption_hf_helpers import save_tiny_blip, save_tiny_ved

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SAVERS = {"ved": save_tiny_ved, "blip": save_tiny_blip}


@pytest.fixture(scope="module", params=sorted(SAVERS))
def saved(request, tmp_path_factory) -> tuple[str, Path]:
    return request.param, SAVERS[request.param](tmp_path_factory.mktemp(request.param))


def _picture(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((40, 48, 3)).astype(np.float32)


def _eager(kind: str, folder: Path):
    from transformers import BlipForConditionalGeneration, VisionEncoderDecoderModel

    cls = VisionEncoderDecoderModel if kind == "ved" else BlipForConditionalGeneration
    return cls.from_pretrained(folder, attn_implementation="eager").eval()


def _eager_cross(kind: str, ref, pixels: torch.Tensor, ids: torch.Tensor) -> list[np.ndarray]:
    """Per decoder layer ``[H, T, K]``: transformers' eager cross-attention weights, teacher-forced on ``ids``."""
    with torch.no_grad():
        if kind == "ved":
            out = ref(pixel_values=pixels, decoder_input_ids=ids, output_attentions=True, use_cache=False)
        else:
            states = ref.vision_model(pixel_values=pixels).last_hidden_state
            ones = torch.ones(states.shape[:2], dtype=torch.long)
            out = ref.text_decoder(
                input_ids=ids,
                encoder_hidden_states=states,
                encoder_attention_mask=ones,
                output_attentions=True,
                use_cache=False,
            )
    return [a[0].double().numpy() for a in out.cross_attentions]


@pytest.mark.parametrize("seed", [0, 1])
def test_cross_attention_equals_eager_output_attentions(saved, seed):
    kind, folder = saved
    model = engine.load(str(folder))
    assert model.spec.family == "captioner"
    trace = model.adapter.trace(model, _picture(seed))
    assert isinstance(trace, PatchCaptionTrace) and isinstance(trace, Trace)
    assert trace.attention_blocks() == {"cross": trace.cross}
    pixels = model.adapter.pixel_values(model, _picture(seed))
    ids = torch.tensor([list(trace.cross.tokens.ids)])
    assert list(trace.cross.tokens.ids[1:]) == list(trace.words.ids[:-1])  # inputs: the start token, then the words
    expected = _eager_cross(kind, _eager(kind, folder), pixels, ids)
    assert trace.n_layers == len(expected) == 2 and trace.n_heads == 4
    assert trace.grid == (4, 4) and trace.prefix == 1  # [CLS] + 4×4 patches of 8 pixels
    for layer, ref in enumerate(expected):
        got = trace.weights(layer)
        assert got.shape == ref.shape == (4, len(trace.words), 17)
        np.testing.assert_allclose(got, ref, atol=1e-5)
        np.testing.assert_allclose(got.sum(axis=-1), 1.0, atol=1e-5)
        assert ref.max() > 0.3  # far from uniform (1/17): a mix-up of heads or positions would show
        for head in (None, 3):
            rows = ref.mean(axis=0) if head is None else ref[head]
            np.testing.assert_allclose(trace.patch_maps(layer, head), rows[:, 1:].reshape(-1, 4, 4), atol=1e-5)
            np.testing.assert_allclose(trace.prefix_weight(layer, head), rows[:, 0], atol=1e-5)


def test_greedy_ids_equal_transformers_generate(saved):
    kind, folder = saved
    model, ref = engine.load(str(folder)), _eager(kind, folder)
    for seed in (0, 1, 2):
        trace = model.adapter.trace(model, _picture(seed))
        pixels = model.adapter.pixel_values(model, _picture(seed))
        with torch.no_grad():
            out = ref.generate(
                pixel_values=pixels, do_sample=False, num_beams=1, max_new_tokens=model.adapter.max_words(model.module)
            )
            inputs = torch.tensor([list(trace.cross.tokens.ids)])
            fed = {"input_ids": inputs} if kind == "blip" else {"decoder_input_ids": inputs}
            logits = ref(pixel_values=pixels, **fed).logits[0]
        assert list(trace.words.ids) == out[0, 1:].tolist()
        logp = torch.log_softmax(logits.double(), dim=-1)[torch.arange(len(trace.words)), torch.tensor(trace.words.ids)]
        assert trace.log_prob == pytest.approx(float(logp.sum()), abs=1e-4)


def test_beam_search_writes_transformers_beam_caption_with_its_attention(saved):
    kind, folder = saved
    model = engine.load(str(folder))
    trace = model.adapter.trace(model, _picture(3), beam=2)
    pixels = model.adapter.pixel_values(model, _picture(3))
    ref = _eager(kind, folder)
    with torch.no_grad():
        out = ref.generate(
            pixel_values=pixels, do_sample=False, num_beams=2, max_new_tokens=model.adapter.max_words(model.module)
        )
    written = out[0, 1:].tolist()
    assert list(trace.words.ids) == written[: len(trace.words.ids)] and trace.beam == 2
    ids = torch.tensor([list(trace.cross.tokens.ids)])
    for layer, expected in enumerate(_eager_cross(kind, ref, pixels, ids)):
        np.testing.assert_allclose(trace.weights(layer), expected, atol=1e-5)


def test_the_picture_is_what_the_processor_made(saved):
    _kind, folder = saved
    model = engine.load(str(folder))
    trace = model.adapter.trace(model, _picture(0))
    pixels = model.adapter.pixel_values(model, _picture(0))[0].permute(1, 2, 0).numpy()
    mean, std = np.array([0.4, 0.5, 0.6]), np.array([0.2, 0.3, 0.25])  # the helpers' processor
    np.testing.assert_allclose(trace.image, np.clip(pixels * std + mean, 0, 1), atol=1e-5)
    assert trace.image.shape == (32, 32, 3) and trace.patch_size == 8


def test_an_offline_hub_id_is_a_clear_message(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError, match="not downloaded on this machine and the Hub is switched off"):
        engine.load("Salesforce/blip-not-a-real-captioner-xyz")


def test_other_blip_heads_and_decoders_are_refused_with_a_message(tmp_path, saved):
    kind, folder = saved
    copy = Path(shutil.copytree(folder, tmp_path / "copy"))
    config = json.loads((copy / "config.json").read_text())
    if kind == "blip":
        config["architectures"] = ["BlipForQuestionAnswering"]
        match = "only BLIP captioners"
    else:
        config["decoder"]["model_type"] = "bert"
        match = "a GPT-2 decoder"
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelUnavailableError, match=match):
        engine.load(str(copy))
