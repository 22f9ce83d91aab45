"""The scene captioner (issue 22, 1): generated scenes, the model's attention against a float64 recomputation
from the shipped weights, decoding, BLEU-4, and the card's figures re-measured on the held-out scenes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

import engine
from engine.corpora.scenes import COLOURS, SHAPES, make_scene, make_scenes, parse_caption, relation_of
from engine.families.captioner import Captioner, CaptionerConfig, beam_search, greedy_decode, to_tensor
from engine.records import EmptyInputError
from engine.registry import CHECKPOINTS, own_checkpoints
from engine.traces import Trace
from engine.traces.caption import CaptionTrace
from engine.training.caption_metrics import bleu4, cells_in_box
from engine.vocab import BOS_ID, EOS_ID

NAME = "scene-captioner"


# ---- generated scenes ------------------------------------------------------------------------------


def test_captions_parse_back_to_the_objects_drawn() -> None:
    scenes = make_scenes(300, seed=5)
    assert {len(s.objects) for s in scenes} == {1, 2}
    for scene in scenes:
        objects, relation = parse_caption(scene.caption)
        assert objects == tuple((o.size, o.colour, o.shape) for o in scene.objects)
        assert relation == scene.relation
        if relation is not None:  # the relation is what the true boxes say
            assert relation == relation_of(scene.objects[0].box, scene.objects[1].box)
            sizes = [o.size for o in scene.objects]  # one right order: large first, else above / left of
            assert sizes != ["small", "large"] and (sizes[0] != sizes[1] or relation in ("above", "left of"))


def test_boxes_hold_the_painted_pixels_and_the_same_seed_gives_the_same_scenes() -> None:
    scene = next(s for s in make_scenes(50, seed=1) if len(s.objects) == 1)
    obj = scene.objects[0]
    top, left, bottom, right = obj.box
    colour = np.asarray(COLOURS[obj.colour])
    near = np.abs(scene.image - colour).max(axis=-1) < 0.08  # (S, S): pixels of the object's colour
    rows, cols = np.nonzero(near)
    assert (rows.min(), cols.min(), rows.max(), cols.max()) == (top, left, bottom, right)
    again = make_scenes(50, seed=1)
    assert all(np.array_equal(a.image, b.image) and a.caption == b.caption for a, b in zip(make_scenes(50, 1), again))


def test_parse_refuses_what_the_grammar_cannot_say() -> None:
    for bad in [
        "a red small circle",
        "a small red circle near a blue square",
        "a small red circle above",
        "a small red circle left a large blue square",
        "a small red hexagon",
    ]:
        with pytest.raises(ValueError, match="not a caption"):
            parse_caption(bad)
    assert parse_caption("a large blue square right of a small red triangle")[1] == "right of"


# ---- BLEU-4 ----------------------------------------------------------------------------------------


def test_bleu4_on_a_hand_worked_example() -> None:
    """cand 'a small red circle above a blue square' (8 words), ref with 'large' before 'blue' (9 words):
    p1 = 8/8, p2 = 6/7 ('a blue' is not in the reference), p3 = 4/6, p4 = 3/5; c < r: BP = e^(1 − 9/8)."""
    cand = "a small red circle above a blue square".split()
    ref = "a small red circle above a large blue square".split()
    assert bleu4([cand], [ref]) == pytest.approx(math.exp(-1 / 8) * (1 * 6 / 7 * 4 / 6 * 3 / 5) ** 0.25, abs=1e-12)
    assert bleu4([cand], [ref]) == pytest.approx(0.67529, abs=1e-5)
    assert bleu4([ref], [ref]) == 1.0
    assert bleu4([["a", "b", "c"]], [["a", "b", "c", "d"]]) == 0.0  # no 4-gram at all
    # corpus level: counts are summed over captions before dividing (not a mean of sentence scores)
    pair = bleu4([cand, ref], [ref, ref])
    expected = math.exp(1 - 18 / 17) * (17 / 17 * 14 / 15 * 11 / 13 * 9 / 11) ** 0.25
    assert pair == pytest.approx(expected, abs=1e-12)


def test_cells_in_box_uses_cell_centres() -> None:
    inside = cells_in_box((0, 0, 7, 7), grid=8, image_size=64).reshape(8, 8)  # the top-left 8×8 pixels
    assert inside.sum() == 1 and inside[0, 0]
    assert cells_in_box((0, 0, 63, 63), 8, 64).all()


# ---- the shipped checkpoint ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model():
    return engine.load(NAME, device="cpu")


@pytest.fixture(scope="module")
def weights() -> dict[str, np.ndarray]:
    return {k: v.astype(np.float64) for k, v in load_file(str(CHECKPOINTS / f"{NAME}.safetensors")).items()}


def test_listed_and_loaded_through_the_family_table(model) -> None:
    spec, kind = own_checkpoints()[NAME]
    assert kind == "captioner" and spec.family == "captioner" and spec.offline
    assert NAME in {m.id for m in engine.list_models()}
    trace = engine.trace(model, make_scenes(1, seed=3)[0].image)
    assert isinstance(trace, CaptionTrace) and isinstance(trace, Trace) and trace.family == "captioner"
    assert trace.alphas.shape == (len(trace.words), 8, 8) and trace.betas.shape == (len(trace.words),)
    with pytest.raises(EmptyInputError, match="64×64"):
        engine.trace(model, np.zeros((8, 8)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def test_attention_equals_a_float64_recomputation_from_the_checkpoint(model, weights) -> None:
    """From the encoder's grid a(i) only, run the decoder again in float64 numpy with the safetensors
    weights (LSTM gates in PyTorch's i, f, g, o order): every word, α map and β equals the trace's."""
    from engine.capture import capture

    w = weights
    scene = make_scenes(4, seed=11)[3]
    trace = engine.trace(model, scene.image)
    with torch.no_grad(), capture(model.module, names=["encoder.hook_grid"]) as acts:
        model.module.encode(to_tensor(scene.image))
    a = acts["encoder.hook_grid"][0].double().numpy()  # (L², d_feat)
    mean = a.mean(axis=0)
    h = np.tanh(w["decoder.init_h.weight"] @ mean + w["decoder.init_h.bias"])
    c = np.tanh(w["decoder.init_c.weight"] @ mean + w["decoder.init_c.bias"])
    keys = a @ w["decoder.attn.u.weight"].T  # (L², d_attn)
    y = BOS_ID
    for t, word in enumerate(trace.words.ids):
        energies = (
            np.tanh(w["decoder.attn.w.weight"] @ h + w["decoder.attn.w.bias"] + keys) @ w["decoder.attn.v.weight"][0]
        )
        alpha = np.exp(energies - energies.max())
        alpha /= alpha.sum()
        beta = _sigmoid(w["decoder.f_beta.weight"][0] @ h + w["decoder.f_beta.bias"][0])
        np.testing.assert_allclose(trace.alphas[t].ravel(), alpha, atol=2e-6)
        assert trace.alphas[t].sum() == pytest.approx(1.0, abs=1e-5)
        assert trace.betas[t] == pytest.approx(beta, abs=2e-6)
        z = beta * alpha @ a
        e = w["decoder.embed.weight"][y]
        gates = (
            w["decoder.cell.weight_ih"] @ np.concatenate([e, z])
            + w["decoder.cell.bias_ih"]
            + w["decoder.cell.weight_hh"] @ h
            + w["decoder.cell.bias_hh"]
        )
        i, f, g, o = np.split(gates, 4)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        hidden = np.tanh(e + w["decoder.l_h.weight"] @ h + w["decoder.l_h.bias"] + w["decoder.l_z.weight"] @ z)
        logits = w["decoder.out.weight"] @ hidden + w["decoder.out.bias"]
        assert int(np.argmax(logits)) == word
        y = word
    assert trace.words.ids[-1] == EOS_ID


def test_greedy_is_the_argmax_of_every_step(model) -> None:
    module: Captioner = model.module
    images = to_tensor(np.stack([s.image for s in make_scenes(6, seed=7)]))
    captions = greedy_decode(module, images)
    with torch.no_grad():
        grid, keys = module.encode(images)
        for b, cap in enumerate(captions):
            h, c = module.decoder.start(grid[b : b + 1])
            y = torch.tensor([BOS_ID])
            for t, chosen in enumerate(cap.ids):
                s = module.decoder.step(y, h, c, grid[b : b + 1], keys[b : b + 1])
                assert int(s.logits[0].argmax()) == chosen
                np.testing.assert_allclose(cap.alphas[t], s.alpha[0].numpy(), atol=1e-6)
                y, h, c = torch.tensor([chosen]), s.h, s.c
            assert cap.ids[-1] == EOS_ID


def test_beam_search_scores_are_the_captions_own_log_probabilities(model) -> None:
    module: Captioner = model.module
    scene = make_scenes(3, seed=2)[2]
    image = to_tensor(scene.image)
    best = beam_search(module, image[0], beam=3)
    assert best[0].ids == beam_search(module, image[0], beam=3)[0].ids
    assert [c.log_prob for c in best] == sorted((c.log_prob for c in best), reverse=True)
    greedy = greedy_decode(module, image)[0]
    assert beam_search(module, image[0], beam=1)[0].ids == greedy.ids
    device = next(module.parameters()).device

    def teacher_forced(ids: list[int]) -> tuple[float, np.ndarray]:
        """The caption's log-probability (float64 softmax) and α maps from one teacher-forced pass."""
        words_in = torch.tensor([[BOS_ID, *ids[:-1]]], device=device)
        with torch.no_grad():
            logits, alphas = module(image.to(device), words_in)
        logp = torch.log_softmax(logits[0].double(), -1)[
            torch.arange(len(ids), device=device), torch.tensor(ids, device=device)
        ]
        return float(logp.sum()), alphas[0].cpu().numpy()

    for cap in best:  # teacher-forced re-scoring of each hypothesis gives its score
        log_prob, alphas = teacher_forced(cap.ids)
        assert log_prob == pytest.approx(cap.log_prob, abs=1e-4)
        np.testing.assert_allclose(alphas, cap.alphas, atol=1e-5)
    # the best beam is at least as likely as the greedy caption, both scored by the same teacher-forced pass
    # (beam and greedy each sum float32 log-probabilities in their own batch shape and order: the same caption
    # can differ there by more than 1e-6 from one CPU to another)
    assert teacher_forced(best[0].ids)[0] >= teacher_forced(greedy.ids)[0] - 1e-6


def test_the_cards_figures_are_re_measured_on_the_held_out_scenes(model) -> None:
    from engine.training.recipes.captioner import card_metrics, held_out_scenes

    card = json.loads((CHECKPOINTS / f"{NAME}.json").read_text())["metadata"]["final_metrics"]
    measured = card_metrics(model.module, model.tokenizer, held_out_scenes())
    for key, value in measured.items():  # a tie broken the other way on another CPU may move one caption
        assert card[key] == pytest.approx(value, abs=0 if isinstance(value, int) else 2.1e-3), key
    baseline = card["localisation: uniform-attention baseline (cells inside the box)"]
    assert card["localisation: shape-noun attention peak inside its object's box"] > 2 * baseline


def test_held_out_scenes_are_not_a_training_seed() -> None:
    from engine.training.recipes.captioner import HELD_OUT_SEED

    rng = np.random.default_rng(0)  # the shipped run's training stream
    training = {make_scene(rng).image.tobytes() for _ in range(200)}
    assert HELD_OUT_SEED != 0 and not training & {s.image.tobytes() for s in make_scenes(200, HELD_OUT_SEED)}


def test_config_and_shapes() -> None:
    with pytest.raises(ValueError, match="power of two"):
        CaptionerConfig(image_size=64, grid=6)
    cfg = CaptionerConfig(vocab_size=20, image_size=32, grid=4, channels=8, d_feat=16, d_emb=8, d_dec=16, d_attn=8)
    logits, alphas = Captioner(cfg)(torch.rand(2, 3, 32, 32), torch.tensor([[BOS_ID, 5, 6], [BOS_ID, 7, 8]]))
    assert logits.shape == (2, 3, 20) and alphas.shape == (2, 3, 16)
    torch.testing.assert_close(alphas.sum(-1), torch.ones(2, 3))
    assert set(SHAPES) == {"circle", "square", "triangle"}
